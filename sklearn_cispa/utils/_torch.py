"""Torch device resolution and seeding from ``random_state``.

torch is imported inside the functions so that importing the package stays cheap.
"""

import contextlib
import threading

_DEVICE_HELP = "Use 'cpu', 'cuda', 'cuda:<index>' or 'auto' (CUDA when available, else CPU)."
# torch's global RNG is one per process, shared by its threads: a block that seeds it and
# draws from it (initialisation, dropout over a whole training loop) holds this lock, so
# that tasks run on threads (joblib's threading backend, Dask workers with
# processes=False) draw what they would draw one after another
_GLOBAL_RNG_LOCK = threading.RLock()


def resolve_device(device="auto"):
    """Turn a ``device`` hyperparameter into a torch device string.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"} or str, default="auto"
        ``"auto"`` (or None) picks ``"cuda"`` when torch sees a GPU and ``"cpu"``
        otherwise. ``"cuda"`` or ``"cuda:<index>"`` raise a ``ValueError`` when no GPU
        is available, rather than silently training elsewhere.

    Returns
    -------
    device : str
        A string torch accepts, for example ``"cpu"`` or ``"cuda:0"``.

    Examples
    --------
    >>> from sklearn_cispa.utils import resolve_device
    >>> resolve_device("cpu")
    'cpu'
    >>> resolve_device("auto") in {"cpu", "cuda"}
    True
    """
    import torch

    if device is None or device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not isinstance(device, str | torch.device):
        raise TypeError(f"device must be a string, got {type(device).__name__}. {_DEVICE_HELP}")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ValueError(f"Unknown device {device!r}. {_DEVICE_HELP}") from exc
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but torch sees no CUDA device "
                f"(torch {torch.__version__}). Use device='cpu' or device='auto'."
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r}: only {torch.cuda.device_count()} CUDA device(s) present."
            )
    elif dev.type not in {"cpu", "mps", "xpu"}:
        raise ValueError(f"Unsupported device {device!r}. {_DEVICE_HELP}")
    return str(device)


def torch_generator(seed, device="cpu"):
    """Return a ``torch.Generator`` on ``device`` seeded with ``seed``.

    Parameters
    ----------
    seed : int
        Seed, for example ``spawn_seeds(random_state, 1)[0]``.
    device : str, default="cpu"
        Device of the generator.

    Returns
    -------
    generator : torch.Generator
        A private generator; the global torch RNG is left alone.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.utils import torch_generator
    >>> a = torch.rand(2, generator=torch_generator(3))
    >>> b = torch.rand(2, generator=torch_generator(3))
    >>> bool(torch.equal(a, b))
    True
    """
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(int(seed))
    return gen


@contextlib.contextmanager
def torch_rng_context(seed, device="cpu"):
    """Seed torch's global RNG inside the block and restore it afterwards.

    Module initialisation in torch (and skorch's ``initialize``) draws from the global
    RNG. This context makes that reproducible from ``seed`` without changing the
    caller's RNG state. The global RNG is shared by the threads of a process, so the
    block holds a process-wide lock: blocks on other threads (parallel tasks on a
    thread-based backend) wait for it rather than draw from the same RNG at once.

    Parameters
    ----------
    seed : int
        Seed for the block.
    device : str, default="cpu"
        When a CUDA device, its RNG is forked and seeded too.

    Yields
    ------
    None

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.utils import torch_rng_context
    >>> with torch_rng_context(0):
    ...     a = torch.rand(2)
    >>> with torch_rng_context(0):
    ...     b = torch.rand(2)
    >>> bool(torch.equal(a, b))
    True
    """
    import torch

    devices = []
    if str(device).startswith("cuda") and torch.cuda.is_available():
        index = torch.device(device).index
        devices = [index if index is not None else torch.cuda.current_device()]
    with _GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


@contextlib.contextmanager
def eval_mode(module, enabled=True):
    """Put a torch module in evaluation mode inside the block and restore its mode after.

    Dropout and other train-time behaviour are off inside the block; on leaving it,
    normally or by an exception, the module is back in the mode it had on entering,
    so a caller who was training it can go on training.

    Parameters
    ----------
    module : torch.nn.Module
        The module.
    enabled : bool, default=True
        When False the mode is left as it is inside the block (it is still restored
        on leaving, in case the block changes it).

    Yields
    ------
    module : torch.nn.Module
        The same module.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.utils import eval_mode
    >>> net = torch.nn.Dropout(0.5)
    >>> with eval_mode(net):
    ...     inside = net.training
    >>> inside, net.training
    (False, True)
    """
    was_training = module.training
    if enabled:
        module.eval()
    try:
        yield module
    finally:
        module.train(was_training)


def check_finite_training(loss, *, epoch=None, estimator="the estimator", module=None):
    """Raise a ``ValueError`` when a training loss (or a module's parameters) is not finite.

    The one divergence test of the package's torch estimators, for skorch nets (through
    :class:`DivergenceCheck`) and for plain torch loops alike. A diverging fit is an
    error rather than a warning: a model whose loss became NaN or inf has NaN or inf
    weights, and its predictions would be NaN (or one constant class) without notice.
    scikit-learn's MLP raises in the same situation.

    Parameters
    ----------
    loss : float, torch.Tensor or None
        The training loss just computed (a scalar). None skips the loss test.
    epoch : int, default=None
        1-based epoch number, quoted in the message.
    estimator : str, default="the estimator"
        Name quoted in the message.
    module : torch.nn.Module, default=None
        When given, its parameters must be finite too.

    Raises
    ------
    ValueError
        When ``loss`` or a parameter of ``module`` is NaN or infinite. The message
        names the epoch and the usual remedies (a smaller learning rate, standardised
        features).

    Examples
    --------
    >>> from sklearn_cispa.utils._torch import check_finite_training
    >>> check_finite_training(0.25, epoch=3)
    >>> try:
    ...     check_finite_training(float("nan"), epoch=4, estimator="MLPNetClassifier")
    ... except ValueError as exc:
    ...     print(str(exc).split(":")[0])
    MLPNetClassifier diverged at epoch 4
    """
    import math

    import torch

    where = f" at epoch {epoch}" if epoch is not None else ""
    hint = "Lower the learning rate `lr` or standardise the inputs; no model was kept."
    if loss is not None:
        value = float(loss.detach()) if torch.is_tensor(loss) else float(loss)
        if not math.isfinite(value):
            raise ValueError(
                f"{estimator} diverged{where}: the training loss is {value}. {hint}"
            )
    if module is not None:
        for name, p in module.named_parameters():
            if not bool(torch.isfinite(p.detach()).all()):
                raise ValueError(
                    f"{estimator} diverged{where}: parameter {name!r} holds NaN or inf "
                    f"values. {hint}"
                )


class DivergenceCheck:
    """skorch callback: stop training with a ``ValueError`` once the loss is not finite.

    At the end of every epoch it reads the epoch's ``train_loss`` from the net's
    history and calls :func:`check_finite_training` on it (and, at the end of training,
    on the module's parameters). It needs no extra device synchronisation: skorch has
    already turned the loss into a float.

    Written without importing skorch (it has every method skorch calls on a callback),
    so that importing :mod:`sklearn_cispa.utils` stays free of torch and skorch.

    Parameters
    ----------
    estimator : str, default="the estimator"
        Name quoted in the error message.

    See Also
    --------
    check_finite_training : The test it runs, for plain torch loops.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from skorch import NeuralNetClassifier
    >>> from sklearn_cispa.utils._torch import DivergenceCheck
    >>> X = np.random.RandomState(0).randn(40, 3).astype("float32") * 1e6
    >>> y = (X[:, 0] > 0).astype("int64")
    >>> net = NeuralNetClassifier(torch.nn.Linear(3, 2), optimizer=torch.optim.SGD, lr=1e30,
    ...                           max_epochs=5, train_split=None, verbose=0,
    ...                           callbacks=[DivergenceCheck()])
    >>> try:
    ...     net.fit(X, y)
    ... except ValueError as exc:
    ...     print("diverged" in str(exc))
    True
    """

    def __init__(self, estimator="the estimator"):
        self.estimator = estimator

    def get_params(self, deep=True):
        """Parameters of the callback (skorch's callback protocol)."""
        return {"estimator": self.estimator}

    def set_params(self, **params):
        """Set parameters (skorch's callback protocol)."""
        for key, value in params.items():
            if key != "estimator":
                raise ValueError(f"Invalid parameter {key!r} for DivergenceCheck.")
            setattr(self, key, value)
        return self

    def initialize(self):
        """Nothing to reset; returns self (skorch's callback protocol)."""
        return self

    def on_epoch_end(self, net, **kwargs):
        """Raise when the epoch's training loss is not finite."""
        row = net.history[-1]
        check_finite_training(
            row.get("train_loss"), epoch=len(net.history), estimator=self.estimator
        )

    def on_train_end(self, net, **kwargs):
        """Raise when a parameter of the trained module is not finite."""
        module = getattr(net, "module_", None)
        if module is not None:
            check_finite_training(None, estimator=self.estimator, module=module)

    def on_train_begin(self, net, **kwargs):  # noqa: D102 - protocol no-ops
        pass

    def on_epoch_begin(self, net, **kwargs):  # noqa: D102
        pass

    def on_batch_begin(self, net, **kwargs):  # noqa: D102
        pass

    def on_batch_end(self, net, **kwargs):  # noqa: D102
        pass

    def on_grad_computed(self, net, named_parameters, **kwargs):  # noqa: D102
        pass
