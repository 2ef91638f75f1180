"""minimal_deactivation_set: the exact smallest set of units that stops a greedy extraction.

Computable for the one-hidden-layer window model of :class:`CharMLPLanguageModel`, whose
logits are linear in the hidden units; it is the yardstick of the located sets' sizes.
"""

import numbers

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, validate_params
from sklearn.utils.validation import check_is_fitted

from sklearn_cispa.language import CharMLPLanguageModel
from sklearn_cispa.utils import eval_mode

__all__ = ["minimal_deactivation_set"]


@validate_params(
    {
        "model": [CharMLPLanguageModel],
        "prefix": [str],
        "secret": [str],
        "scale": [Interval(numbers.Real, None, None, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def minimal_deactivation_set(model, prefix, secret, scale=0.0):
    """The exact smallest set of hidden units whose deactivation stops greedy extraction.

    For the window model of :class:`CharMLPLanguageModel` (one-hot window, Linear, ReLU,
    Linear) the logits are linear in the hidden activations, and each position's
    activations depend only on its own window. Greedy extraction of ``secret`` fails
    exactly when, at some position whose preceding characters are still right, another
    symbol ``r`` overtakes the secret's symbol ``c``. Multiplying unit ``u`` by ``scale``
    there removes ``(1 - scale) a_u (W[c, u] - W[r, u])`` from the margin, so the smallest
    breaking set is, over the secret's positions and the competitors, the fewest largest
    such terms whose removal makes the margin negative (ties are broken as ``argmax``
    does: towards the lower id).

    Parameters
    ----------
    model : CharMLPLanguageModel
        A fitted model; the units are those of ``model.module_.act``.
    prefix : str
        The prompt, for example ``"kobe pin: "``. Must not be empty.
    secret : str
        The memorised continuation. Must not be empty.
    scale : float, default=0.0
        Multiplier of the deactivated units, as in :class:`NeuronMask`; 0 zeroes them.

    Returns
    -------
    size : int or float
        The number of units in the smallest set: 0 when greedy decoding does not
        reproduce ``secret`` in the first place (nothing needs to be deactivated), and
        ``inf`` when no set of units stops the extraction (for example ``scale=1``).
    neurons : list of (str, int)
        One smallest set, as ``("act", unit)`` pairs for :class:`NeuronMask` or
        :meth:`CriticalNeuronLocator.deactivate` (empty when ``size`` is 0 or ``inf``).

    Notes
    -----
    Computed in float64 from the model's weights, so exact up to rounding at near-ties
    of two logits. Checked against brute force over all subsets of the hidden units of
    small models (``tests/memorization/test_exact.py``). The layer is dense: on the
    planted-canary benchmark at 256 hidden units the smallest set has 17-22 units (see
    the user guide).

    Examples
    --------
    >>> from sklearn_cispa.memorization import (CharMLPLanguageModel, NeuronMask,
    ...                                         minimal_deactivation_set)
    >>> docs = ["id: 4711. id: 4711. id: 4711."] * 10
    >>> lm = CharMLPLanguageModel(context=6, hidden=16, max_epochs=20, lr=1e-2,
    ...                           random_state=0).fit(docs)
    >>> size, neurons = minimal_deactivation_set(lm, "id: ", "4711")
    >>> size == len(neurons) >= 1
    True
    >>> with NeuronMask(lm, neurons):
    ...     lm.complete("id: ", 4) == "4711"
    False
    >>> minimal_deactivation_set(lm, "id: ", "9999")  # not memorised: nothing to switch off
    (0, [])
    """
    check_is_fitted(model)
    if not prefix:
        raise ValueError("prefix is empty: give the prompt that precedes the secret.")
    if not secret:
        raise ValueError("secret is empty: give the memorised continuation to stop.")
    scale = float(scale)
    if model.complete(prefix, len(secret)) != secret:
        return 0, []
    module = model.module_
    W = module.out.weight.detach().double().cpu().numpy()
    b = module.out.bias.detach().double().cpu().numpy()
    p_ids, s_ids = model.encode(prefix), model.encode(secret)
    seq = np.concatenate([p_ids, s_ids])
    dev = next(module.parameters()).device
    hidden = []
    handle = module.act.register_forward_hook(
        lambda _m, _i, o: hidden.append(o.detach().double().cpu().numpy()[0]))
    try:
        with eval_mode(module), torch.no_grad():
            for j in range(len(s_ids)):
                module(torch.as_tensor(seq[None, : len(p_ids) + j], device=dev))
    finally:
        handle.remove()
    best, best_units = float("inf"), []
    for j, h in enumerate(hidden):
        c = int(s_ids[j])
        for r in range(len(b)):
            if r == c:
                continue
            contrib = h * (W[c] - W[r])
            margin = contrib.sum() + b[c] - b[r]
            removed = (1.0 - scale) * contrib
            order = np.argsort(-removed, kind="stable")
            left = margin - np.cumsum(removed[order])
            # r wins when its logit is larger, or equal with r the lower id
            wins = (left < 0) | ((left == 0) & (r < c))
            if wins.any():
                k = int(np.argmax(wins)) + 1
                if k < best:
                    best, best_units = k, sorted(("act", int(u)) for u in order[:k])
    return best, best_units
