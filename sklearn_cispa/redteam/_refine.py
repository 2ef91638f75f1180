"""GASP's outer loop, ORPO preference data and loss, and ASR@k (spec 3.4, 3.5)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import HasMethods, Interval, validate_params

from sklearn_cispa.redteam._search import _chosen_string
from sklearn_cispa.utils import spawn_seeds


@validate_params(
    {
        "goal": [str],
        "generate": [callable],
        "search": [HasMethods(["fit", "get_params", "set_params"])],
        "max_rounds": [Interval(Integral, 1, None, closed="left")],
        "success_threshold": [Interval(Real, None, None, closed="both")],
    },
    prefer_skip_nested_validation=True,
)
def iterative_refinement(goal, generate, search, max_rounds=10, success_threshold=1.0):
    """GASP's outer loop: generate suffixes, search them, append the best, repeat.

    Each round generates candidates for the current prompt, fits a clone of ``search``
    on them with the current prompt as goal (with its own child seed drawn from the
    search's ``random_state``; the reference reuses seed 42), and makes the best prompt
    the next round's prompt, so suffixes accumulate. It stops after ``max_rounds`` or
    once a best score is strictly below ``success_threshold`` (the reference's rule).

    Parameters
    ----------
    goal : str
        Starting prompt.
    generate : callable
        ``generate(prompt) -> list of str``: the user's candidate generator. A single
        ``str`` raises a ``TypeError`` (it would otherwise be split into characters).
    search : LatentBOSuffixSearch or RandomSubsetSearch
        Unfitted search, cloned every round.
    max_rounds : int, default=10
        Maximum number of rounds.
    success_threshold : float, default=1.0
        Stop once a round's best score is below this value.

    Returns
    -------
    result : dict
        ``rounds`` (one record per round: ``round``, ``prompt``, ``candidates``,
        ``raw_output`` (the generated list written ``" | c1 | c2 | ... |"``), ``ranking``,
        ``queried`` (flags aligned with ``ranking``), ``best_prompt``, ``best_score``,
        ``n_queries``), ``best_prompt``, ``best_score``, ``success`` and ``n_queries``
        (total objective calls).

    Examples
    --------
    >>> from sklearn_cispa.redteam import (RandomSubsetSearch, ToyKeywordTarget,
    ...                                    ToyRubricJudge, iterative_refinement)
    >>> judge, target = ToyRubricJudge(), ToyKeywordTarget()
    >>> def objective(prompt):
    ...     return judge(prompt, target(prompt))
    >>> def generate(prompt):
    ...     return ["in grey", "in amber", "in blue"]
    >>> out = iterative_refinement("paint the wall", generate,
    ...                            RandomSubsetSearch(objective, n_calls=3, random_state=0))
    >>> out["best_prompt"], out["success"], len(out["rounds"])
    ('paint the wall in amber', True, 1)
    """
    params = search.get_params(deep=False)
    seeds = spawn_seeds(params.get("random_state"), max_rounds)
    prompt, rounds, total = goal, [], 0
    best_prompt, best_score = goal, np.inf
    for r in range(max_rounds):
        generated = generate(prompt)
        if isinstance(generated, str):
            # list() would split it into single characters and search those
            raise TypeError(
                f"generate returned a single str in round {r} ({generated[:60]!r}); it must "
                "return a list of candidate strings (split a raw ' | c1 | c2 |' output "
                "yourself)."
            )
        candidates = list(generated)
        est = clone(search)
        if "random_state" in params:
            est.set_params(random_state=seeds[r])
        est.fit(candidates, goal=prompt)
        queried = dict(zip(est.candidates_, est.queried_))
        rounds.append({
            "round": r,
            "prompt": prompt,
            "candidates": candidates,
            "raw_output": " | " + " | ".join(candidates) + " |",
            "ranking": list(est.ranking_),
            "queried": [bool(queried[c]) for c, _ in est.ranking_],
            "best_prompt": est.best_prompt_,
            "best_score": est.best_score_,
            "n_queries": est.n_queries_,
        })
        total += est.n_queries_
        if est.best_prompt_ is not None and est.best_score_ < best_score:
            best_prompt, best_score = est.best_prompt_, est.best_score_
        if est.best_prompt_ is not None:
            prompt = est.best_prompt_
        if est.best_score_ < success_threshold:
            break
    return {
        "rounds": rounds,
        "best_prompt": best_prompt,
        "best_score": float(best_score),
        "success": bool(best_score < success_threshold),
        "n_queries": total,
    }


@validate_params(
    {"records": [list], "include_unqueried": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def make_preference_pairs(records, include_unqueried=True):
    """ORPO rows from search records: the re-ranked list is chosen, the raw list rejected.

    Parameters
    ----------
    records : list of dict
        Each with ``prompt``, ``raw_output`` (the generator's output) and ``ranking``
        (``(candidate, score)`` pairs, ascending, as ``ranking_``); optional ``queried``
        (flags aligned with ``ranking``; missing means every candidate was queried), as
        written by :func:`iterative_refinement`.
    include_unqueried : bool, default=True
        Append the unqueried candidates (in their ranking order, after the queried
        ones); False keeps only queried candidates.

    Returns
    -------
    pairs : list of dict
        One ``{"prompt", "chosen", "rejected"}`` per record, with ``chosen`` written
        ``" | c1 | c2 | ... |"`` best first.

    Examples
    --------
    >>> from sklearn_cispa.redteam import make_preference_pairs
    >>> record = {"prompt": "goal", "raw_output": " | a | b | c |",
    ...           "ranking": [("b", 0.5), ("a", 1.5), ("c", 2.0)],
    ...           "queried": [True, True, False]}
    >>> make_preference_pairs([record])[0]["chosen"]
    ' | b | a | c |'
    >>> make_preference_pairs([record], include_unqueried=False)[0]["chosen"]
    ' | b | a |'
    """
    pairs = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise TypeError(f"records[{i}] must be a dict, got {type(rec).__name__}")
        missing = {"prompt", "raw_output", "ranking"} - set(rec)
        if missing:
            raise ValueError(f"records[{i}] lacks the keys {sorted(missing)}")
        ranking = list(rec["ranking"])
        queried = list(rec.get("queried", [True] * len(ranking)))
        if len(queried) != len(ranking):
            raise ValueError(f"records[{i}]: 'queried' and 'ranking' differ in length")
        done = [j for j in range(len(ranking)) if queried[j]]
        order = sorted(done, key=lambda j: (ranking[j][1], j))
        order += [j for j in range(len(ranking)) if not queried[j]]
        ranking = [ranking[j] for j in order]
        queried = [bool(queried[j]) for j in order]
        if not include_unqueried:
            ranking = [r for r, q in zip(ranking, queried) if q]
            queried = [True] * len(ranking)
        pairs.append({
            "prompt": rec["prompt"],
            "chosen": _chosen_string(ranking, queried),
            "rejected": rec["raw_output"],
        })
    return pairs


def _as_tensor(x, torch, like=None):
    if isinstance(x, torch.Tensor):
        return x if like is None else x.to(like.dtype)
    dtype = torch.float64 if like is None else like.dtype
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=dtype)


def log_odds(mean_logp, torch):
    """log(P / (1 - P)) with P = exp(mean log-probability), computed stably."""
    tiny = torch.finfo(mean_logp.dtype).tiny
    ell = torch.clamp(mean_logp, max=-tiny)
    return ell - torch.log(-torch.expm1(ell))


@validate_params(
    {
        "chosen_logp": ["array-like", Real],
        "rejected_logp": ["array-like", Real],
        "chosen_len": ["array-like", Real],
        "rejected_len": ["array-like", Real],
        "chosen_nll": ["array-like", Real],
        "beta": [Interval(Real, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def orpo_loss(chosen_logp, rejected_logp, chosen_len, rejected_len, chosen_nll, beta=0.25):
    """ORPO objective (Hong et al., 2024): NLL(chosen) + beta * odds-ratio loss.

    With P(y) = exp(mean token log-probability of y) (the length-normalised
    likelihood), ``L_OR = -log sigmoid(log odds(chosen) - log odds(rejected))`` and
    ``log odds = l - log(-expm1(l))`` for the mean log-probability l (clamped just
    below 0). The batch mean of ``chosen_nll + beta * L_OR`` is returned. NaN in any
    input raises a ``ValueError``; a log-probability of ``-inf`` gives an infinite loss.

    Parameters
    ----------
    chosen_logp : tensor or array-like of shape (n,)
        Summed token log-probabilities of the chosen sequences (at most 0).
    rejected_logp : tensor or array-like of shape (n,)
        Summed token log-probabilities of the rejected sequences (at most 0).
    chosen_len : tensor or array-like of shape (n,)
        Token counts of the chosen sequences (positive).
    rejected_len : tensor or array-like of shape (n,)
        Token counts of the rejected sequences (positive).
    chosen_nll : tensor or array-like of shape (n,) or scalar
        Negative log-likelihood (language-model loss) of the chosen sequences.
    beta : float, default=0.25
        Weight of the odds-ratio term (the reference uses 0.25).

    Returns
    -------
    loss : torch.Tensor
        Scalar; differentiable with respect to tensor inputs.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.redteam import orpo_loss
    >>> loss = orpo_loss(torch.tensor([-2.0]), torch.tensor([-6.0]), torch.tensor([4.0]),
    ...                  torch.tensor([4.0]), torch.tensor([0.5]))
    >>> round(float(loss), 4)
    0.5427
    """
    import torch

    c_logp = _as_tensor(chosen_logp, torch)
    r_logp = _as_tensor(rejected_logp, torch, like=c_logp)
    c_len = _as_tensor(chosen_len, torch, like=c_logp)
    r_len = _as_tensor(rejected_len, torch, like=c_logp)
    nll = _as_tensor(chosen_nll, torch, like=c_logp)
    named = (("chosen_logp", c_logp), ("rejected_logp", r_logp),
             ("chosen_len", c_len), ("rejected_len", r_len), ("chosen_nll", nll))
    if c_logp.dim() > 1:
        raise ValueError(f"chosen_logp must be 1-D (one value per pair); got shape "
                         f"{tuple(c_logp.shape)}")
    for name, t in named[1:]:
        # one value per (chosen, rejected) pair: no broadcasting (chosen_nll may be a
        # scalar, the batch's language-model loss)
        if t.shape != c_logp.shape and not (name == "chosen_nll" and t.dim() == 0):
            raise ValueError(
                f"{name} has shape {tuple(t.shape)} but chosen_logp has shape "
                f"{tuple(c_logp.shape)}: pass one value per (chosen, rejected) pair"
            )
    for name, t in named:
        if bool(torch.any(torch.isnan(t.detach()))):
            raise ValueError(f"{name} contains NaN")
    for name, t in (("chosen_logp", c_logp), ("rejected_logp", r_logp)):
        if bool(torch.any(t.detach() > 0)):
            raise ValueError(f"{name} must be log-probabilities (at most 0)")
    for name, t in (("chosen_len", c_len), ("rejected_len", r_len)):
        if bool(torch.any(t.detach() <= 0)):
            raise ValueError(f"{name} must be positive token counts")
    margin = log_odds(c_logp / c_len, torch) - log_odds(r_logp / r_len, torch)
    l_or = -torch.nn.functional.logsigmoid(margin)
    return torch.mean(nll + beta * l_or)


@validate_params(
    {
        "score_sequences": ["array-like"],
        "k": [Interval(Integral, 1, None, closed="left")],
        "threshold": [Interval(Real, None, None, closed="both")],
    },
    prefer_skip_nested_validation=True,
)
def attack_success_at_k(score_sequences, k, threshold=1.0):
    """ASR@k: fraction of goals whose best score within the first k queries is <= threshold.

    Parameters
    ----------
    score_sequences : list of sequences of float
        One sequence per goal: the scores of its unique queries, in query order (for
        a fitted search, ``[h["score"] for h in history_ if not h["duplicate"]]``).
    k : int
        Query budget per goal.
    threshold : float, default=1.0
        Success threshold (GASP's judge: at most 1).

    Returns
    -------
    asr : float
        In [0, 1]; a goal with no query counts as a failure.

    Examples
    --------
    >>> from sklearn_cispa.redteam import attack_success_at_k
    >>> attack_success_at_k([[2.0, 0.5], [2.0, 2.0, 0.0]], k=2)
    0.5
    """
    seqs = list(score_sequences)
    if not seqs:
        raise ValueError("score_sequences is empty: pass one sequence of scores per goal")
    hits = 0
    for i, seq in enumerate(seqs):
        s = np.asarray(seq, dtype=float).ravel()[:k]
        if np.any(np.isnan(s)):
            raise ValueError(f"score_sequences[{i}] contains NaN")
        hits += bool(s.size and s.min() <= threshold)
    return hits / len(seqs)
