"""GASP's loop: a generator language model, latent BO over its samples, ORPO updates.

Implemented from the project's specification (``specs/gasp.md``) and issue 36 only; no
code of the GPL reference was read or reused.
"""

import copy
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from sklearn_cispa.language import orpo_update, sample_continuations
from sklearn_cispa.redteam._search import (
    LatentBOSuffixSearch,
    _as_candidates,
    _median_distance,
)
from sklearn_cispa.utils import spawn_seeds

SUCCESS_THRESHOLD = 1.0  # GASP's judge: a score at most 1 is a success
_ORPO_BATCH = 16


def _unwrap(generator):
    """The language model inside a ``FrozenEstimator`` (or the generator itself)."""
    inner = getattr(generator, "estimator", None)
    if inner is not None and type(generator).__name__ == "FrozenEstimator":
        return inner
    return generator


def _check_prompts(prompts):
    """List of prompt strings (a 2-D numeric array: one prompt per row, as its values)."""
    if not isinstance(prompts, (str, np.ndarray)) and not hasattr(prompts, "__len__"):
        try:
            prompts = list(prompts)
        except TypeError:
            raise TypeError(
                f"prompts must be a list of str, got {type(prompts).__name__}"
            ) from None
    return _as_candidates(prompts, name="prompts")


def _clean(samples):
    """Stripped, non-empty, de-duplicated samples in their order."""
    out, seen = [], set()
    for s in samples:
        s = " ".join(s.split())
        if s and s not in seen:
            seen.add(s)
            out.append(s)
    return out


class _CountingObjective:
    """The user's objective, counting its calls (the search validates the scores)."""

    def __init__(self, objective):
        self.objective = objective
        self.n_calls = 0

    def __call__(self, prompt):
        self.n_calls += 1
        return self.objective(prompt)


def _surrogate_ranking(est, ranked):
    """The queried ``(score, suffix)`` pairs and the unqueried candidates at the GP mean.

    The GP is fitted to the queried scores in the search's latent space (the search's
    ``gp``, default :class:`MaternGP` at the median latent distance); all candidates
    ranked ascending, queried first on ties. Without a latent space, ``ranked``.
    """
    Z = getattr(est, "latent_", None)
    queried = getattr(est, "queried_", None)
    if (
        Z is None
        or queried is None
        or not hasattr(est, "_fit_surrogate")
        or not queried.any()
        or queried.all()
    ):
        return ranked
    done = np.flatnonzero(queried)
    free = np.flatnonzero(~queried)
    y = np.asarray([est.scores_[est.candidates_[i]] for i in done], float)
    model = est._fit_surrogate(Z[done], y, _median_distance(Z))
    mu = np.asarray(model.predict(Z[free]), float).ravel()
    pool = [(s, 0, c) for s, c in ranked]
    pool += [(float(m), 1, est.candidates_[i]) for m, i in zip(mu, free)]
    pool.sort(key=lambda t: (t[0], t[1]))
    return [(s, c) for s, _, c in pool]


class GASPSuffixGenerator(BaseEstimator):
    """GASP's loop: sample suffixes from a generator LM, search them, ORPO-train the LM.

    Each of ``n_rounds`` rounds, for every goal prompt: ``n_candidates`` suffixes are
    sampled from the generator (a fitted
    :class:`~sklearn_cispa.language.TransformerLanguageModel` continuing the prompt),
    the ``search`` (latent Bayesian optimisation by default) chooses ``n_queries`` of
    them to send to the user's ``objective`` (lower is better; a score at most 1 is a
    success, GASP's judge convention), and the scored suffixes give preference pairs
    (a lower-scored suffix preferred to a higher-scored one of the same prompt) on which
    the generator takes ORPO steps. For authorised evaluations of systems you may test;
    the library ships no prompts, targets, judges or pretrained generators.

    Parameters
    ----------
    generator : TransformerLanguageModel
        A fitted language model (or a ``sklearn.frozen.FrozenEstimator`` wrapping one,
        which survives ``clone``). It is copied: ``generator_`` is the trained copy.
    search : LatentBOSuffixSearch, RandomSubsetSearch or None, default=None
        The search that chooses which candidates to query; its ``objective``,
        ``n_calls`` and ``random_state`` are replaced by ``fit``'s objective,
        ``n_queries`` and a child seed. None: ``LatentBOSuffixSearch()`` with its
        defaults.
    n_rounds : int, default=5
        Rounds of generate, search and update.
    n_candidates : int, default=64
        Suffixes sampled per prompt and round (fewer after removing repeats and empty
        samples).
    n_queries : int, default=8
        Objective calls per prompt and round.
    orpo_lambda : float, default=0.1
        Weight of ORPO's odds-ratio term (0: supervised fine-tuning on the preferred
        suffixes only).
    lr : float, default=1e-4
        AdamW learning rate of the ORPO steps.
    max_new_tokens : int, default=24
        Most tokens per sampled suffix.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling, the searches and the ORPO steps.
    verbose : int, default=0
        Print one line per round when positive.
    orpo_epochs : int, default=2
        Passes over each round's preference pairs: the round's update is
        ``orpo_epochs * ceil(n_pairs / 16)`` AdamW steps on batches of 16 pairs.
    pairs : {"queried", "ranked"}, default="queried"
        Which suffixes make each prompt's preference pairs. "queried": the queried
        suffixes ranked by score, the i-th best preferred to the i-th worst when their
        scores differ. "ranked": all the round's candidates, the queried ones at their
        scores and the unqueried ones at the posterior mean of a GP fitted to the
        queried scores in the search's latent space (as the search's own GP: its
        ``gp``, default :class:`MaternGP` at the median latent distance), ranked
        ascending (ties: queried first), the i-th best preferred to the i-th worst when
        their values differ. Needs a search with a latent space
        (:class:`LatentBOSuffixSearch`); with one without (``latent_`` None, as
        :class:`RandomSubsetSearch`) it falls back to "queried".

    Attributes
    ----------
    generator_ : TransformerLanguageModel
        The trained copy of the generator.
    history_ : list of dict
        Per round: ``round``, ``n_queries`` (objective calls in the round),
        ``best_score`` (lowest score of the round), ``asr`` (fraction of prompts with a
        success among the round's queries: ASR@n_queries), ``n_pairs``, ``orpo_loss``
        (mean loss of the round's steps; NaN without pairs), ``margin_before`` and
        ``margin_after`` (mean log-odds margin of the pairs around the update).
    scores_ : list of list of float
        Per prompt, every score obtained, in query order over the rounds.
    best_suffixes_ : list of str or None
        Per prompt, the best suffix queried.
    n_queries_ : int
        Objective calls in all.

    Notes
    -----
    Departures from the paper (Basani and Zhang, NeurIPS 2025): the generator emits one
    suffix per sample rather than a list, so the preference pairs are suffixes (the
    i-th best queried suffix of a prompt preferred to its i-th worst, when their scores
    differ) instead of re-ranked lists; each round's update is ``orpo_epochs *
    ceil(n_pairs / 16)`` AdamW steps on batches of 16 pairs (no LoRA; the whole small model is
    trained); sampling uses temperature 1 without top-k; suffixes do not accumulate
    across rounds (every round continues the goal itself). Suffixes are the sampled
    continuations with whitespace collapsed; repeats and empty samples are dropped
    before the search. The objective sees ``goal + " " + suffix``. An objective that
    raises, or returns NaN, infinity or a non-number, stops ``fit`` with an error that
    names the candidate (from the search). ``fit(prompts)`` without an objective uses the
    search's own (so that the loop runs in scikit-learn's tooling, which calls
    ``fit(X)``), and a 2-D numeric ``prompts`` array is read as one prompt per row,
    written as its values, as the searches read candidates.

    The search's budget against the candidate pool matters (issue 36): with the
    search's 2 random initial points and a binary objective the GP is flat until a
    success, so LBO's gain is the neighbours of a success; with 12 queries per goal and
    round (2 rounds, keyword in 1.5% of the generator's documents) LBO found 1.7 times
    as many successes in training as random queries on the same samples, and the
    ORPO updates on those pairs gave ASR@10 0.903 against 0.806 (80 held-out seeds;
    user guide, "The paper's ablation at CPU size").

    ``pairs="ranked"`` is closer to the paper, whose ORPO target is the whole list
    LBO ranks (queried candidates ascending, then the unqueried ones); the paper gives
    the unqueried ones a constant score in generation order, this option ranks them by
    the GP's posterior mean, which is a departure. It adds pairs that only a search
    with a surrogate can give (no extra objective calls). On the class keyword target of
    the user guide's loop ablation it lowered the full loop's ASR@10 from 0.338 to 0.188
    (seeds 0-39, the search with 2 random initial queries), so "queried" stays the default.

    Examples
    --------
    >>> from sklearn_cispa.language import TransformerLanguageModel
    >>> from sklearn_cispa.redteam import (GASPSuffixGenerator, ToyKeywordTarget,
    ...                                    ToyRubricJudge)
    >>> docs = ["draw a cat in teal light", "draw a cat in grey light"] * 8
    >>> lm = TransformerLanguageModel(
    ...     "gpt2", config=dict(n_layer=1, n_embd=32, n_head=2), block_size=32,
    ...     max_steps=60, batch_size=8, lr=3e-3, random_state=0).fit(docs)
    >>> judge, target = ToyRubricJudge(), ToyKeywordTarget()
    >>> def objective(prompt):
    ...     return judge(prompt, target(prompt))
    >>> gasp = GASPSuffixGenerator(lm, n_rounds=1, n_candidates=8, n_queries=3,
    ...                            max_new_tokens=12, random_state=0)
    >>> gasp = gasp.fit(["draw a cat"], objective)
    >>> gasp.n_queries_ <= 3, len(gasp.generate(["draw a dog"], k=2)[0]) <= 2
    (True, True)
    """

    _parameter_constraints = {
        "generator": [HasMethods(["encode", "decode"])],
        "search": [HasMethods(["fit", "set_params", "get_params"]), None],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "n_queries": [Interval(Integral, 1, None, closed="left")],
        "orpo_lambda": [Interval(Real, 0, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "orpo_epochs": [Interval(Integral, 1, None, closed="left")],
        "pairs": [StrOptions({"queried", "ranked"})],
        "max_new_tokens": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        generator,
        search=None,
        n_rounds=5,
        n_candidates=64,
        n_queries=8,
        orpo_lambda=0.1,
        lr=1e-4,
        max_new_tokens=24,
        random_state=None,
        verbose=0,
        orpo_epochs=2,
        pairs="queried",
    ):
        self.generator = generator
        self.search = search
        self.n_rounds = n_rounds
        self.n_candidates = n_candidates
        self.n_queries = n_queries
        self.orpo_lambda = orpo_lambda
        self.lr = lr
        self.max_new_tokens = max_new_tokens
        self.random_state = random_state
        self.verbose = verbose
        self.orpo_epochs = orpo_epochs
        self.pairs = pairs

    def _fitted_generator(self):
        lm = _unwrap(self.generator)
        if not hasattr(lm, "model_"):
            raise ValueError(
                "generator must be a fitted TransformerLanguageModel; fit it first (clone() "
                "returns it unfitted: wrap it in sklearn.frozen.FrozenEstimator to keep it "
                "through clone and model selection)"
            )
        return lm

    def _sample(self, lm, prompts, seed):
        contexts = [p + " " for p in prompts]
        raw = sample_continuations(
            lm,
            contexts,
            n_samples=self.n_candidates,
            max_new_tokens=self.max_new_tokens,
            random_state=seed,
        )
        return [_clean(r) for r in raw]

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, prompts, objective=None):
        """Run the loop on goal prompts, querying ``objective``.

        Parameters
        ----------
        prompts : list of str, or array of shape (n_prompts, n_features)
            Goal prompts the suffixes are appended to (a 2-D numeric array is read as
            one prompt per row, written as its values, as the searches read candidates).
        objective : callable or None, default=None
            ``objective(prompt: str) -> float``, lower is better; at most 1 is a success.
            None: the objective of ``search`` (which must then be given).

        Returns
        -------
        self : GASPSuffixGenerator
            The fitted loop.
        """
        prompts = _check_prompts(prompts)
        template = self.search
        if template is not None and "objective" not in template.get_params(deep=False):
            raise TypeError(
                "search must take an objective (LatentBOSuffixSearch or RandomSubsetSearch)"
            )
        if objective is None:
            objective = None if template is None else template.get_params()["objective"]
            if objective is None:
                raise TypeError(
                    "fit needs an objective: pass fit(prompts, objective) or a search "
                    "built with one"
                )
        if not callable(objective):
            raise TypeError(
                f"objective must be a callable prompt -> score, got {type(objective).__name__}"
            )
        lm = copy.deepcopy(self._fitted_generator())
        if template is None:
            template = LatentBOSuffixSearch(objective)
        counting = _CountingObjective(objective)
        round_seeds = spawn_seeds(self.random_state, self.n_rounds + 1)
        self._generate_seed = int(round_seeds[-1])
        scores = [[] for _ in prompts]
        best = [(np.inf, None) for _ in prompts]
        self.history_ = []
        for r in range(self.n_rounds):
            sample_seed, search_seed, orpo_seed = spawn_seeds(round_seeds[r], 3)
            candidates = self._sample(lm, prompts, sample_seed)
            search_seeds = spawn_seeds(search_seed, len(prompts))
            before = counting.n_calls
            pairs, round_best, hits = ([], [], []), np.inf, 0
            for i, (prompt, cands) in enumerate(zip(prompts, candidates)):
                if not cands:
                    raise ValueError(
                        f"the generator produced no non-empty suffix for prompts[{i}] in "
                        f"round {r} ({self.n_candidates} samples): train it on documents "
                        "that continue such prompts, or raise max_new_tokens"
                    )
                est = clone(template).set_params(
                    objective=counting, n_calls=self.n_queries, random_state=int(search_seeds[i])
                )
                est.fit(cands, goal=prompt)
                queried = [(est.scores_[c], c) for c in est.scores_]
                scores[i].extend(s for s, _ in queried)
                ranked = sorted(queried, key=lambda t: t[0])
                if ranked and ranked[0][0] < best[i][0]:
                    best[i] = ranked[0]
                round_best = min(round_best, ranked[0][0]) if ranked else round_best
                hits += bool(ranked and ranked[0][0] <= SUCCESS_THRESHOLD)
                pool = ranked
                if self.pairs == "ranked":
                    pool = _surrogate_ranking(est, ranked)
                for j in range(len(pool) // 2):
                    good, bad = pool[j], pool[-1 - j]
                    if good[0] < bad[0]:
                        pairs[0].append(prompt + " ")
                        pairs[1].append(good[1])
                        pairs[2].append(bad[1])
            record = {
                "round": r,
                "n_queries": counting.n_calls - before,
                "best_score": float(round_best),
                "asr": hits / len(prompts),
                "n_pairs": len(pairs[0]),
                "orpo_loss": float("nan"),
                "margin_before": float("nan"),
                "margin_after": float("nan"),
            }
            if pairs[0]:
                n_steps = int(self.orpo_epochs) * int(np.ceil(len(pairs[0]) / _ORPO_BATCH))
                info = orpo_update(
                    lm,
                    *pairs,
                    beta=float(self.orpo_lambda),
                    lr=float(self.lr),
                    n_steps=n_steps,
                    batch_size=_ORPO_BATCH,
                    random_state=int(orpo_seed),
                )
                record.update(
                    orpo_loss=float(np.mean(info["loss"])),
                    margin_before=info["margin_before"],
                    margin_after=info["margin_after"],
                )
            self.history_.append(record)
            if self.verbose:
                print(
                    f"[GASPSuffixGenerator] round {r + 1}/{self.n_rounds}: "
                    f"best {record['best_score']:.3f}, ASR {record['asr']:.2f}, "
                    f"{record['n_pairs']} pairs, ORPO loss {record['orpo_loss']:.4f}"
                )
        self.generator_ = lm
        self.scores_ = scores
        self.best_suffixes_ = [c for _, c in best]
        self.n_queries_ = counting.n_calls
        return self

    def generate(self, prompts, k=10):
        """Up to ``k`` distinct suffixes per prompt from the trained generator.

        ``max(n_candidates, 2 k)`` continuations are sampled per prompt (seeded from
        ``random_state``, so repeated calls agree); the first ``k`` distinct non-empty
        ones are returned, in sampling order.

        Parameters
        ----------
        prompts : list of str
            Goal prompts.
        k : int, default=10
            Suffixes per prompt.

        Returns
        -------
        suffixes : list of list of str
            ``suffixes[i]`` holds at most ``k`` suffixes for ``prompts[i]``.
        """
        check_is_fitted(self)
        prompts = _check_prompts(prompts)
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"k must be an integer >= 1; got {k!r}")
        contexts = [p + " " for p in prompts]
        raw = sample_continuations(
            self.generator_,
            contexts,
            n_samples=max(self.n_candidates, 2 * int(k)),
            max_new_tokens=self.max_new_tokens,
            random_state=self._generate_seed,
        )
        return [_clean(r)[:k] for r in raw]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.target_tags.required = False
        tags.non_deterministic = False
        return tags
