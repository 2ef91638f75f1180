"""Torch device resolution and seeding from ``random_state``.

torch is imported inside the functions so that importing the package stays cheap.
"""

import contextlib

_DEVICE_HELP = "Use 'cpu', 'cuda', 'cuda:<index>' or 'auto' (CUDA when available, else CPU)."


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


def seed_from_random_state(random_state):
    """Draw one integer seed from ``random_state`` (transitional; use ``spawn_seeds``).

    Kept only until the call sites in the method modules are migrated: it is exactly
    ``spawn_seeds(random_state, 1)[0]``, the package's one seeding path.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        Source of randomness (scikit-learn convention).

    Returns
    -------
    seed : int
        ``spawn_seeds(random_state, 1)[0]``.

    Examples
    --------
    >>> from sklearn_cispa.utils import seed_from_random_state, spawn_seeds
    >>> seed_from_random_state(0) == spawn_seeds(0, 1)[0]
    True
    """
    from sklearn_cispa.utils._parallel import spawn_seeds

    return spawn_seeds(random_state, 1)[0]


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
    caller's RNG state.

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
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield
