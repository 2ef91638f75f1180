"""Pruning at initialisation: random, magnitude, SNIP, GraSP and Synflow masks."""

import copy
import numbers
import warnings

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrize

from sklearn_cispa.utils import spawn_seeds, torch_generator

__all__ = ["prune_at_init"]

_METHODS = ("random", "magnitude", "snip", "grasp", "synflow")
_PRUNABLE = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
_GRASP_TEMPERATURE = 200.0
_SYNFLOW_ROUNDS = 100


def _prunable(module):
    """[(name, submodule)] of every Linear / Conv weight, in ``named_modules`` order."""
    out = []
    for name, sub in module.named_modules():
        if isinstance(sub, _PRUNABLE):
            if parametrize.is_parametrized(sub) or hasattr(sub, "weight_orig"):
                raise ValueError(
                    f"module {name or type(sub).__name__!r} already has a parametrization or a "
                    "pruning mask; call prune_at_init on the plain module."
                )
            out.append((f"{name}.weight" if name else "weight", sub))
    if any(parametrize.is_parametrized(sub) for sub in module.modules()):
        raise ValueError("the module already has parametrizations; pass the plain module.")
    return out


def _as_tensor(value, name, dtype, device):
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        t = value.detach()
    else:
        arr = np.asarray(value)
        if arr.dtype.kind == "c":
            raise ValueError(f"{name} must hold real numbers, got complex values.")
        if arr.dtype.kind not in "biuf":
            # object columns (a DataFrame of mixed dtypes, strings) or complex values:
            # numbers are needed, say so instead of torch's dtype error
            try:
                arr = np.asarray(arr, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"{name} must hold real numbers; got dtype {arr.dtype} whose values "
                    f"cannot be converted to float ({exc}). Encode non-numeric columns "
                    "first (for example with a ColumnTransformer)."
                ) from exc
        t = torch.as_tensor(np.array(arr, copy=True))
    if dtype is not None:
        t = t.to(dtype)
    return t.to(device)


def _global_keep(scores, n_keep):
    """Boolean masks keeping the n_keep largest scores over all tensors."""
    flat = torch.cat([s.reshape(-1) for s in scores])
    keep = torch.zeros(flat.numel(), dtype=torch.bool, device=flat.device)
    if n_keep > 0:
        keep[torch.topk(flat, n_keep, largest=True, sorted=False).indices] = True
    out, start = [], 0
    for s in scores:
        out.append(keep[start : start + s.numel()].view(s.shape))
        start += s.numel()
    return out


def _weights_of(model, names):
    params = dict(model.named_parameters())
    return [params[n] for n in names]


def _data_grads(module, names, X, y, temperature=1.0, create_graph=False):
    try:
        logits = module(X)
    except RuntimeError as exc:  # typically a width mismatch inside torch
        raise ValueError(
            f"X of shape {tuple(X.shape)} does not fit the module (torch: {exc})."
        ) from exc
    if logits.ndim != 2:
        raise ValueError(
            f"the module must output (n_samples, n_classes) logits, got {tuple(logits.shape)}."
        )
    if int(y.max()) >= logits.shape[1]:
        raise ValueError(
            f"y holds class index {int(y.max())} but the module outputs "
            f"{logits.shape[1]} logits; y must hold indices in [0, {logits.shape[1]})."
        )
    loss = F.cross_entropy(logits / temperature, y)
    weights = _weights_of(module, names)
    grads = torch.autograd.grad(loss, weights, create_graph=create_graph)
    return weights, grads


def _snip_scores(module, names, X, y):
    model = copy.deepcopy(module).eval()
    weights, grads = _data_grads(model, names, X, y)
    return [(w * g).abs().detach() for w, g in zip(weights, grads)]


def _grasp_scores(module, names, X, y):
    model = copy.deepcopy(module).eval()
    weights, grads = _data_grads(model, names, X, y, _GRASP_TEMPERATURE, create_graph=True)
    z = sum((g * g.detach()).sum() for g in grads)
    hg = torch.autograd.grad(z, weights)
    return [(w * h).detach() for w, h in zip(weights, hg)]


def _synflow(module, names, input_shape, n_keep, n_total, sparsity, rounds=_SYNFLOW_ROUNDS):
    """Iterative Synflow; returns (masks, scores of the last round)."""
    model = copy.deepcopy(module).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.abs_()
        for b in model.buffers():
            if b.is_floating_point():
                b.abs_()
    weights = _weights_of(model, names)
    originals = [w.detach().clone() for w in weights]
    device = originals[0].device
    masks = [torch.ones_like(w, dtype=torch.bool) for w in weights]
    ones = torch.ones((1, *input_shape), dtype=torch.float64, device=device)
    for j in range(1, rounds + 1):
        with torch.no_grad():
            for w, w0, m in zip(weights, originals, masks):
                w.copy_(w0 * m)
        R = model(ones).sum()
        grads = torch.autograd.grad(R, weights)
        scores = []
        for w, g, m in zip(weights, grads, masks):
            s = (w * g).detach()
            scores.append(torch.where(m, s, torch.full_like(s, -torch.inf)))
        if j == rounds:
            keep = n_keep
        else:
            keep = round((1.0 - sparsity) ** (j / rounds) * n_total)
            keep = max(keep, n_keep)
        masks = _global_keep(scores, keep)
    return masks, scores


def _check_scores(scores, method):
    for s in scores:
        if bool(torch.isnan(s).any()) or bool(torch.isinf(s).any() and method != "synflow"):
            raise ValueError(
                f"prune_at_init({method!r}): the scores are not finite (the logits or their "
                "gradients overflow). Standardise X (or use a smaller init scale)."
            )
    return scores


def _check_batch(X, y, first, method):
    """Validate one scoring batch: finite X, integer class indices y, matching widths."""
    if X.ndim < 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a batch of shape (n_samples, ...), got {tuple(X.shape)}.")
    if y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(
            f"X and y must have the same number of rows and y be 1-D; got "
            f"{tuple(X.shape)} and {tuple(y.shape)}."
        )
    if not bool(torch.isfinite(X).all()):
        raise ValueError(f"X holds NaN or infinite values; {method!r} needs finite inputs.")
    if isinstance(first, nn.Linear) and X.ndim == 2 and X.shape[1] != first.in_features:
        raise ValueError(
            f"X has {X.shape[1]} features but the module's first Linear layer expects "
            f"{first.in_features}."
        )


def _labels(y):
    """Class indices as int64: integer dtype, or floats holding whole numbers >= 0."""
    try:
        t = y.detach() if isinstance(y, torch.Tensor) else torch.as_tensor(np.asarray(y))
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"y must hold class indices: {exc}") from exc
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"y must hold class indices, got dtype {t.dtype}.")
    if t.is_floating_point():
        if not bool(torch.isfinite(t).all()) or not bool((t == t.round()).all()):
            raise ValueError(
                "y must hold class indices (whole numbers); got non-integer or NaN values."
            )
    if t.numel() and int(t.min()) < 0:
        raise ValueError(f"y must hold class indices >= 0, got {int(t.min())}.")
    return t.to(torch.int64)


@validate_params(
    {
        "module": [nn.Module],
        "method": [StrOptions(set(_METHODS))],
        "sparsity": [Interval(numbers.Real, 0, 1, closed="left")],
        "X": ["array-like", None],
        "y": ["array-like", None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def prune_at_init(module, method="random", sparsity=0.9, X=None, y=None, random_state=None):
    """Compute pruning-at-initialisation masks for the Linear and Conv weights of a module.

    Parameters
    ----------
    module : torch.nn.Module
        The network at initialisation. The ``weight`` of every ``nn.Linear`` and
        ``nn.Conv1d/2d/3d`` is prunable. The module, its gradients, its train/eval mode
        and the global torch RNG are left untouched.
    method : {"random", "magnitude", "snip", "grasp", "synflow"}, default="random"
        Scores: "random" (uniform, exact count per tensor), "magnitude" (:math:`|\\theta|`),
        "snip" (:math:`|\\theta \\cdot \\nabla L|`), "grasp" (:math:`\\theta \\cdot Hg`
        with logits divided by 200, keep the largest), "synflow" (iterative synaptic
        flow over 100 rounds, data-free). All but "random" select globally.
    sparsity : float, default=0.9
        Pruned fraction in [0, 1): ``round(sparsity * n)`` entries are pruned (per tensor
        for "random", over all prunable entries otherwise).
    X : array-like or torch.Tensor of shape (n_samples, ...), default=None
        One batch of inputs; required by "snip" and "grasp". "synflow" uses only
        ``X.shape[1:]`` (else the first Linear's ``in_features``).
    y : array-like or torch.Tensor of shape (n_samples,), default=None
        Class indices of ``X``; required by "snip" and "grasp".
    random_state : int, RandomState instance or None, default=None
        Seeds the "random" masks (a private CPU generator, independent of torch's global
        RNG and so of the weight initialisation); ignored by the other methods.

    Returns
    -------
    masks : dict of str to torch.Tensor
        ``{parameter name: bool tensor}`` (True = kept), on each parameter's device.

    Raises
    ------
    ValueError
        Unknown method, sparsity outside [0, 1), missing data, ``X`` with NaN or
        infinite values or a width the module does not take, ``y`` that is not made of
        class indices within the module's outputs, or a module that already has
        parametrizations or pruning masks.

    Warns
    -----
    UserWarning
        When a tensor keeps no entry (layer collapse).

    See Also
    --------
    sklearn_cispa.neural.apply_sign_in : Train from such a mask with Sign-In.
    torch.nn.utils.prune.custom_from_mask : Apply a mask as plain pruning.

    Notes
    -----
    The "snip" and "grasp" scores depend on the units of ``X``: the gradients of the
    first layer scale with the inputs, so one feature in units of 1e6 (or a +1000
    offset) makes the first layer's scores dominate the global selection. Pass the
    batch in the units the network is trained on (standardised, as
    :class:`~sklearn_cispa.neural.MLPNetClassifier` does before scoring); the masks are
    then invariant to the raw units. "random", "magnitude" and "synflow" do not use
    the values of ``X``. Scores that overflow raise a ``ValueError``.

    Departures from the Synaptic-Flow code: ``sparsity`` is the pruned (not the kept)
    fraction; random masks keep an exact count per tensor; selection keeps an exact
    count (``torch.topk``; already pruned entries score ``-inf``) instead of a threshold
    that over-prunes ties; Synflow runs on a float64 copy with 100 rounds of the
    exponential schedule ``(1 - s) ** (j / 100)``.

    References
    ----------
    .. [1] Lee, Ajanthan, Torr. "SNIP: Single-shot Network Pruning based on Connection
       Sensitivity", ICLR 2019.
    .. [2] Wang, Zhang, Grosse. "Picking Winning Tickets Before Training by Preserving
       Gradient Flow", ICLR 2020.
    .. [3] Tanaka, Kunin, Yamins, Ganguli. "Pruning neural networks without any data by
       iteratively conserving synaptic flow", NeurIPS 2020.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.pruning import prune_at_init
    >>> net = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.ReLU(), torch.nn.Linear(20, 3))
    >>> masks = prune_at_init(net, method="random", sparsity=0.9, random_state=0)
    >>> {name: int(m.sum()) for name, m in masks.items()}
    {'0.weight': 20, '2.weight': 6}
    """
    sparsity = float(sparsity)
    layers = _prunable(module)
    if not layers:
        raise ValueError("the module has no nn.Linear or nn.Conv weight to prune.")
    names = [name for name, _ in layers]
    weights = [sub.weight for _, sub in layers]
    sizes = [w.numel() for w in weights]
    n_total = sum(sizes)
    n_keep = n_total - round(sparsity * n_total)

    if method in ("snip", "grasp"):
        if X is None or y is None:
            raise ValueError(f"method={method!r} needs one batch X, y of training data.")
        ref = weights[0]
        Xt = _as_tensor(X, "X", ref.dtype, ref.device)
        yt = _labels(y).to(ref.device)
        _check_batch(Xt, yt, layers[0][1], method)

    if method == "random":
        gen = torch_generator(spawn_seeds(random_state, 1)[0])
        masks = []
        for w in weights:
            keep = w.numel() - round(sparsity * w.numel())
            m = torch.zeros(w.numel(), dtype=torch.bool)
            m[torch.randperm(w.numel(), generator=gen)[:keep]] = True
            masks.append(m.view(w.shape).to(w.device))
    elif method == "magnitude":
        masks = _global_keep([w.detach().abs() for w in weights], n_keep)
    elif method == "snip":
        masks = _global_keep(_check_scores(_snip_scores(module, names, Xt, yt), method), n_keep)
    elif method == "grasp":
        masks = _global_keep(_check_scores(_grasp_scores(module, names, Xt, yt), method), n_keep)
    else:
        if X is not None:
            input_shape = tuple(np.shape(X)[1:])
            first = layers[0][1]
            if isinstance(first, nn.Linear) and input_shape != (first.in_features,):
                raise ValueError(
                    f"X has rows of shape {input_shape} but the module's first Linear layer "
                    f"expects {first.in_features} features."
                )
        else:
            first = layers[0][1]
            if not isinstance(first, nn.Linear):
                raise ValueError("synflow on a convolutional module needs X for the input shape.")
            input_shape = (first.in_features,)
        masks, _ = _synflow(module, names, input_shape, n_keep, n_total, sparsity)

    out = {}
    for name, w, m in zip(names, weights, masks):
        m = m.to(w.device)
        if sparsity > 0 and not bool(m.any()):
            warnings.warn(
                f"prune_at_init({method!r}, sparsity={sparsity}) keeps no entry of {name!r}: "
                "the layer collapses and the network output no longer depends on its input.",
                UserWarning,
                stacklevel=2,
            )
        out[name] = m
    return out
