"""Toy-landscape evaluation of the suffix searches, shared by the report row, the
benchmark and the example (issue 22, spec section 6)."""

import numpy as np

from sklearn_cispa.redteam import LatentBOSuffixSearch, RandomSubsetSearch, make_toy_landscape


def landscape_trial(kind, seed, strategy="discrete", **params):
    """One search on the toy landscape of ``seed``; what it found and what it spent.

    ``strategy`` is a ``LatentBOSuffixSearch`` strategy, or "random-subset" for
    :class:`~sklearn_cispa.redteam.RandomSubsetSearch`. Returns a dict with ``best``
    (the best candidate was queried), ``top3`` (one of the best three was), ``calls``
    (unique objective calls), ``duplicates`` and the fitted ``search``.
    """
    candidates, E, objective = make_toy_landscape(kind=kind, random_state=1000 + seed)
    if strategy == "random-subset":
        search = RandomSubsetSearch(objective, random_state=seed, **params).fit(candidates)
    else:
        search = LatentBOSuffixSearch(objective, embedder="precomputed", strategy=strategy,
                                      random_state=seed, **params)
        search.fit(candidates, embeddings=E)
    truth = np.argsort([objective.scores[c] for c in candidates], kind="stable")
    queried = set(search.scores_)
    return {
        "best": candidates[truth[0]] in queried,
        "top3": any(candidates[i] in queried for i in truth[:3]),
        "calls": search.n_queries_,
        "duplicates": search.n_duplicates_,
        "search": search,
    }


def hit_rates(kind, seeds, strategy="discrete", **params):
    """P(best found), P(top-3 hit), mean unique calls and mean duplicates over seeds."""
    trials = [landscape_trial(kind, s, strategy, **params) for s in seeds]
    return {key: float(np.mean([t[key] for t in trials]))
            for key in ("best", "top3", "calls", "duplicates")}
