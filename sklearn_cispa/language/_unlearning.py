"""gradient_ascent_unlearning: the standard editing baseline of memorisation removal.

A few optimiser steps that *raise* the loss of one memorised continuation; the model's
weights change (a copy is returned), unlike a removable neuron mask.
"""

import copy
import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params
from sklearn.utils.validation import check_is_fitted

__all__ = ["gradient_ascent_unlearning"]


def _module_and_kind(lm):
    """The torch module a fitted language model trains, and how it is called."""
    if hasattr(lm, "model_") and hasattr(lm, "tokenizer_"):
        return lm.model_, "sequence"
    if hasattr(lm, "module_"):
        return lm.module_, "window"
    raise TypeError(
        "lm must be a fitted TransformerLanguageModel or CharMLPLanguageModel; got "
        f"{type(lm).__name__}."
    )


def _prompt_ids(lm, prefix):
    try:  # TransformerLanguageModel: the prompt as complete() reads it (after <bos>)
        return np.asarray(lm.encode(prefix, add_special_tokens=True), dtype=np.int64)
    except TypeError:  # CharMLPLanguageModel.encode(text)
        return np.asarray(lm.encode(prefix), dtype=np.int64)


@validate_params(
    {
        "lm": "no_validation",  # a fitted TransformerLanguageModel or CharMLPLanguageModel
        "prefix": [str],
        "secret": [str],
        "n_steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "callback": [callable, None],
    },
    prefer_skip_nested_validation=True,
)
def gradient_ascent_unlearning(lm, prefix, secret, n_steps=5, lr=1e-3, callback=None):
    """Edit a copy of a language model by gradient ascent on one memorised continuation.

    Each step is one Adam step on the *negative* mean cross-entropy of the ``secret``'s
    tokens given ``prefix`` (teacher-forced), so the model's probability of reproducing
    the secret falls. This is the usual editing baseline against which a neuron-level
    intervention (:class:`~sklearn_cispa.memorization.NeuronMask`) is compared at equal
    perplexity cost.

    Parameters
    ----------
    lm : TransformerLanguageModel or CharMLPLanguageModel
        A fitted model; it is not modified (a deep copy is edited).
    prefix : str
        The prompt that precedes the secret, for example ``"kobe pin: "``. Must not be
        empty for a ``CharMLPLanguageModel`` (it has no beginning token).
    secret : str
        The memorised continuation to forget. Must not be empty.
    n_steps : int, default=5
        Largest number of optimiser steps.
    lr : float, default=1e-3
        Adam's learning rate.
    callback : callable, default=None
        ``callback(step, model) -> bool`` after each step (``step`` from 1), with the
        edited copy; returning True stops early (for example once the secret is no
        longer extracted, or once a perplexity budget is spent).

    Returns
    -------
    edited : TransformerLanguageModel or CharMLPLanguageModel
        The edited copy, in eval mode.

    Notes
    -----
    Only the secret's positions enter the loss; the rest of the weights move as the
    gradient dictates, so other text can degrade: measure held-out perplexity and the
    retention of other memorised strings, as the report row ``neurons_gpt2`` does.
    Deterministic on CPU (no sampling).

    Examples
    --------
    >>> from sklearn_cispa.language import (CharMLPLanguageModel,
    ...                                     gradient_ascent_unlearning)
    >>> docs = ["id: 4711. id: 4711. id: 4711."] * 10
    >>> lm = CharMLPLanguageModel(context=6, hidden=16, max_epochs=20, lr=1e-2,
    ...                           random_state=0).fit(docs)
    >>> lm.complete("id: ", 4)
    '4711'
    >>> edited = gradient_ascent_unlearning(lm, "id: ", "4711", n_steps=20, lr=1e-2)
    >>> edited.complete("id: ", 4) != "4711", lm.complete("id: ", 4)
    (True, '4711')
    """
    import torch

    _module_and_kind(lm)
    check_is_fitted(lm)
    if not secret:
        raise ValueError("secret is empty: give the memorised continuation to forget.")
    edited = copy.deepcopy(lm)
    module, kind = _module_and_kind(edited)
    p_ids = _prompt_ids(edited, prefix)
    s_ids = np.asarray(edited.encode(secret), dtype=np.int64)
    if kind == "window" and p_ids.size == 0:
        raise ValueError("prefix is empty: give the prompt that precedes the secret.")
    device = next(module.parameters()).device
    seq = torch.as_tensor(np.concatenate([p_ids, s_ids])[None, :], device=device)
    target = torch.as_tensor(s_ids, device=device)
    n_p, t = len(p_ids), len(s_ids)
    params = [p for p in module.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters to edit.")
    opt = torch.optim.Adam(params, lr=float(lr))
    module.eval()  # no dropout: the edit is deterministic
    for step in range(1, int(n_steps) + 1):
        opt.zero_grad()
        with torch.enable_grad():
            if kind == "sequence":
                x = seq[:, : n_p + t - 1]
                logits = module(input_ids=x, attention_mask=torch.ones_like(x)).logits
                logits = logits[0, -t:]
            else:
                logits = torch.stack([module(seq[:, : n_p + j])[0] for j in range(t)])
            nll = torch.nn.functional.cross_entropy(logits.float(), target)
            (-nll).backward()  # ascent on the secret's loss
        try:
            opt.step()
            finite = all(bool(torch.isfinite(p).all()) for p in params)
        except RuntimeError as exc:  # torch refuses lr that overflows the dtype
            if "overflow" not in str(exc):
                raise
            finite = False
        if not finite:
            raise ValueError(
                f"gradient ascent diverged at step {step} (non-finite weights); lower lr "
                f"(now {lr:g})."
            )
        if callback is not None and callback(step, edited):
            break
    module.eval()
    return edited
