"""Sign-In: the reparameterisation theta = mask * m * w for sparse training from scratch."""

import numbers

import torch
from sklearn.utils._param_validation import (
    Interval,
    validate_parameter_constraints,
    validate_params,
)
from skorch.callbacks import Callback
from torch import nn
from torch.nn.utils import parametrize

__all__ = ["SignIn", "SignInReset", "apply_sign_in", "merge_sign_in", "reset_sign_in"]

_BETA = Interval(numbers.Real, 0, None, closed="left")


def _check_beta(beta, name="beta"):
    validate_parameter_constraints({name: [_BETA]}, {name: beta}, caller_name="SignIn")
    return float(beta)


def _split(theta, beta):
    """(m, w) with m * w = theta, m**2 - w**2 = beta, m >= 0."""
    # hypot instead of sqrt(beta**2 + 4 theta**2): no underflow for tiny beta or theta
    root = torch.hypot(torch.as_tensor(beta, dtype=theta.dtype, device=theta.device), 2.0 * theta)
    m = torch.sqrt((beta + root) / 2.0)
    w = torch.where(m > 0, theta / torch.where(m > 0, m, torch.ones_like(m)), torch.zeros_like(m))
    return m, w


class SignIn(nn.Module):
    r"""Sign-In parametrization of a sparse weight: ``weight = mask * m * w``.

    Register it with :func:`torch.nn.utils.parametrize.register_parametrization` (or
    :func:`apply_sign_in`). The two factors ``m`` and ``w`` are trained instead of the
    weight; the split of a weight :math:`\theta` is
    :math:`m = \sqrt{(\beta + \sqrt{\beta^2 + 4\theta^2}) / 2}`, :math:`w = \theta / m`,
    so that :math:`m w = \theta`, :math:`m^2 - w^2 = \beta` and :math:`m > 0` (``w``
    carries the sign). Gradient flow on ``(m, w)`` gives
    :math:`\dot\theta = -\sqrt{\beta^2 + 4\theta^2}\,\partial L/\partial\theta`, which
    stays at least :math:`\beta` at :math:`\theta = 0`, so kept weights can change sign.

    Parameters
    ----------
    mask : torch.Tensor of bool
        Which entries of the weight are kept; it has the weight's shape and is stored as
        a buffer in the weight's dtype (it follows ``.to(device)``).
    beta : float, default=1.0
        The conserved quantity :math:`m^2 - w^2` (>= 0). ``beta=0`` freezes the signs
        (an ablation only).

    Attributes
    ----------
    mask : torch.Tensor
        The mask buffer (0/1 in the weight's dtype).
    beta : float
        The value of ``beta``.

    See Also
    --------
    apply_sign_in : Register it on several weights of a module.
    merge_sign_in : Remove it after training, leaving plain sparse weights.
    SignInReset : skorch callback that re-splits (m, w) periodically.
    reset_sign_in : The same re-split for plain torch loops.

    Notes
    -----
    Masked entries are split as :math:`\theta = 0` (:math:`m = \sqrt\beta`, ``w = 0``)
    and stay exactly zero in the weight.

    Conventions for ``beta``. Here ``beta`` is the conserved quantity
    :math:`m^2 - w^2` itself, which makes the split and the reset exact; the induced
    flow is :math:`\dot\theta = -\sqrt{\beta^2 + 4\theta^2}\,\nabla_\theta L`.
    This is the paper's definition: a summary of the NeurIPS 2025 version defines the
    inner scaling by :math:`m^2 - w^2 = \beta \mathbf{1}` and resets it to
    :math:`\beta = 1`, so a ``beta`` copied from the paper means the same thing here.
    The same summary writes the induced flow as :math:`\sqrt{\theta^2 + \beta}`,
    which does not follow from that definition (gradient flow on ``m`` and ``w`` gives
    :math:`m^2 + w^2 = \sqrt{\beta^2 + 4\theta^2}`); a value quoted for a flow of
    that form, :math:`\sqrt{\theta^2 + \beta'}`, is ``beta = 2 * sqrt(beta')``, and
    one quoted as the :math:`\gamma` of the mirror-flow papers' inverse metric
    :math:`\sqrt{\theta^2 + \gamma^2}` is ``beta = 2 * gamma`` (time scaled by 2).
    (The paper's own method section could not be read for this release; the reset
    to ``beta = 1`` and the definition come from that summary.)
    Parametrized modules cannot be pickled: call :func:`merge_sign_in` after training.

    References
    ----------
    .. [1] A. Gadhikar, T. Jacobs, C. Zhou, R. Burkholz. "Sign-In to the Lottery:
       Reparameterizing Sparse Training From Scratch", arXiv:2504.12801, 2025.

    Examples
    --------
    >>> import torch
    >>> from torch.nn.utils import parametrize
    >>> from sklearn_cispa.neural import SignIn
    >>> layer = torch.nn.Linear(3, 2)
    >>> theta = layer.weight.detach().clone()
    >>> mask = torch.ones_like(theta, dtype=torch.bool)
    >>> _ = parametrize.register_parametrization(layer, "weight", SignIn(mask, beta=1.0))
    >>> m, w = layer.parametrizations.weight.original0, layer.parametrizations.weight.original1
    >>> bool(torch.allclose(m * w, theta)), bool(torch.allclose(m**2 - w**2, torch.ones(2, 3)))
    (True, True)
    """

    def __init__(self, mask, beta=1.0):
        super().__init__()
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError("mask must be a bool torch.Tensor.")
        self.beta = _check_beta(beta)
        self.register_buffer("mask", mask.detach().clone().to(torch.get_default_dtype()))

    def extra_repr(self):
        return f"beta={self.beta}, sparsity={1.0 - float(self.mask.mean()):.3g}"

    def forward(self, m, w):
        """Return ``mask * m * w``."""
        return self.mask * m * w

    @torch.no_grad()
    def right_inverse(self, theta):
        """Split ``theta`` (masked entries as 0) into ``(m, w)``."""
        if theta.shape != self.mask.shape:
            raise ValueError(
                f"mask has shape {tuple(self.mask.shape)}, the weight {tuple(theta.shape)}."
            )
        if self.mask.dtype != theta.dtype or self.mask.device != theta.device:
            self.mask = self.mask.to(dtype=theta.dtype, device=theta.device)
        m, w = _split(theta * self.mask, self.beta)
        return m, w


def _sign_in_entries(module):
    """Yield (owner, tensor name, SignIn, ParametrizationList) for every SignIn in module."""
    for sub in module.modules():
        if not parametrize.is_parametrized(sub):
            continue
        for tensor_name, plist in sub.parametrizations.items():
            for p in plist:
                if isinstance(p, SignIn):
                    yield sub, tensor_name, p, plist


@validate_params(
    {"module": [nn.Module], "masks": [dict], "beta": [_BETA, dict]},
    prefer_skip_nested_validation=True,
)
def apply_sign_in(module, masks, beta=1.0):
    """Register :class:`SignIn` on each masked weight of ``module``.

    Parameters
    ----------
    module : torch.nn.Module
        The network; its weights give the initial split.
    masks : dict of str to torch.Tensor
        Maps names from ``module.named_parameters()`` (e.g. ``"layers.0.weight"``) to bool
        tensors of the parameter's shape (e.g. from
        :func:`sklearn_cispa.pruning.prune_at_init`).
    beta : float or dict of str to float, default=1.0
        The conserved :math:`m^2 - w^2`, one value or one per name of ``masks``.

    Returns
    -------
    module : torch.nn.Module
        The same module, now with ``parametrizations.<name>.original0`` (m) and
        ``original1`` (w) as new Parameters: build the optimizer afterwards.

    Raises
    ------
    ValueError
        For unknown names, wrong shapes or tensors already parametrized.

    See Also
    --------
    SignIn, merge_sign_in

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.neural import apply_sign_in
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    >>> masks = {"0.weight": torch.rand(8, 4) < 0.5, "2.weight": torch.ones(2, 8, dtype=bool)}
    >>> x = torch.randn(5, 4)
    >>> masked = net[0].weight.detach() * masks["0.weight"]
    >>> _ = apply_sign_in(net, masks, beta=1.0)
    >>> bool(torch.allclose(net[0].weight, masked))
    True
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}.")
    if not isinstance(masks, dict):
        raise TypeError(f"masks must be a dict of name -> bool tensor, got {type(masks).__name__}.")
    params = dict(module.named_parameters())
    if isinstance(beta, dict):
        unknown = set(beta) - set(masks)
        if unknown:
            raise ValueError(f"beta names {sorted(unknown)} are not in masks.")
        betas = {name: _check_beta(beta.get(name, 1.0), f"beta[{name!r}]") for name in masks}
    else:
        b = _check_beta(beta)
        betas = dict.fromkeys(masks, b)
    plan = []
    for name, mask in masks.items():
        if not isinstance(name, str):
            raise TypeError(f"masks keys must be parameter names, got {name!r}.")
        owner_name, _, attr = name.rpartition(".")
        try:
            owner = module.get_submodule(owner_name) if owner_name else module
        except AttributeError:
            owner = None
        if ".parametrizations." in f".{name}" or (
            owner is not None
            and (parametrize.is_parametrized(owner, attr) or hasattr(owner, attr + "_orig"))
        ):
            raise ValueError(f"{name!r} is already parametrized or pruned.")
        if name not in params:
            raise ValueError(
                f"{name!r} is not a parameter of the module; names look like {list(params)[:3]}."
            )
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"masks[{name!r}] must be a bool torch.Tensor.")
        if mask.shape != params[name].shape:
            raise ValueError(
                f"masks[{name!r}] has shape {tuple(mask.shape)}, the parameter "
                f"{tuple(params[name].shape)}."
            )
        plan.append((owner, attr, mask, betas[name]))
    for owner, attr, mask, b in plan:
        weight = getattr(owner, attr)
        sign_in = SignIn(mask.to(weight.device), beta=b).to(
            dtype=weight.dtype, device=weight.device
        )
        parametrize.register_parametrization(owner, attr, sign_in)
    return module


@validate_params({"module": [nn.Module]}, prefer_skip_nested_validation=True)
def merge_sign_in(module):
    """Remove every :class:`SignIn`, leaving ordinary (sparse) weights in place.

    Parameters
    ----------
    module : torch.nn.Module
        A module with SignIn parametrizations (others are left alone).

    Returns
    -------
    module : torch.nn.Module
        The same module; each weight is the Parameter ``mask * m * w`` (masked entries
        exactly 0), and the module pickles again. Use it after training only.

    See Also
    --------
    apply_sign_in

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.neural import apply_sign_in, merge_sign_in
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 2))
    >>> _ = apply_sign_in(net, {"0.weight": torch.tensor([[True, False] * 2] * 2)})
    >>> _ = merge_sign_in(net)
    >>> type(net[0].weight).__name__, float(net[0].weight.detach()[0, 1])
    ('Parameter', 0.0)
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}.")
    targets = {(id(sub), name): (sub, name) for sub, name, _, _ in _sign_in_entries(module)}
    for sub, name in targets.values():
        parametrize.remove_parametrizations(sub, name, leave_parametrized=True)
    return module


@validate_params(
    {"module": [nn.Module], "optimizer": [torch.optim.Optimizer, None]},
    prefer_skip_nested_validation=True,
)
@torch.no_grad()
def reset_sign_in(module, optimizer=None):
    """Re-split every :class:`SignIn` weight so that ``m**2 - w**2 = beta`` again.

    The weight ``mask * m * w`` is unchanged; ``m`` and ``w`` are written in place (the
    Parameter objects stay the same) and, when ``optimizer`` is given, their optimizer
    state is deleted (it refers to the old split).

    Parameters
    ----------
    module : torch.nn.Module
        A module with SignIn parametrizations.
    optimizer : torch.optim.Optimizer, default=None
        Optimizer whose state for ``m`` and ``w`` is cleared.

    Returns
    -------
    n_reset : int
        Number of weights re-split.

    See Also
    --------
    SignInReset : The skorch callback that calls it periodically.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.neural import apply_sign_in, reset_sign_in
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 2))
    >>> _ = apply_sign_in(net, {"0.weight": torch.ones(2, 3, dtype=torch.bool)})
    >>> pl = net[0].parametrizations.weight
    >>> with torch.no_grad():
    ...     _ = pl.original0.mul_(0.5)
    ...     _ = pl.original1.mul_(2.0)
    >>> reset_sign_in(net)
    1
    >>> bool(torch.allclose(pl.original0**2 - pl.original1**2, torch.ones(2, 3)))
    True
    """
    n = 0
    for _sub, _name, sign_in, plist in _sign_in_entries(module):
        m, w = plist.original0, plist.original1
        theta = sign_in.mask * m * w
        new_m, new_w = _split(theta, sign_in.beta)
        m.copy_(new_m)
        w.copy_(new_w)
        if optimizer is not None:
            for p in (m, w):
                optimizer.state.pop(p, None)
        n += 1
    return n


def _masked_weights(module):
    """{id: (SignIn, theta)} with theta = mask * m * w for every SignIn weight."""
    out = []
    for _sub, _name, sign_in, plist in _sign_in_entries(module):
        with torch.no_grad():
            theta = sign_in.mask * plist.original0 * plist.original1
        out.append((sign_in, theta))
    return out


class SignInReset(Callback):
    """skorch callback that periodically re-splits every :class:`SignIn` weight.

    At the end of every 1-based epoch ``e`` with ``e % every == 0`` it calls
    :func:`reset_sign_in` on ``net.module_`` and deletes ``net.optimizer_``'s state of
    the ``m`` and ``w`` factors. Every epoch it records ``"sign_flip_fraction"``: the
    fraction of kept weights whose sign differs from the start of training.

    Parameters
    ----------
    every : int, default=10
        Epochs between resets (>= 1).

    Attributes
    ----------
    n_resets_ : int
        Resets done in the current training run.

    See Also
    --------
    reset_sign_in, apply_sign_in

    Notes
    -----
    The reset period of 10 epochs, the initial split from the initial weights and the
    deletion of the optimizer state are inferred (the paper gives no period).

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from skorch import NeuralNetClassifier
    >>> from sklearn_cispa.neural import SignInReset, apply_sign_in
    >>> module = torch.nn.Linear(4, 2)
    >>> _ = apply_sign_in(module, {"weight": torch.ones(2, 4, dtype=torch.bool)})
    >>> X = np.random.RandomState(0).randn(30, 4).astype("float32")
    >>> y = (X[:, 0] > 0).astype("int64")
    >>> net = NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss, max_epochs=4,
    ...                           train_split=None, verbose=0, callbacks=[SignInReset(every=2)])
    >>> net.fit(X, y).callbacks[0].n_resets_
    2
    """

    def __init__(self, every=10):
        self.every = every

    def initialize(self):
        every = self.every
        if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
            raise ValueError(f"every must be an int >= 1, got {every!r}.")
        self.n_resets_ = 0
        return self

    def on_train_begin(self, net, **kwargs):
        self.n_resets_ = 0
        self._initial_signs = [torch.sign(theta) for _, theta in _masked_weights(net.module_)]

    def on_epoch_end(self, net, **kwargs):
        signs = getattr(self, "_initial_signs", None)
        current = _masked_weights(net.module_)
        if signs is not None and len(signs) == len(current):
            flipped, kept = 0, 0
            for s0, (sign_in, theta) in zip(signs, current):
                keep = sign_in.mask.bool()
                flipped += int(((torch.sign(theta) != s0) & keep).sum())
                kept += int(keep.sum())
            net.history.record("sign_flip_fraction", flipped / max(kept, 1))
        epoch = len(net.history)
        if epoch % self.every == 0:
            reset_sign_in(net.module_, getattr(net, "optimizer_", None))
            self.n_resets_ += 1

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_initial_signs", None)
        return state
