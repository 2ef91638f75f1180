"""Input validation helpers shared by the estimators.

Parameter validation itself goes through scikit-learn's ``_parameter_constraints``; the
helpers here check array contents that constraints cannot express.
"""


import numpy as np
from sklearn.utils import check_random_state


def check_probabilities(probas, *, name="probas", axis=-1, ndim=None, atol=1e-6):
    """Check that ``probas`` holds probability vectors along ``axis``.

    Parameters
    ----------
    probas : array-like
        Candidate probabilities.
    name : str, default="probas"
        Name used in error messages.
    axis : int, default=-1
        Axis along which each vector must sum to one.
    ndim : int, default=None
        Required number of dimensions, when not None.
    atol : float, default=1e-6
        Tolerance for the sum to one and for tiny negative entries.

    Returns
    -------
    probas : ndarray of float64
        A new array (the input is never modified), with entries clipped to ``[0, 1]``
        within ``atol`` and renormalised along ``axis``.

    Raises
    ------
    ValueError
        On NaN or infinite entries, negative entries, sums away from one, or the wrong
        number of dimensions.

    Examples
    --------
    >>> from sklearn_cispa.utils import check_probabilities
    >>> check_probabilities([[0.2, 0.8], [0.5, 0.5]]).shape
    (2, 2)
    >>> check_probabilities([[0.2, 0.9]])
    Traceback (most recent call last):
    ...
    ValueError: probas must sum to 1 along axis -1; found sums in [1.1, 1.1].
    """
    arr = np.array(probas, dtype=np.float64, copy=True)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array, got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}).")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    if np.any(arr < -atol) or np.any(arr > 1 + atol):
        raise ValueError(
            f"{name} must lie in [0, 1]; found values in [{arr.min():.3g}, {arr.max():.3g}]."
        )
    sums = arr.sum(axis=axis)
    if np.any(np.abs(sums - 1.0) > atol):
        raise ValueError(
            f"{name} must sum to 1 along axis {axis}; found sums in "
            f"[{sums.min():.3g}, {sums.max():.3g}]."
        )
    np.clip(arr, 0.0, 1.0, out=arr)
    arr /= arr.sum(axis=axis, keepdims=True)
    return arr


def check_min_samples(n_samples, min_samples, *, what):
    """Raise a ``ValueError`` when fewer than ``min_samples`` rows are given.

    Parameters
    ----------
    n_samples : int
        Rows available.
    min_samples : int
        Rows needed.
    what : str
        What needs them, for the message (for example ``"3 mixture components"``).

    Examples
    --------
    >>> from sklearn_cispa.utils import check_min_samples
    >>> check_min_samples(10, 5, what="the fit")
    >>> check_min_samples(3, 5, what="the fit")
    Traceback (most recent call last):
    ...
    ValueError: the fit needs at least 5 samples, got 3.
    """
    if n_samples < min_samples:
        raise ValueError(f"{what} needs at least {min_samples} samples, got {n_samples}.")


def check_random_generator(random_state):
    """Return a ``numpy.random.Generator`` derived from a scikit-learn ``random_state``.

    Methods that draw with the new numpy API (for example an augmentation callable that
    takes ``rng``) use this, so ``random_state`` keeps scikit-learn's meaning.

    Parameters
    ----------
    random_state : int, RandomState instance, Generator or None
        Source of randomness. A Generator is returned as is.

    Returns
    -------
    rng : numpy.random.Generator

    Examples
    --------
    >>> from sklearn_cispa.utils import check_random_generator
    >>> a = check_random_generator(0).normal(size=2)
    >>> b = check_random_generator(0).normal(size=2)
    >>> bool((a == b).all())
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    seed = check_random_state(random_state).randint(0, np.iinfo(np.int32).max)
    return np.random.default_rng(int(seed))
