"""CriticalNeuronLocator: find and deactivate the units that carry a memorised string.

The procedure follows NeMo (Hintersdorf et al., NeurIPS 2024): unit statistics on ordinary
text, an outlier threshold lowered until deactivating the outliers breaks the
memorisation, then a greedy refinement. It is adapted from diffusion models to token
language models (greedy extraction as the memorisation test).
"""

import contextlib
import json
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from sklearn_cispa.utils import check_random_generator, resolve_device, spawn_seeds

__all__ = ["CriticalNeuronLocator", "NeuronMask", "greedy_extraction_oracle"]

_ACTIVATIONS = (nn.ReLU, nn.GELU, nn.SiLU, nn.Mish, nn.LeakyReLU, nn.ELU)
_TOPK_CAP = 50  # largest per-layer top-k of the NeMo schedule (library cap)
_GREEDY_CAP = 256  # most units the greedy margin search adds before giving up
_SIGMA_FLOOR = 1e-6
_N_RIVALS = 3  # competitors per target position the refinement ranks against


# ------------------------------------------------------------------------------ helpers
@contextlib.contextmanager
def _eval_mode(model):
    """Put every submodule in eval mode inside the block, restore the flags afterwards."""
    flags = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, flag in flags:
            m.training = flag


def _model_device(model, default="cpu"):
    for p in model.parameters():
        return p.device
    for b in model.buffers():
        return b.device
    return torch.device(default)


def _as_module(model):
    """The torch module behind a model a user holds.

    A ``torch.nn.Module`` (a ``transformers`` ``PreTrainedModel`` included) is itself; a
    fitted :class:`~sklearn_cispa.language.TransformerLanguageModel` gives its
    ``model_``, a fitted :class:`~sklearn_cispa.language.CharMLPLanguageModel` its
    ``module_``.
    """
    if isinstance(model, nn.Module):
        return model
    for attr in ("model_", "module_"):
        inner = getattr(model, attr, None)
        if isinstance(inner, nn.Module):
            return inner
    raise TypeError(
        "model must be a torch.nn.Module (a transformers PreTrainedModel included) or a "
        "fitted TransformerLanguageModel / CharMLPLanguageModel; got "
        f"{type(model).__name__}" + (" (not fitted)" if hasattr(model, "fit") else "") + "."
    )


def _is_hf(module):
    return hasattr(module, "config") and hasattr(module, "get_input_embeddings")


def _vocab_size(module):
    """Number of token ids the module accepts, when it says (None otherwise)."""
    if _is_hf(module):
        return int(module.get_input_embeddings().num_embeddings)
    n = getattr(module, "n_vocab", None)
    return int(n) if isinstance(n, int) else None


def _forward(module, x):
    """Logits of a forward pass: plain tensors, or the ``.logits`` of a ModelOutput."""
    if _is_hf(module) and not torch.is_floating_point(x):
        out = module(input_ids=x, attention_mask=torch.ones_like(x))
    else:
        out = module(x)
    if hasattr(out, "logits"):
        out = out.logits
    elif isinstance(out, (tuple, list)):
        out = out[0]
    if not torch.is_tensor(out):
        raise TypeError(
            "the model's forward must return logits (a tensor) or an object with "
            f"`.logits`; got {type(out).__name__}."
        )
    return out


def _is_activation(module):
    if isinstance(module, _ACTIVATIONS):
        return True
    # transformers' own activation modules (NewGELUActivation, GELUActivation, ...)
    return type(module).__module__.startswith("transformers.activations")


def _is_linear(module):
    # nn.Linear, and transformers' Conv1D of GPT-2 (a Linear with transposed weights)
    return isinstance(module, nn.Linear) or type(module).__name__ == "Conv1D"


def _mlp_activations(module):
    """Names of the activation modules of MLP blocks, in registration order.

    An activation counts when it directly follows a Linear among the leaves (window
    MLPs, ``nn.Sequential``) or when its parent module holds Linear layers (the MLP
    blocks of GPT-2, GPT-NeoX, OPT, LLaMA/Qwen/Mistral and Phi, whose activation is
    registered after the projections).
    """
    names, prev = [], None
    children = {name: list(m.children()) for name, m in module.named_modules()}
    for name, m in module.named_modules():
        if len(children[name]) > 0:
            continue  # containers are not layers
        parent = name.rsplit(".", 1)[0] if "." in name else ""
        siblings = children.get(parent, [])
        if _is_activation(m) and (_is_linear(prev) or any(_is_linear(c) for c in siblings)):
            names.append(name)
        prev = m
    return names


def _layer_widths(module, layers):
    """Output width of each named submodule: from its parameters, else by one probe pass
    on a single token (None where neither tells)."""
    modules = dict(module.named_modules())
    widths = {}
    for name in layers:
        m = modules[name]
        width = getattr(m, "out_features", None) or getattr(m, "nf", None)
        widths[name] = int(width) if isinstance(width, int) else None
    unknown = {n: modules[n] for n, w in widths.items() if w is None}
    if unknown:
        try:
            with _eval_mode(module), torch.no_grad(), _recording(unknown) as rec:
                dev = _model_device(module)
                _forward(module, torch.zeros((1, 1), dtype=torch.long, device=dev))
            for n, r in rec.items():
                if r.outputs:
                    widths[n] = int(r.outputs[0].shape[-1])
        except Exception:  # noqa: BLE001 - a model that takes no token ids: check lazily
            pass
    return widths


def _check_ids(module, ids, name):
    n = _vocab_size(module)
    if n is not None and ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(
            f"{name}: token ids must lie in [0, {n}) (the model's vocabulary); got ids "
            f"from {int(ids.min())} to {int(ids.max())}."
        )


def _check_verdict(answer):
    """The oracle's answer as a bool, or a clear error."""
    if isinstance(answer, (bool, np.bool_)):
        return bool(answer)
    if torch.is_tensor(answer) and answer.numel() == 1 and answer.dtype == torch.bool:
        return bool(answer)
    raise TypeError(
        "the oracle must return a bool (True: still memorised); got "
        f"{type(answer).__name__}: {answer!r}."
    )


def _as_ids(ids, name):
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of token ids.")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise ValueError(f"{name} must hold integer token ids, got dtype {arr.dtype}.")
    return arr.astype(np.int64)


def _numeric_ids(X):
    """``X`` unchanged, or a clear error when its entries are not numbers (text, None)."""
    if hasattr(X, "dtype") and getattr(X.dtype, "kind", "O") != "O":
        return X
    try:
        arr = np.asarray(X, dtype=object)
    except ValueError:  # ragged rows: let validate_data say so
        return X
    # text and None get this message; other objects numpy's own TypeError
    bad = [v for v in arr.ravel()[:10000] if isinstance(v, (str, bytes)) or v is None]
    if bad:
        raise ValueError(
            "X must hold token ids (integers) of ordinary text, for example "
            "np.stack([lm.encode(text) for text in pieces]); got entries such as "
            f"{bad[0]!r} ({type(bad[0]).__name__})."
        )
    return X


def _next_logits(model, ids, device):
    """Next-token logits (vocab,) of a 1-D id sequence, for window or sequence models."""
    x = torch.as_tensor(np.asarray(ids, dtype=np.int64)[None, :], device=device)
    out = _forward(model, x)
    return out[0, -1] if out.ndim == 3 else out[0]


def _greedy_decode(model, prefix, n_tokens):
    model = _as_module(model)
    device = _model_device(model)
    seq = [int(i) for i in prefix]
    out = []
    with _eval_mode(model), torch.no_grad():
        for _ in range(n_tokens):
            logits = _next_logits(model, seq, device)
            if not bool(torch.isfinite(logits).all()):
                raise ValueError(
                    "The model's next-token logits are not finite (overflow, for example "
                    "under a NeuronMask with a huge scale): greedy decoding is undefined."
                )
            nxt = int(torch.argmax(logits))
            seq.append(nxt)
            out.append(nxt)
    return out


@validate_params(
    {
        "model": "no_validation",  # a module or a fitted language model (_as_module)
        "prefix_ids": ["array-like"],
        "target_ids": ["array-like"],
        "match": [StrOptions({"exact"}), Interval(numbers.Real, 0, 1, closed="both")],
    },
    prefer_skip_nested_validation=True,
)
def greedy_extraction_oracle(model, prefix_ids, target_ids, match="exact"):
    """Whether greedy decoding from a prefix reproduces a target: "still memorised".

    Parameters
    ----------
    model : torch.nn.Module, transformers model or fitted language model
        Maps token ids of shape ``(1, length)`` to next-token logits, either
        ``(1, vocab)`` (a window model) or ``(1, length, vocab)`` (a sequence model, whose
        last position is used); a forward that returns an object with ``.logits`` (a
        ``transformers`` ``ModelOutput``) works too, and a fitted
        ``TransformerLanguageModel`` or ``CharMLPLanguageModel`` stands for its module.
        Run in eval mode without gradients; active forward hooks (a :class:`NeuronMask`)
        apply.
    prefix_ids : array-like of shape (n_prefix,)
        Token ids of the prompt.
    target_ids : array-like of shape (n_target,)
        Token ids of the memorised continuation.
    match : "exact" or float, default="exact"
        ``"exact"``: every target token must be decoded. A float in [0, 1]: the
        fraction of target positions decoded correctly must reach it.

    Returns
    -------
    memorized : bool
        True when the greedy continuation matches the target.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.memorization import greedy_extraction_oracle
    >>> class Next(torch.nn.Module):  # always predicts (last id + 1) mod 5
    ...     def forward(self, ids):
    ...         return torch.nn.functional.one_hot((ids[:, -1] + 1) % 5, 5).double()
    >>> greedy_extraction_oracle(Next(), [0, 1], [2, 3, 4])
    True
    >>> greedy_extraction_oracle(Next(), [0, 1], [2, 0, 4], match=0.6)
    True
    """
    module = _as_module(model)
    prefix = _as_ids(prefix_ids, "prefix_ids")
    target = _as_ids(target_ids, "target_ids")
    _check_ids(module, prefix, "prefix_ids")
    _check_ids(module, target, "target_ids")
    decoded = np.asarray(_greedy_decode(module, prefix, len(target)))
    if match == "exact":
        return bool(np.array_equal(decoded, target))
    return bool(np.mean(decoded == target) >= match)


# ------------------------------------------------------------------------------ masks
class NeuronMask:
    """Forward hooks that multiply chosen hidden units by ``scale``; removable.

    The hooks are registered when the mask is created and removed by :meth:`remove` or
    on leaving a ``with`` block; the model's forward pass is then bit for bit what it
    was. Several masks compose (their factors multiply).

    Parameters
    ----------
    model : torch.nn.Module, transformers model or fitted language model
        The model whose submodules' outputs are rescaled (a fitted
        ``TransformerLanguageModel`` or ``CharMLPLanguageModel`` stands for its module).
        No hook is left behind when the mask cannot be built.
    neurons : list of (str, int)
        ``(layer, unit)`` pairs: a submodule name of ``model`` (as in
        ``model.named_modules()``) and an index of the last dimension of its output.
    scale : float, default=0.0
        Multiplier of the selected units; 0 deactivates them.
    widths : dict of str to int, default=None
        Units per layer, to validate ``neurons`` against; None reads them from the
        layers' parameters or from one forward pass on a single token (a model that
        takes no token ids is checked at its first forward pass instead).

    Attributes
    ----------
    neurons : list of (str, int)
        The masked units, sorted.
    scale : float
        The multiplier.
    active : bool
        Whether the hooks are registered.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.memorization import NeuronMask
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(),
    ...                             torch.nn.Linear(3, 1))
    >>> x = torch.ones(1, 2)
    >>> before = model(x)
    >>> with NeuronMask(model, [("1", 0), ("1", 2)]) as mask:
    ...     masked = model(x)
    >>> mask.active, bool(torch.equal(model(x), before))
    (False, True)
    """

    def __init__(self, model, neurons, scale=0.0, widths=None):
        self._handles = []
        model = _as_module(model)
        scale = float(scale)
        if not np.isfinite(scale):
            raise ValueError(f"scale must be finite, got {scale}.")
        modules = dict(model.named_modules())
        by_layer = {}
        clean = []
        for pair in neurons:
            try:
                layer, unit = pair
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"neurons: each entry must be a (layer, unit) pair, got {pair!r}."
                ) from exc
            if isinstance(unit, bool) or not isinstance(unit, numbers.Integral):
                raise ValueError(f"neurons: unit indices must be integers, got {unit!r}.")
            layer, unit = str(layer), int(unit)
            if layer not in modules:
                raise ValueError(f"neurons: model has no submodule named {layer!r}.")
            if unit < 0:
                raise ValueError(f"neurons: unit indices must be >= 0, got {unit}.")
            by_layer.setdefault(layer, set()).add(unit)
            clean.append((layer, unit))
        widths = dict(widths) if widths is not None else _layer_widths(model, list(by_layer))
        for layer, units in by_layer.items():
            width = widths.get(layer)
            if width is not None and max(units) >= width:
                raise ValueError(
                    f"neurons: unit {max(units)} is out of range for layer {layer!r}, "
                    f"which has {width} units."
                )
        self.neurons = sorted(set(clean))
        self.scale = scale
        try:
            for layer, units in by_layer.items():
                idx = torch.as_tensor(sorted(units), dtype=torch.long)
                self._handles.append(
                    modules[layer].register_forward_hook(_ScaleHook(idx, scale))
                )
        except BaseException:
            self.remove()
            raise

    @property
    def active(self):
        """Whether the hooks are still registered."""
        return bool(self._handles)

    def remove(self):
        """Remove the hooks; the model computes exactly what it did before the mask.

        Returns
        -------
        self : NeuronMask
        """
        for handle in self._handles:
            handle.remove()
        self._handles = []
        return self

    def to_json(self):
        """The masked units as a JSON list of ``[layer, unit]`` pairs.

        Returns
        -------
        text : str
        """
        return json.dumps([[layer, unit] for layer, unit in self.neurons])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def __repr__(self):
        state = "active" if self.active else "removed"
        return f"NeuronMask({len(self.neurons)} units, scale={self.scale:g}, {state})"


class _ScaleHook:
    """Forward hook multiplying units ``idx`` of the last output dimension by ``scale``."""

    def __init__(self, idx, scale):
        self.idx = idx
        self.scale = scale

    def __call__(self, module, inputs, output):
        if self.idx.numel() and int(self.idx.max()) >= output.shape[-1]:
            raise ValueError(
                f"NeuronMask: unit {int(self.idx.max())} is out of range for an output "
                f"with {output.shape[-1]} units."
            )
        out = output.clone()
        idx = self.idx.to(out.device)
        out[..., idx] = out[..., idx] * self.scale
        return out


class _Recorder:
    """Forward hook storing a detached copy of each output."""

    def __init__(self):
        self.outputs = []

    def __call__(self, module, inputs, output):
        self.outputs.append(output.detach())


@contextlib.contextmanager
def _recording(modules):
    """Register recorders on ``modules`` (name -> module) inside the block."""
    recorders = {name: _Recorder() for name in modules}
    handles = [modules[n].register_forward_hook(recorders[n]) for n in modules]
    try:
        yield recorders
    finally:
        for h in handles:
            h.remove()


# ------------------------------------------------------------------------------ locator
class CriticalNeuronLocator(BaseEstimator):
    """Find, per memorised string, the few hidden units whose deactivation stops extraction.

    ``fit`` records unit statistics (mean and standard deviation of every hooked unit)
    on ordinary text. ``localize`` then scores each unit by how unusually it fires on a
    memorised ``(prefix, target)`` pair, deactivates the units above a threshold that is
    lowered step by step until greedy extraction of the target fails, and refines that
    set greedily (NeMo's procedure, adapted to language models). ``deactivate`` returns
    a removable :class:`NeuronMask` over the located units.

    Parameters
    ----------
    model : torch.nn.Module, transformers model or fitted language model
        Maps token ids of shape ``(batch, length)`` to next-token logits of shape
        ``(batch, vocab)`` (a window model, which predicts the token after the sequence)
        or ``(batch, length, vocab)`` (a sequence model); a forward that returns an
        object with ``.logits`` (a ``transformers`` ``ModelOutput``) works too. A fitted
        ``TransformerLanguageModel`` stands for its ``model_``, a fitted
        ``CharMLPLanguageModel`` for its ``module_``. It is run in eval mode; its
        training flags are restored afterwards.
    layers : "auto" or list of str, default="auto"
        Hooked submodules. ``"auto"`` hooks the activation modules of MLP blocks: every
        activation module (ReLU, GELU, SiLU, Mish, or one of ``transformers.activations``)
        that directly follows a ``Linear`` in registration order or whose parent holds
        Linear layers (GPT-2's ``mlp.act``, GPT-NeoX's ``mlp.act``, OPT's
        ``activation_fn``, LLaMA/Qwen/Mistral's ``mlp.act_fn``, Phi's
        ``mlp.activation_fn``); ``layers_`` lists the choice, and the error says why
        when there is none. A list of names (from ``model.named_modules()``, of the
        module behind a fitted language model) hooks exactly those outputs. A unit is
        one index of the last output dimension.
    signed : bool, default=True
        True scores ``(a - mu) / sigma``: units firing unusually high. False scores
        ``|a - mu| / sigma`` (NeMo's outlier score).
    aggregate : {"max", "mean_abs"}, default="max"
        ``"max"``: statistics over all reference positions, a unit's score is the
        maximum over the positions that predict the target. ``"mean_abs"`` (NeMo): the
        statistic is the mean absolute activation over those positions, with ``mu`` and
        ``sigma`` taken over reference sequences.
    theta_start : float, default=8.0
        First threshold on the score.
    theta_step : float, default=0.5
        Decrease of the threshold per step.
    theta_min : float, default=1.0
        Lowest threshold.
    topk_step : int, default=0
        Per step, the number of units per layer with the largest activation at the target
        positions added to the set grows by this much (NeMo's schedule uses 1; capped at
        50). 0 disables the addition and the search stops at ``theta_min``.
    refine : bool, default=True
        Run the greedy refinement (a layer pass, when several layers are hooked, then a
        unit pass).
    oracle : callable, default=None
        ``oracle(model, prefix_ids, target_ids) -> bool``, True meaning "still
        memorised". None uses :func:`greedy_extraction_oracle` with exact matching.
    scale : float, default=0.0
        Multiplier of deactivated units; 0 switches them off, 0.5 halves them.
    batch_size : int, default=256
        Reference sequences per forward pass in ``fit``.
    device : str, default="cpu"
        Device of the reference pass; it must be the device of the model's parameters.
    random_state : int, RandomState instance or None, default=None
        Used by :meth:`random_control` only; localisation is deterministic.
    method : {"threshold", "greedy"}, default="threshold"
        ``"threshold"``: NeMo's procedure (the threshold search, then the refinement).
        ``"greedy"``: the greedy margin search baseline: add, one at a time, the unit
        whose removal most lowers the smallest teacher-forced target margin (logit of
        the target token minus that of its strongest competitor; first order,
        recomputed under the current mask) until the oracle says the target is no
        longer reproduced (at most 256 units), then a unit pass over the earlier
        picks. ``theta`` is None in its results. Both need the hooked units to be
        differentiable inputs of the logits.

    Attributes
    ----------
    layers_ : list of str
        Names of the hooked submodules.
    n_units_ : dict of str to int
        Units per hooked layer.
    mu_ : dict of str to ndarray of shape (n_units,)
        Reference mean of each unit's statistic.
    sigma_ : dict of str to ndarray of shape (n_units,)
        Reference standard deviation (population, floored at 1e-6).
    n_features_in_ : int
        Length of the reference sequences.
    results_ : list of dict
        One result per localised pair (set by :meth:`localize`): ``neurons``,
        ``memorized_before``, ``localized``, ``theta``, ``n_initial``,
        ``n_oracle_calls`` and ``z`` (layer to scores).
    neurons_ : list of (str, int)
        Union of the located units over ``results_``; what :meth:`deactivate` uses by
        default.

    See Also
    --------
    NeuronMask : The removable intervention.
    CharMLPLanguageModel : The character model of the planted-canary benchmark.

    Notes
    -----
    No language-model paper of this method could be identified; the procedure is that of
    NeMo (Hintersdorf et al., "Finding NeMo: Localizing Neurons Responsible For
    Memorization in Diffusion Models", NeurIPS 2024), adapted: memorisation is tested by
    greedy extraction instead of the SSIM of diffusion noise; the default score is the
    signed maximum over the target positions (:meth:`nemo` gives NeMo's unsigned
    mean-absolute score and schedule); the unit pass visits units in ascending score.
    The refinement departs from NeMo's: after the layer pass, the units of the breaking
    set are ranked by their first-order effect on a target margin (on the unmasked
    model), once for the margin that the set breaks (the position and competitor where
    extraction fails under it) and once for the margin, over every target position and
    its three strongest competitors, that the fewest of its units are predicted to
    overturn; the shortest breaking head of each ranking is found by bisection started
    at the predicted length, the shorter head is kept, and the unit pass visits only
    that head, least effective unit first. NeMo's unit pass visits the whole initial
    set, which took a median of 161 oracle calls per canary on a transformer block of
    width 1024 and kept 2-3 times the units of the greedy margin search; ranking at the
    breaking margin alone kept sets within 1.5 times the exact minimum for 12 of 15
    canaries of the character MLP, the second ranking (exact for that model) for 15 of
    15. A further departure uses the other pairs of the same :meth:`localize` call
    (NeMo's refinement looks at one sample only): the kept head is tested on the other
    memorised pairs (one oracle call each), and when it stops some of them the set is
    ranked by specificity (the share of this target's margin a unit removes minus the
    largest share it removes of another pair's smallest margin, first order), and
    that head is kept if it stops fewer of them; on the 2-block character GPT-2 of
    the user guide this raised the share of other canaries kept from 78% to 86% over
    three seeds. A pair localised alone is refined as before. The refined set is
    minimal with respect to single removals, not globally minimal.
    The located units are mostly, not fully, specific to their string: measure the
    retention of other memorised strings. How few units carry a string depends on the
    model: a wide layer with a dense code can need tens of units however they are
    chosen (for the planted-canary character MLP at 256 units, the exact smallest
    zeroing set has 17-22 units; see the user guide). The locator wraps a model instead of learning
    from ``(X, y)``: of scikit-learn's estimator checks, cloning and parameter handling
    apply; the checks about predictions do not. The threshold search calls the oracle
    only when the set of units changes, and jumps to the next step of the schedule at
    which a unit's score is passed, so it finishes in time bounded by the number of
    units for any ``theta_start`` and ``theta_step``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.memorization import CharMLPLanguageModel, CriticalNeuronLocator
    >>> docs = ["la la lu. code 1234. la lu la."] * 20
    >>> lm = CharMLPLanguageModel(context=8, hidden=32, max_epochs=30, lr=1e-2,
    ...                           random_state=0).fit(docs)
    >>> ref = np.stack([lm.encode("la lu la la lu. lu la.")] * 4)
    >>> loc = CriticalNeuronLocator(lm.module_).fit(ref)
    >>> [res] = loc.localize([lm.encode("code ")], [lm.encode("1234")])
    >>> res["memorized_before"], res["localized"]
    (True, True)
    >>> with loc.deactivate():
    ...     lm.complete("code ", 4) != "1234"
    True
    >>> lm.complete("code ", 4)
    '1234'
    """

    _parameter_constraints = {
        "model": "no_validation",  # a module or a fitted language model (_as_module)
        "layers": [StrOptions({"auto"}), list, tuple],
        "signed": ["boolean"],
        "aggregate": [StrOptions({"max", "mean_abs"})],
        "theta_start": [Interval(numbers.Real, None, None, closed="neither")],
        "theta_step": [Interval(numbers.Real, 0, None, closed="neither")],
        "theta_min": [Interval(numbers.Real, None, None, closed="neither")],
        "topk_step": [Interval(numbers.Integral, 0, _TOPK_CAP, closed="both")],
        "refine": ["boolean"],
        "oracle": [callable, None],
        "scale": [Interval(numbers.Real, None, None, closed="neither")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "device": [str],
        "random_state": ["random_state"],
        "method": [StrOptions({"threshold", "greedy"})],
    }

    def __init__(self, model, layers="auto", signed=True, aggregate="max", theta_start=8.0,
                 theta_step=0.5, theta_min=1.0, topk_step=0, refine=True, oracle=None,
                 scale=0.0, batch_size=256, device="cpu", random_state=None,
                 method="threshold"):
        self.model = model
        self.method = method
        self.layers = layers
        self.signed = signed
        self.aggregate = aggregate
        self.theta_start = theta_start
        self.theta_step = theta_step
        self.theta_min = theta_min
        self.topk_step = topk_step
        self.refine = refine
        self.oracle = oracle
        self.scale = scale
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state
        self.method = method

    @classmethod
    def nemo(cls, model, **params):
        """The locator with NeMo's schedule and score.

        Parameters
        ----------
        model : torch.nn.Module
            As in the constructor.
        **params : dict
            Other constructor arguments; they override the preset.

        Returns
        -------
        locator : CriticalNeuronLocator
            Unfitted, with ``theta_start=5``, ``theta_step=0.25``, ``theta_min=1``,
            ``topk_step=1``, ``signed=False`` and ``aggregate="mean_abs"``.
        """
        preset = dict(theta_start=5.0, theta_step=0.25, theta_min=1.0, topk_step=1,
                      signed=False, aggregate="mean_abs")
        preset.update(params)
        return cls(model, **preset)

    def _check_schedule(self):
        if float(self.theta_min) > float(self.theta_start):
            raise ValueError(
                f"theta_min={self.theta_min} is above theta_start={self.theta_start}: the "
                "threshold is lowered from theta_start to theta_min, so theta_min must not "
                "exceed theta_start."
            )

    # -------------------------------------------------------------- hooks and passes
    def _hooked_modules(self):
        module = self._module
        modules = dict(module.named_modules())
        if isinstance(self.layers, str):  # "auto"
            names = _mlp_activations(module)
            if not names:
                found = sorted({type(m).__name__ for m in modules.values()
                                if _is_activation(m)})
                why = (f"its activation modules ({', '.join(found)}) have no Linear "
                       "layer beside or before them" if found else
                       "it has no activation module (ReLU, GELU, SiLU or one of "
                       "transformers.activations); a functional activation cannot be hooked")
                raise ValueError(
                    f"layers='auto' found no activation module of an MLP block in "
                    f"{type(module).__name__}: "
                    f"{why}. Pass the submodule names in `layers` (names from "
                    "model.named_modules())."
                )
            return {n: modules[n] for n in names}
        names = [str(n) for n in self.layers]
        if not names:
            raise ValueError("layers is empty: name at least one submodule.")
        missing = [n for n in names if n not in modules]
        if missing:
            raise ValueError(f"layers: the model has no submodules named {missing}.")
        return {n: modules[n] for n in names}

    def _to_tensor(self, X, device):
        if X.dtype.kind in "iub":
            return torch.tensor(X.astype(np.int64), device=device)
        dtype = next((p.dtype for p in self._module.parameters()), torch.float64)
        return torch.tensor(X, device=device).to(dtype)

    def _activations(self, modules, x):
        """Activations (batch, positions, units) of every hooked layer for a batch x.

        A sequence model (output with one more dimension than x) gives all positions in
        one pass; a window model (output of x's rank) is run on every prefix x[:, :j].
        """
        with _recording(modules) as rec:
            out = _forward(self._module, x)
            sequence = out.ndim == x.ndim + 1
            if not sequence and x.ndim == 2 and x.shape[1] > 1:
                for j in range(1, x.shape[1]):
                    _forward(self._module, x[:, :j])
        acts = {}
        for name, r in rec.items():
            if sequence:
                a = r.outputs[0]
                a = a.reshape(a.shape[0], -1, a.shape[-1])
            else:
                # prefixes of length 1..L-1 were run after the full one: reorder by length
                outs = r.outputs[1:] + r.outputs[:1]
                a = torch.stack([o.reshape(o.shape[0], o.shape[-1]) for o in outs], dim=1)
            acts[name] = a.double().cpu().numpy()
        return acts

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Record the reference statistics of every hooked unit.

        Parameters
        ----------
        X : array-like of shape (n_sequences, length)
            Model inputs of ordinary, non-memorised text: token ids (integers) for a
            language model. Real-valued inputs are cast to the model's dtype.
        y : None
            Ignored.

        Returns
        -------
        self : CriticalNeuronLocator
            The fitted locator.
        """
        self._check_schedule()
        self._module = _as_module(self.model)
        X = _numeric_ids(X)
        X = validate_data(self, X, dtype="numeric")
        if X.dtype.kind in "iub":
            _check_ids(self._module, X, "X")
        device = resolve_device(self.device)
        model_dev = _model_device(self._module, device)
        if torch.device(device) != model_dev and not (
            torch.device(device).type == model_dev.type == "cuda"
        ):
            raise ValueError(
                f"device={self.device!r} but the model's parameters are on {model_dev}; "
                "move the model or set device accordingly."
            )
        device = model_dev
        modules = self._hooked_modules()
        count, mean, m2 = 0, {}, {}
        # overflowing moments are caught below as non-finite statistics (a ValueError)
        with _eval_mode(self._module), torch.no_grad(), np.errstate(over="ignore",
                                                                  invalid="ignore"):
            for start in range(0, X.shape[0], int(self.batch_size)):
                x = self._to_tensor(X[start:start + int(self.batch_size)], device)
                acts = self._activations(modules, x)
                for name, a in acts.items():
                    rows = (np.abs(a).mean(axis=1) if self.aggregate == "mean_abs"
                            else a.reshape(-1, a.shape[-1]))
                    n_b = rows.shape[0]
                    mean_b = rows.mean(axis=0)
                    m2_b = ((rows - mean_b) ** 2).sum(axis=0)
                    if name not in mean:
                        mean[name], m2[name] = mean_b, m2_b
                        new_count = n_b
                    else:  # Chan et al.'s merge of streaming (Welford) moments
                        n_a = count
                        delta = mean_b - mean[name]
                        new_count = n_a + n_b
                        mean[name] = mean[name] + delta * n_b / new_count
                        m2[name] = m2[name] + m2_b + delta**2 * n_a * n_b / new_count
                count = new_count
        self.layers_ = list(modules)
        self.n_units_ = {n: int(mean[n].shape[0]) for n in self.layers_}
        self.mu_ = {n: mean[n] for n in self.layers_}
        self.sigma_ = {
            n: np.maximum(np.sqrt(np.maximum(m2[n], 0.0) / count), _SIGMA_FLOOR)
            for n in self.layers_
        }
        for n in self.layers_:
            if not (np.all(np.isfinite(self.mu_[n])) and np.all(np.isfinite(self.sigma_[n]))):
                raise ValueError(
                    f"the activations of layer {n!r} are not finite on X (overflow); check "
                    "the inputs' scale."
                )
        self.results_ = []
        self.neurons_ = []
        return self

    # -------------------------------------------------------------- scores
    def _target_activations(self, prefix, target):
        """Activations (t, units) at the positions that predict the t target tokens."""
        modules = {n: dict(self._module.named_modules())[n] for n in self.layers_}
        device = _model_device(self._module)
        full = np.concatenate([prefix, target[:-1]])
        x = torch.as_tensor(full[None, :], device=device)
        t = len(target)
        with _eval_mode(self._module), torch.no_grad(), _recording(modules) as rec:
            out = _forward(self._module, x)
            sequence = out.ndim == x.ndim + 1
            if not sequence:
                for j in range(t - 1):
                    _forward(self._module, x[:, :len(prefix) + j])
        acts = {}
        for name, r in rec.items():
            if sequence:
                a = r.outputs[0]
                a = a.reshape(-1, a.shape[-1])[-t:]
            else:
                outs = r.outputs[1:] + r.outputs[:1]
                a = torch.cat([o.reshape(-1, o.shape[-1]) for o in outs], dim=0)
            acts[name] = a.double().cpu().numpy()
        return acts

    def _scores(self, acts):
        z, strength = {}, {}
        for name, a in acts.items():
            mu, sigma = self.mu_[name], self.sigma_[name]
            if self.aggregate == "max":
                dev = (a - mu) / sigma
                z[name] = (dev if self.signed else np.abs(dev)).max(axis=0)
                strength[name] = a.max(axis=0)
            else:
                stat = np.abs(a).mean(axis=0)
                dev = (stat - mu) / sigma
                z[name] = dev if self.signed else np.abs(dev)
                strength[name] = stat
        return z, strength

    # -------------------------------------------------------------- localisation
    def _oracle(self):
        return greedy_extraction_oracle if self.oracle is None else self.oracle

    def _memorized_under(self, neurons, prefix, target, scale):
        with NeuronMask(self._module, neurons, scale, widths=self.n_units_), \
                _eval_mode(self._module):
            return _check_verdict(self._oracle()(self.model, prefix, target))

    def _target_logits(self, prefix, target, grad_layers=()):
        """Teacher-forced logits (t, vocab) at the positions that predict the target.

        With ``grad_layers``, the outputs of those hooked layers are recorded as leaves
        that require a gradient (after any active mask): returns ``(logits, leaves)``.
        """
        modules = dict(self._module.named_modules())
        device = _model_device(self._module)
        seq = np.concatenate([prefix, target])
        n_p, t = len(prefix), len(target)
        leaves = {name: [] for name in grad_layers}

        def hook_for(name):
            def hook(_m, _i, out):
                leaf = out.detach().requires_grad_(True)
                leaves[name].append(leaf)
                return leaf
            return hook

        handles = [modules[n].register_forward_hook(hook_for(n)) for n in grad_layers]
        try:
            with _eval_mode(self._module), torch.set_grad_enabled(bool(grad_layers)):
                x = torch.as_tensor(seq[None, : n_p + t - 1], device=device)
                out = _forward(self._module, x)
                if out.ndim == x.ndim + 1:  # a sequence model: every position at once
                    logits = out[0, -t:]
                else:  # a window model: one pass per predicted token
                    for name in grad_layers:
                        leaves[name].clear()
                    logits = torch.stack([
                        _forward(self._module, x[:, : n_p + j])[0] for j in range(t)
                    ])
        finally:
            for h in handles:
                h.remove()
        return (logits, leaves) if grad_layers else logits

    @staticmethod
    def _margins(logits, target):
        """Per target position: the target's logit minus the best other one, and that
        competitor (its id)."""
        logits = logits.detach().double()
        idx = torch.as_tensor(target, device=logits.device)
        own = logits.gather(1, idx[:, None])[:, 0]
        other = logits.clone()
        other.scatter_(1, idx[:, None], -torch.inf)
        best, rival = other.max(dim=1)
        return (own - best).cpu().numpy(), rival.cpu().numpy()

    def _removal_effect(self, prefix, target, neurons, scale, position=None, rival=None):
        """First-order drop of one target position's margin when each unit is scaled.

        Under the mask ``neurons``, the margin ``logit[target] - logit[rival]`` at
        ``position`` (default: the position of the smallest margin and its best
        competitor) is differentiated with respect to every hooked unit; scaling unit
        ``u`` by ``scale`` lowers it by about ``(1 - scale) * sum_p a_u(p) dm/da_u(p)``
        (exact for a window model whose logits are linear in the hooked units).
        Returns ``(drop, margins, position, rival)`` with ``drop`` a dict
        layer -> (n_units,).
        """
        pairs = None if position is None else [(position, rival)]
        drops, _, pairs, margins = self._removal_effects(prefix, target, neurons, scale,
                                                         pairs)
        return drops[0], margins, pairs[0][0], pairs[0][1]

    def _removal_effects(self, prefix, target, neurons, scale, pairs=None, n_rivals=0):
        """:meth:`_removal_effect` for several ``(position, rival)`` margins at once.

        ``pairs=None`` takes the smallest margin and its best competitor; ``n_rivals > 0``
        adds, at every target position, the margins against its ``n_rivals`` strongest
        competitors. One forward pass; one backward pass per margin. Returns
        ``(drops, pair_margins, pairs, margins)``: ``drops`` a list (one dict
        layer -> (n_units,) per pair), ``pair_margins[i]`` the margin of ``pairs[i]``
        under the mask, ``margins`` the smallest margin of every target position.
        """
        mask = NeuronMask(self._module, neurons, scale, widths=self.n_units_)
        try:
            logits, leaves = self._target_logits(prefix, target, tuple(self.layers_))
        finally:
            mask.remove()
        margins, rivals = self._margins(logits, target)
        if pairs is None:
            position = int(np.argmin(margins))
            pairs = [(position, int(rivals[position]))]
        pairs = list(pairs)
        if n_rivals > 0:
            other = logits.detach().double().clone()
            idx = torch.as_tensor(target, device=other.device)
            other.scatter_(1, idx[:, None], -torch.inf)
            k = min(int(n_rivals), other.shape[1] - 1)
            top = torch.topk(other, k, dim=1).indices.cpu().numpy()
            pairs += [(p, int(r)) for p in range(len(target)) for r in top[p]
                      if (p, int(r)) not in pairs]
        leaf_list = [leaf for name in self.layers_ for leaf in leaves[name]]
        drops, pair_margins = [], []
        for i, (position, rival) in enumerate(pairs):
            m = logits[position, int(target[position])] - logits[position, rival]
            pair_margins.append(float(m.detach()))
            grads = torch.autograd.grad(m, leaf_list, allow_unused=True,
                                        retain_graph=i < len(pairs) - 1)
            drop, k = {}, 0
            for name in self.layers_:
                total = np.zeros(self.n_units_[name])
                for leaf in leaves[name]:
                    g = grads[k]
                    k += 1
                    if g is not None:
                        ag = (leaf.detach() * g).double()
                        total += ag.reshape(-1, ag.shape[-1]).sum(dim=0).cpu().numpy()
                drop[name] = (1.0 - scale) * total
            drops.append(drop)
        return drops, np.asarray(pair_margins), pairs, margins

    def _memorized_before(self, prefix, target):
        _check_ids(self._module, prefix, "prefixes[i]")
        _check_ids(self._module, target, "targets[i]")
        with _eval_mode(self._module):
            return _check_verdict(self._oracle()(self.model, prefix, target))

    def _localize_one(self, prefix, target, scale, memorized, others=(), pairs=()):
        result = dict(neurons=[], memorized_before=memorized, localized=False, theta=None,
                      n_initial=0, n_oracle_calls=1, z={})
        if not memorized:
            return result
        z, strength = self._scores(self._target_activations(prefix, target))
        result["z"] = z
        if self.method == "greedy":
            return self._greedy(prefix, target, scale, result)
        self._others = [(j, pairs[j][0], pairs[j][1]) for j in others]
        try:
            return self._threshold(prefix, target, scale, z, strength, result)
        finally:
            self._others = []

    def _greedy(self, prefix, target, scale, result):
        """Greedy margin search: add the unit whose removal most lowers the smallest
        target margin, until the oracle says the target is no longer reproduced."""
        calls = result["n_oracle_calls"]
        S = []
        cap = min(_GREEDY_CAP, sum(self.n_units_.values()))
        found = False
        while len(S) < cap:
            drop, _, _, _ = self._removal_effect(prefix, target, S, scale)
            taken = set(S)
            best, best_nu = -np.inf, None
            for name in self.layers_:
                d = drop[name].copy()
                for layer, unit in taken:
                    if layer == name:
                        d[unit] = -np.inf
                u = int(np.argmax(d))
                if d[u] > best:
                    best, best_nu = float(d[u]), (name, u)
            if best_nu is None:
                break
            S.append(best_nu)
            calls += 1
            if not self._memorized_under(sorted(S), prefix, target, scale):
                found = True
                break
        result["n_oracle_calls"] = calls
        if not found:
            return result
        result["n_initial"] = len(S)
        if self.refine and len(S) > 1:
            # a unit pass over the earlier picks (the last one was needed: without it
            # the set is the previous one, which still reproduced the target)
            keep = list(S)
            for nu in S[:-1]:
                candidate = [v for v in keep if v != nu]
                calls += 1
                if not self._memorized_under(sorted(candidate), prefix, target, scale):
                    keep = candidate
            S = keep
        result.update(neurons=sorted(S), localized=True, n_oracle_calls=calls)
        return result

    def _threshold(self, prefix, target, scale, z, strength, result):
        """NeMo's threshold search and refinement (see the class Notes)."""
        calls = result["n_oracle_calls"]
        self._check_schedule()
        theta_start, step = float(self.theta_start), float(self.theta_step)
        theta_min = float(self.theta_min)
        theta, k, j = theta_start, 0, 0
        all_z = np.concatenate([z[name] for name in self.layers_])
        found, tried = None, None
        while True:
            S = set()
            for name in self.layers_:
                S.update((name, int(u)) for u in np.flatnonzero(z[name] > theta))
                if k > 0:
                    top = np.argsort(-strength[name], kind="stable")[:k]
                    S.update((name, int(u)) for u in top)
            # an empty set deactivates nothing, and a set already tried gives the same
            # (deterministic) answer: neither needs an oracle call
            if S and S != tried:
                calls += 1
                tried = S
                if not self._memorized_under(sorted(S), prefix, target, scale):
                    found = S
                    break
            at_floor = theta <= theta_min
            if at_floor and (self.topk_step == 0 or k >= _TOPK_CAP):
                break
            j += 1
            below = all_z[all_z <= theta]
            nxt = below.max() if below.size else -np.inf
            if self.topk_step == 0 or k >= _TOPK_CAP:
                # the set changes only when theta passes below the next score: jump to
                # that step of the schedule (bounded time for any theta_start/theta_step)
                if nxt > theta_min:
                    j = max(j, int(np.floor((theta_start - nxt) / step)) + 1)
                else:
                    j = max(j, int(np.ceil((theta_start - theta_min) / step)))
            new_theta = max(theta_start - j * step, theta_min)
            if new_theta >= theta or (new_theta >= nxt > theta_min and (
                    self.topk_step == 0 or k >= _TOPK_CAP)):
                # the step is lost in rounding at this magnitude: move past the next
                # score (or to the floor) so that every pass changes the set or stops
                new_theta = max(np.nextafter(nxt, -np.inf), theta_min)
            theta = float(new_theta)
            k = min(k + int(self.topk_step), _TOPK_CAP)
        result["n_oracle_calls"] = calls
        if found is None:
            return result
        result["theta"] = theta
        result["n_initial"] = len(found)
        S = set(found)
        if self.refine:
            if len(self.layers_) > 1:  # (a) layer pass, last layer first
                for name in reversed(self.layers_):
                    candidate = {nu for nu in S if nu[0] != name}
                    if candidate == S or not candidate:
                        continue
                    calls += 1
                    if not self._memorized_under(sorted(candidate), prefix, target, scale):
                        S = candidate
            order, calls = self._ranked_prefix(prefix, target, scale, S, calls)
            # (c) unit pass, least effective first
            S = list(order)
            for nu in reversed(order):
                candidate = [v for v in S if v != nu]
                if not candidate:
                    continue
                calls += 1
                if not self._memorized_under(sorted(candidate), prefix, target, scale):
                    S = candidate
        result.update(neurons=sorted(S), localized=True, n_oracle_calls=calls)
        return result

    def _ranked_prefix(self, prefix, target, scale, S, calls):
        """Refinement step (b): rank the units of a breaking set ``S`` by how much their
        removal lowers a target margin, and keep the shortest breaking head of that
        ranking (bisection; the full set is known to break).

        Two rankings are tried: by the margin that ``S`` breaks (the position and
        competitor where extraction fails under ``S``), and by the margin, over every
        target position and its ``_N_RIVALS`` strongest competitors, that the fewest
        units of ``S`` are predicted to overturn (first order, on the unmasked model;
        exact for a window model). Each bisection starts at the predicted length. The
        shorter head is kept.

        Returns the kept units, most effective first, and the updated call count.
        """
        S = sorted(S)
        if len(S) < 2:
            return S, calls
        # the position and competitor at which the set breaks the target ...
        _, _, position, rival = self._removal_effect(prefix, target, S, scale)
        # ... and every unit's first-order effect on each margin, on the unmasked model
        drops, margins, _, _ = self._removal_effects(
            prefix, target, [], scale, [(position, rival)], n_rivals=_N_RIVALS)
        rankings = []
        for i, (drop, margin) in enumerate(zip(drops, margins, strict=True)):
            order = sorted(S, key=lambda nu, d=drop: (-d[nu[0]][nu[1]], nu))
            left = margin - np.cumsum([drop[layer][unit] for layer, unit in order])
            predicted = int(np.argmax(left < 0)) + 1 if (left < 0).any() else len(order)
            rankings.append((predicted, i, order))
        tried = [rankings[0]]
        best_other = min(rankings[1:], default=None)
        if best_other is not None and best_other[2] != rankings[0][2]:
            tried.append(best_other)
        best = None
        for predicted, _, order in tried:
            if best is not None and predicted >= len(best) > 1:
                # a head no shorter than the one kept would not replace it; only test
                # whether a shorter one breaks
                predicted = len(best) - 1
            head, calls = self._shortest_head(order, predicted, prefix, target, scale,
                                              calls, limit=None if best is None
                                              else len(best) - 1)
            if head is not None and (best is None or len(head) < len(best)):
                best = head
        others = getattr(self, "_others", [])
        if not others or len(S) < 2:
            return best, calls
        # (b') the other memorised pairs of this localize call: when the head also
        # breaks some of them, rank the set by specificity (the share of this target's
        # margin a unit removes, minus the largest share it removes of another pair's
        # smallest margin) and keep that head if it breaks fewer of them
        broken, calls = self._collateral(best, others, scale, calls)
        if broken == 0:
            return best, calls
        i_best = min(rankings)[1]
        drop, margin = drops[i_best], max(float(margins[i_best]), 1e-12)
        shares = [self._collateral_profile(j, p, t, scale) for j, p, t in others]

        def specific(nu):
            own = drop[nu[0]][nu[1]] / margin
            other = max(max(d[nu[0]][nu[1]], 0.0) / m for d, m in shares)
            return own - other

        order = sorted(S, key=lambda nu: (-specific(nu), nu))
        left = margin - np.cumsum([drop[layer][unit] for layer, unit in order])
        predicted = int(np.argmax(left < 0)) + 1 if (left < 0).any() else len(order)
        head, calls = self._shortest_head(order, predicted, prefix, target, scale, calls)
        if head is not None and head != best:
            broken_alt, calls = self._collateral(head, others, scale, calls)
            if (broken_alt, len(head)) < (broken, len(best)):
                best = head
        return best, calls

    def _collateral_profile(self, j, prefix, target, scale):
        """First-order drops of pair ``j``'s smallest margin (unmasked model) and that
        margin, cached for one localize call."""
        cache = self.__dict__.setdefault("_collateral_cache", {})
        if j not in cache:
            drop, margins, position, _ = self._removal_effect(prefix, target, [], scale)
            cache[j] = (drop, max(float(margins[position]), 1e-12))
        return cache[j]

    def _collateral(self, neurons, others, scale, calls):
        """How many of the other memorised pairs ``neurons`` stop (one oracle call each)."""
        broken = 0
        for _, p, t in others:
            calls += 1
            broken += not self._memorized_under(sorted(neurons), p, t, scale)
        return broken, calls

    def _shortest_head(self, order, guess, prefix, target, scale, calls, limit=None):
        """Bisection for the shortest head of ``order`` whose deactivation breaks the
        target, starting at ``guess``. The full ``order`` is known to break; with
        ``limit``, only heads of at most ``limit`` units are searched, and None is
        returned when the one of ``limit`` units does not break."""
        lo, hi = 1, len(order) if limit is None else min(limit, len(order))
        if hi < 1:
            return None, calls
        if limit is not None:
            calls += 1
            if self._memorized_under(sorted(order[:hi]), prefix, target, scale):
                return None, calls
        guess = min(max(int(guess), lo), hi)
        if guess < hi:
            calls += 1
            if self._memorized_under(sorted(order[:guess]), prefix, target, scale):
                lo = guess + 1
            else:
                hi = guess
        while lo < hi:
            mid = (lo + hi) // 2
            calls += 1
            if self._memorized_under(sorted(order[:mid]), prefix, target, scale):
                lo = mid + 1
            else:
                hi = mid
        return order[:hi], calls

    def localize(self, prefixes, targets):
        """Locate the units that carry each memorised ``(prefix, target)`` pair.

        Parameters
        ----------
        prefixes : list of array-like of int
            Token ids of each prompt.
        targets : list of array-like of int
            Token ids of each memorised continuation (the same number of pairs).

        Returns
        -------
        results : list of dict
            One per pair: ``neurons`` (list of ``(layer, unit)``), ``memorized_before``
            (pairs the model does not reproduce are skipped after one oracle call),
            ``localized``, ``theta`` (the threshold at which extraction first broke),
            ``n_initial`` (set size before refinement), ``n_oracle_calls`` and ``z``
            (layer to per-unit scores). They are also stored in ``results_``, and the
            union of their units in ``neurons_``.
        """
        check_is_fitted(self)
        prefixes, targets = list(prefixes), list(targets)
        if len(prefixes) != len(targets):
            raise ValueError(
                f"prefixes and targets must pair up: got {len(prefixes)} prefixes and "
                f"{len(targets)} targets."
            )
        scale = float(self.scale)
        pairs = [(_as_ids(p, "prefixes[i]"), _as_ids(t, "targets[i]"))
                 for p, t in zip(prefixes, targets, strict=True)]
        memorized = [self._memorized_before(p, t) for p, t in pairs]
        self._collateral_cache = {}
        try:
            results = [
                self._localize_one(
                    p, t, scale, memorized[i],
                    others=[j for j in range(len(pairs)) if j != i and memorized[j]],
                    pairs=pairs)
                for i, (p, t) in enumerate(pairs)
            ]
        finally:
            self._collateral_cache = {}
        self.results_ = results
        self.neurons_ = sorted({nu for r in results for nu in r["neurons"]})
        return results

    def results_to_json(self):
        """The per-sample located units as JSON (one list of ``[layer, unit]`` per pair).

        Returns
        -------
        text : str
            A JSON list with, per pair of the last :meth:`localize` call, an object with
            ``neurons``, ``memorized_before``, ``localized``, ``theta``, ``n_initial`` and
            ``n_oracle_calls``.
        """
        check_is_fitted(self)
        rows = [
            {
                "neurons": [[layer, unit] for layer, unit in r["neurons"]],
                **{k: r[k] for k in ("memorized_before", "localized", "theta", "n_initial",
                                     "n_oracle_calls")},
            }
            for r in self.results_
        ]
        return json.dumps(rows)

    def deactivate(self, neurons=None, scale=None):
        """Mask units with removable forward hooks.

        Parameters
        ----------
        neurons : list of (str, int), default=None
            Units to mask; None uses ``neurons_`` (all located units).
        scale : float, default=None
            Multiplier; None uses the ``scale`` parameter.

        Returns
        -------
        mask : NeuronMask
            Active until :meth:`NeuronMask.remove` or the end of its ``with`` block.
        """
        check_is_fitted(self)
        neurons = self.neurons_ if neurons is None else list(neurons)
        return NeuronMask(self._module, neurons, self.scale if scale is None else scale,
                          widths=self.n_units_)

    def random_control(self, neurons, random_state=None):
        """A matched random control: as many random units per layer as in ``neurons``.

        Parameters
        ----------
        neurons : list of (str, int)
            The units to match, for example one result's ``neurons``.
        random_state : int, RandomState instance or None, default=None
            Seed of the draw; None uses the ``random_state`` parameter.

        Returns
        -------
        control : list of (str, int)
            For each layer, the same number of distinct units, drawn uniformly from the
            layer's units outside ``neurons`` (from all units when too few remain).
        """
        check_is_fitted(self)
        seed = spawn_seeds(self.random_state if random_state is None else random_state, 1)[0]
        rng = check_random_generator(seed)
        by_layer = {}
        for layer, unit in neurons:
            if layer not in self.n_units_:
                raise ValueError(f"neurons: {layer!r} is not a hooked layer {self.layers_}.")
            by_layer.setdefault(layer, set()).add(int(unit))
        control = []
        for layer in self.layers_:
            units = by_layer.get(layer)
            if not units:
                continue
            pool = np.setdiff1d(np.arange(self.n_units_[layer]), sorted(units))
            if len(pool) < len(units):
                pool = np.arange(self.n_units_[layer])
            pick = rng.choice(pool, size=len(units), replace=False)
            control.extend((layer, int(u)) for u in np.sort(pick))
        return control

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.requires_fit = True
        return tags
