"""Input validation helpers shared by the estimators.

Parameter validation itself goes through scikit-learn's ``_parameter_constraints``; the
helpers here check array contents that constraints cannot express.
"""

import numbers

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


def _bound_text(low, high, closed):
    if low is not None and high is not None:
        left = "[" if closed[0] else "("
        right = "]" if closed[1] else ")"
        return f"in {left}{low}, {high}{right}"
    if low is not None:
        return f"a finite number {'>=' if closed[0] else '>'} {low}"
    if high is not None:
        return f"a finite number {'<=' if closed[1] else '<'} {high}"
    return "a finite number"


def check_real(value, *, name, low=None, high=None, closed=(True, True)):
    """Check that a scalar is a finite real number in a range (transitional).

    Being removed: hyperparameters use ``_parameter_constraints`` (``Interval``),
    public functions ``validate_params``, internal values ``sklearn.utils.check_scalar``.

    Parameters
    ----------
    value : float
        The value. Booleans are refused, as are NaN and infinities.
    name : str
        Its name, for the messages.
    low, high : float, default=None
        Bounds of the allowed range; None leaves that side open-ended.
    closed : tuple of bool, default=(True, True)
        Whether ``low`` and ``high`` themselves are allowed.

    Returns
    -------
    value : float

    Raises
    ------
    TypeError
        When ``value`` is not a real number.
    ValueError
        When it is not finite or lies outside the range; the message states the range.

    Examples
    --------
    >>> from sklearn_cispa.utils import check_real
    >>> check_real(0.5, name="sigma", low=0, closed=(False, True))
    0.5
    >>> check_real(-1, name="radius", low=0)
    Traceback (most recent call last):
    ...
    ValueError: radius must be a finite number >= 0, got -1.0.
    >>> check_real(1.0, name="sparsity", low=0, high=1, closed=(True, False))
    Traceback (most recent call last):
    ...
    ValueError: sparsity must be in [0, 1), got 1.0.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    value = float(value)
    ok = bool(np.isfinite(value))
    if low is not None:
        ok = ok and (value >= low if closed[0] else value > low)
    if high is not None:
        ok = ok and (value <= high if closed[1] else value < high)
    if not ok:
        raise ValueError(f"{name} must be {_bound_text(low, high, closed)}, got {value!r}.")
    return value


def check_in_unit_interval(value, *, name, closed=(False, False)):
    """Check a scalar lies in (0, 1), with optionally closed ends (transitional).

    Being removed with :func:`check_real`: use ``Interval(Real, 0, 1, closed=...)``.

    Parameters
    ----------
    value : float
        The value.
    name : str
        Its name, for the message.
    closed : tuple of bool, default=(False, False)
        Whether 0 and 1 are allowed.

    Returns
    -------
    value : float

    Examples
    --------
    >>> from sklearn_cispa.utils import check_in_unit_interval
    >>> check_in_unit_interval(0.1, name="alpha")
    0.1
    >>> check_in_unit_interval(1.0, name="alpha")
    Traceback (most recent call last):
    ...
    ValueError: alpha must be in (0, 1), got 1.0.
    """
    return check_real(value, name=name, low=0, high=1, closed=closed)


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
