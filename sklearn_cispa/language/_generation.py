"""Sampling from, scoring continuations of, and preference-training a language model.

Functions over a fitted :class:`~sklearn_cispa.language.TransformerLanguageModel`:
seeded sampling with temperature and top-k, continuation log-likelihoods with or without
gradients, and one ORPO preference update (Hong et al., 2024, "ORPO: Monolithic
Preference Optimization without Reference Model"). The red-teaming field's suffix
generator builds on them; this module knows nothing of it.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, validate_params
from sklearn.utils.validation import check_is_fitted

from sklearn_cispa.language._tokenizer import _pad_rows
from sklearn_cispa.utils import eval_mode, spawn_seeds, torch_rng_context
from sklearn_cispa.utils._torch import check_finite_training

__all__ = ["continuation_log_likelihoods", "log_odds", "orpo_update", "sample_continuations"]


def _check_lm(lm):
    if not (hasattr(lm, "model_") and hasattr(lm, "_adapter")):
        check_is_fitted(lm)
        raise TypeError(f"expected a fitted TransformerLanguageModel, got {type(lm).__name__}")
    check_is_fitted(lm)
    return lm._adapter


def _texts(name, values):
    if isinstance(values, str):
        raise TypeError(f"{name} must be a list of str, got a single str; wrap it in a list")
    values = list(values)
    bad = [type(v).__name__ for v in values if not isinstance(v, str)]
    if bad:
        raise TypeError(f"{name} must be strings; got {bad[0]}")
    return values


def _positive_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _position_limit(lm):
    cfg = lm.model_.config
    limit = getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None)
    return int(limit) if limit else None


def _prefix_ids(lm, adapter, prefix, room):
    head = [adapter.bos] if adapter.bos is not None else []
    ids = head + [int(i) for i in lm.encode(prefix)]
    if not ids:
        raise ValueError("a prefix is empty and the tokenizer has no beginning token")
    return ids[-room:] if room is not None else ids


@validate_params(
    {
        "lm": [HasMethods(["encode", "decode"])],
        "prefixes": [list, tuple],
        "n_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_new_tokens": [Interval(numbers.Integral, 0, None, closed="left")],
        "temperature": [Interval(numbers.Real, 0, None, closed="neither")],
        "top_k": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def sample_continuations(
    lm, prefixes, n_samples=1, max_new_tokens=24, temperature=1.0, top_k=None, random_state=None
):
    """Sample continuations of each prefix from a fitted language model.

    Every sample starts after the beginning token and the prefix's tokens and stops at
    the end token or after ``max_new_tokens``. The samples of one prefix are drawn in one
    batch with the model's key-value cache. The model is left in eval mode.

    Parameters
    ----------
    lm : TransformerLanguageModel
        A fitted model.
    prefixes : list of str
        The texts to continue.
    n_samples : int, default=1
        Continuations per prefix.
    max_new_tokens : int, default=24
        Most tokens generated per continuation.
    temperature : float, default=1.0
        Softmax temperature (> 0); lower is greedier.
    top_k : int or None, default=None
        Sample among the ``top_k`` most likely tokens only; None: all tokens.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws (one child seed per prefix), so a fixed value reproduces them.

    Returns
    -------
    samples : list of list of str
        ``samples[i]`` holds the ``n_samples`` decoded continuations of ``prefixes[i]``
        (without the prefix; possibly empty strings).

    Examples
    --------
    >>> from sklearn_cispa.language import TransformerLanguageModel, sample_continuations
    >>> lm = TransformerLanguageModel(
    ...     "gpt2", config=dict(n_layer=1, n_embd=32, n_head=2), block_size=32,
    ...     max_steps=150, batch_size=8, lr=3e-3, random_state=0
    ... ).fit(["the cat sat.", "the dog sat."] * 8)
    >>> out = sample_continuations(lm, ["the "], n_samples=3, max_new_tokens=8,
    ...                            temperature=0.5, random_state=0)
    >>> len(out[0]), out == sample_continuations(
    ...     lm, ["the "], n_samples=3, max_new_tokens=8, temperature=0.5, random_state=0)
    (3, True)
    """
    import torch

    adapter = _check_lm(lm)
    prefixes = _texts("prefixes", prefixes)
    n_samples = _positive_int("n_samples", n_samples)
    max_new_tokens = _positive_int("max_new_tokens", max_new_tokens, minimum=0)
    if not (isinstance(temperature, numbers.Real) and np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0; got {temperature!r}")
    if top_k is not None:
        top_k = _positive_int("top_k", top_k)
    limit = _position_limit(lm)
    room = None
    if limit is not None:
        room = limit - max_new_tokens
        if room < 1:
            raise ValueError(
                f"max_new_tokens={max_new_tokens} leaves no room for a prefix in the "
                f"model's {limit} positions"
            )
    model = lm.model_
    device = next(model.parameters()).device
    seeds = spawn_seeds(random_state, len(prefixes))
    out = []
    model.eval()
    with torch.no_grad():
        for prefix, seed in zip(prefixes, seeds):
            ctx = _prefix_ids(lm, adapter, prefix, room)
            gen = torch.Generator(device="cpu").manual_seed(int(seed))
            ids = torch.as_tensor([ctx] * n_samples, device=device)
            tokens = np.zeros((n_samples, max_new_tokens), dtype=np.int64)
            alive = np.ones(n_samples, dtype=bool)
            lengths = np.full(n_samples, max_new_tokens)
            cache, step_in = {}, ids
            for t in range(max_new_tokens):
                seen = len(ctx) + t  # no padding: every position is attended to
                mask = torch.ones((n_samples, seen), dtype=torch.long, device=device)
                res = model(input_ids=step_in, attention_mask=mask, use_cache=True, **cache)
                # transformers >= 5.2 returns and takes ``cache``; older versions
                # ``past_key_values``
                key = "cache" if "cache" in res else "past_key_values"
                cache = {key: res[key]}
                logits = res.logits[:, -1].double().cpu()
                if not bool(torch.isfinite(logits).all()):
                    raise ValueError("the model's next-token logits are not finite")
                logits = logits / float(temperature)
                if top_k is not None and top_k < logits.shape[-1]:
                    kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
                    logits = torch.where(logits < kth, -torch.inf, logits)
                probs = torch.softmax(logits, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=gen)[:, 0].numpy()
                tokens[:, t] = nxt
                if adapter.eos is not None:
                    ended = alive & (nxt == adapter.eos)
                    lengths[ended] = t
                    alive &= ~ended
                if not alive.any():
                    break
                step_in = torch.as_tensor(nxt[:, None], device=device)
            out.append([adapter.decode(tokens[r, : lengths[r]]) for r in range(n_samples)])
    return out


@validate_params(
    {
        "lm": [HasMethods(["encode", "decode"])],
        "prefixes": [list, tuple],
        "continuations": [list, tuple],
        "grad": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def continuation_log_likelihoods(lm, prefixes, continuations, grad=False):
    """Summed log-probability of each continuation given its prefix, and its length.

    The end token after the continuation is scored too (where the tokenizer has one),
    so an empty continuation still has one token. With ``grad=True`` the sums are
    differentiable with respect to ``lm.model_``'s parameters (the model's train/eval
    mode is left as it is; without gradients the model is scored in eval mode).

    Parameters
    ----------
    lm : TransformerLanguageModel
        A fitted model.
    prefixes : list of str
        Contexts, after the beginning token.
    continuations : list of str
        One continuation per prefix.
    grad : bool, default=False
        Keep the autograd graph.

    Returns
    -------
    log_likelihoods : torch.Tensor of shape (n,), float64
        Summed natural-log probabilities of the continuation tokens.
    n_tokens : torch.Tensor of shape (n,), float64
        Number of scored tokens per continuation.

    Examples
    --------
    >>> from sklearn_cispa.language import (TransformerLanguageModel,
    ...                                     continuation_log_likelihoods)
    >>> lm = TransformerLanguageModel(
    ...     "gpt2", config=dict(n_layer=1, n_embd=32, n_head=2), block_size=32,
    ...     max_steps=150, batch_size=8, lr=3e-3, random_state=0
    ... ).fit(["the cat sat.", "the dog sat."] * 8)
    >>> ll, n = continuation_log_likelihoods(lm, ["the ", "the "], ["cat sat.", "xqz"])
    >>> bool(ll[0] > ll[1]), n.tolist()
    (True, [9.0, 4.0])
    """
    import torch

    adapter = _check_lm(lm)
    prefixes = _texts("prefixes", prefixes)
    continuations = _texts("continuations", continuations)
    if len(prefixes) != len(continuations):
        raise ValueError(
            f"{len(prefixes)} prefixes for {len(continuations)} continuations: pass one "
            "prefix per continuation"
        )
    if not prefixes:
        raise ValueError("no continuation to score: prefixes and continuations are empty")
    limit = _position_limit(lm)
    rows, starts = [], []
    for p, c in zip(prefixes, continuations):
        cont = [int(i) for i in lm.encode(c)]
        if adapter.eos is not None:
            cont.append(adapter.eos)
        if not cont:
            raise ValueError("an empty continuation has no token to score (no end token)")
        head = _prefix_ids(lm, adapter, p, None)
        seq = head + cont
        if limit is not None and len(seq) > limit:
            cut = len(seq) - limit
            if cut >= len(head):
                raise ValueError(
                    f"a continuation of {len(cont)} tokens does not fit the model's "
                    f"{limit} positions"
                )
            seq = seq[cut:]
            head = head[cut:]
        rows.append(seq)
        starts.append(len(head))
    model = lm.model_
    device = next(model.parameters()).device
    pad = adapter.eos if adapter.eos is not None else 0
    ids, mask = _pad_rows(rows, pad)
    target = np.zeros((len(rows), ids.shape[1] - 1), dtype=bool)
    for i, (r, s) in enumerate(zip(rows, starts)):
        target[i, s - 1 : len(r) - 1] = True  # position j predicts token j + 1
    ids_t = torch.as_tensor(ids, device=device)
    mask_t = torch.as_tensor(mask, device=device)
    tgt = torch.as_tensor(target, device=device)
    with eval_mode(model, enabled=not grad), torch.set_grad_enabled(bool(grad)):
        logits = model(input_ids=ids_t, attention_mask=mask_t).logits[:, :-1].double()
        logp = torch.log_softmax(logits, dim=-1)
        picked = logp.gather(-1, ids_t[:, 1:, None])[..., 0]
        total = torch.where(tgt, picked, torch.zeros_like(picked)).sum(dim=1)
    n_tokens = tgt.sum(dim=1).to(torch.float64)
    return total, n_tokens


@validate_params({"mean_logp": [HasMethods(["detach"])]}, prefer_skip_nested_validation=True)
def log_odds(mean_logp):
    """log(P / (1 - P)) for P = exp(mean log-probability), computed stably (torch).

    ``l - log(-expm1(l))`` with l clamped just below 0, so that a mean log-probability
    of 0 gives a large finite value and the gradient stays finite.

    Parameters
    ----------
    mean_logp : torch.Tensor
        Mean token log-probabilities (at most 0).

    Returns
    -------
    log_odds : torch.Tensor
        Same shape.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.language import log_odds
    >>> round(float(log_odds(torch.log(torch.tensor([0.25], dtype=torch.float64)))[0]), 6)
    -1.098612
    """
    import torch

    tiny = torch.finfo(mean_logp.dtype).tiny
    ell = torch.clamp(mean_logp, max=-tiny)
    return ell - torch.log(-torch.expm1(ell))


@validate_params(
    {
        "lm": [HasMethods(["encode", "decode"])],
        "prompts": [list, tuple],
        "chosen": [list, tuple],
        "rejected": [list, tuple],
        "beta": [Interval(numbers.Real, 0, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def orpo_update(
    lm, prompts, chosen, rejected, beta=0.1, lr=1e-4, n_steps=1, batch_size=16, random_state=None
):
    """ORPO preference update of a fitted language model, in place.

    Minimises ``NLL(chosen | prompt) + beta * L_OR`` with AdamW, where the NLL is the
    mean token negative log-likelihood of the chosen continuations and ``L_OR = -log
    sigmoid(log odds(chosen) - log odds(rejected))`` with odds of the length-normalised
    likelihood P = exp(mean token log-probability). Each step uses ``batch_size`` pairs
    drawn in a seeded order (a pass over all pairs, then a reshuffle). The model is in
    train mode (dropout on) during the steps and in eval mode after.

    Parameters
    ----------
    lm : TransformerLanguageModel
        A fitted model; ``lm.model_`` is updated.
    prompts, chosen, rejected : list of str
        One prompt, preferred and dispreferred continuation per pair (equal lengths).
    beta : float, default=0.1
        Weight of the odds-ratio term.
    lr : float, default=1e-4
        AdamW's learning rate.
    n_steps : int, default=1
        Optimiser steps.
    batch_size : int, default=16
        Pairs per step.
    random_state : int, RandomState instance or None, default=None
        Seeds the order of the pairs and the dropout.

    Returns
    -------
    info : dict
        ``loss`` (per step), ``margin_before`` and ``margin_after`` (mean log-odds
        margin of chosen over rejected, in eval mode, over all pairs).

    Examples
    --------
    >>> from sklearn_cispa.language import TransformerLanguageModel, orpo_update
    >>> lm = TransformerLanguageModel(
    ...     "gpt2", config=dict(n_layer=1, n_embd=32, n_head=2), block_size=32,
    ...     max_steps=100, batch_size=8, lr=3e-3, random_state=0
    ... ).fit(["paint it red.", "paint it blue."] * 8)
    >>> info = orpo_update(lm, ["paint it "] * 2, ["blue."] * 2, ["red."] * 2,
    ...                    beta=1.0, lr=3e-3, n_steps=5, random_state=0)
    >>> bool(info["margin_after"] > info["margin_before"])
    True
    """
    import torch

    _check_lm(lm)
    prompts = _texts("prompts", prompts)
    chosen = _texts("chosen", chosen)
    rejected = _texts("rejected", rejected)
    if not (len(prompts) == len(chosen) == len(rejected)):
        raise ValueError(
            f"prompts, chosen and rejected differ in length ({len(prompts)}, "
            f"{len(chosen)}, {len(rejected)}): pass one of each per preference pair"
        )
    if not prompts:
        raise ValueError("no preference pair: prompts, chosen and rejected are empty")
    for name, v in (("beta", beta), ("lr", lr)):
        if not (isinstance(v, numbers.Real) and np.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0; got {v!r}")
    if lr <= 0:
        raise ValueError(f"lr must be > 0; got {lr!r}")
    n_steps = _positive_int("n_steps", n_steps)
    batch_size = _positive_int("batch_size", batch_size)

    def margin(idx, grad):
        sel = lambda xs: [xs[i] for i in idx]  # noqa: E731
        c_ll, c_n = continuation_log_likelihoods(lm, sel(prompts), sel(chosen), grad=grad)
        r_ll, r_n = continuation_log_likelihoods(lm, sel(prompts), sel(rejected), grad=grad)
        m = log_odds(c_ll / c_n) - log_odds(r_ll / r_n)
        return m, c_ll, c_n

    everyone = np.arange(len(prompts))
    with torch.no_grad():
        before = float(margin(everyone, False)[0].mean())
    order_seed, drop_seed = spawn_seeds(random_state, 2)
    rng = np.random.default_rng(order_seed)
    model = lm.model_
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    if not bool(torch.isfinite(torch.tensor(float(lr), dtype=dtype))):
        raise ValueError(
            f"lr={lr!r} is not representable in the model's dtype {dtype}; use a smaller lr"
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(lr), weight_decay=0.0)
    batch = min(batch_size, len(prompts))
    order, pos, losses = rng.permutation(len(prompts)), 0, []
    model.train()
    try:
        with torch_rng_context(drop_seed, device=str(device)):
            for step in range(n_steps):
                if pos + batch > len(order):
                    order, pos = rng.permutation(len(prompts)), 0
                idx = order[pos : pos + batch]
                pos += batch
                m, c_ll, c_n = margin(idx, True)
                nll = -(c_ll / c_n)
                loss = torch.mean(nll - float(beta) * torch.nn.functional.logsigmoid(m))
                check_finite_training(loss, epoch=step + 1, estimator="orpo_update")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                losses.append(float(loss.detach()))
        check_finite_training(None, epoch=n_steps, estimator="orpo_update", module=model)
    finally:
        model.eval()
    with torch.no_grad():
        after = float(margin(everyone, False)[0].mean())
    return {"loss": losses, "margin_before": before, "margin_after": after}
