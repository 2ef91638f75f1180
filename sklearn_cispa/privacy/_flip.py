"""Per-sample flip rate of membership decisions across retrained targets."""

import numbers
import warnings

import numpy as np
from scipy.stats import binomtest
from sklearn.utils._param_validation import Interval, validate_params


@validate_params(
    {"decisions": ["array-like"], "mask": ["array-like", None]},
    prefer_skip_nested_validation=True,
)
def flip_rate(decisions, mask=None):
    """Probability that two different targets disagree on an example's membership.

    ``decisions[r, x]`` is target ``r``'s membership decision on example ``x`` (each
    target thresholded at a fixed FPR on its own non-members). With ``k`` positive
    decisions among the ``B_x`` targets selected by ``mask`` for ``x``,
    ``flip(x) = Pr_{r != r'}[b_r(x) != b_r'(x)] = 2 k (B_x - k) / (B_x (B_x - 1))``:
    0 when the targets agree, about 0.5 when the decision is a coin flip.

    Parameters
    ----------
    decisions : array-like of shape (n_models, n_samples)
        Binary decisions (bool or 0/1).
    mask : array-like of bool, shape (n_models, n_samples), default=None
        The targets that count for each example (for example those that trained on
        it); all targets by default.

    Returns
    -------
    flip : ndarray of shape (n_samples,)
        Flip rates in ``[0, 1]``; NaN (with a warning) for examples selected by fewer
        than two targets.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.privacy import flip_rate
    >>> d = np.array([[1, 0, 1], [1, 1, 0], [1, 0, 1], [1, 1, 0]])
    >>> flip_rate(d)
    array([0.        , 0.66666667, 0.66666667])
    """
    decisions = np.asarray(decisions)
    if decisions.ndim != 2:
        raise ValueError(f"decisions must be 2-d (n_models, n_samples); got {decisions.shape}.")
    if not np.all(np.isin(decisions, (0, 1))):
        raise ValueError("decisions must hold booleans or 0/1.")
    decisions = decisions.astype(bool)
    if mask is None:
        mask = np.ones_like(decisions)
    else:
        mask = np.asarray(mask)
        if mask.shape != decisions.shape:
            raise ValueError(f"mask has shape {mask.shape}; decisions has {decisions.shape}.")
        if not np.all(np.isin(mask, (0, 1))):
            raise ValueError("mask must hold booleans or 0/1.")
        mask = mask.astype(bool)
    b = mask.sum(axis=0).astype(np.float64)
    k = (decisions & mask).sum(axis=0).astype(np.float64)
    too_few = b < 2
    if np.any(too_few):
        warnings.warn(
            f"{int(too_few.sum())} example(s) are selected by fewer than 2 models; their "
            "flip rate is undefined (NaN).",
            UserWarning,
            stacklevel=2,
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        flip = 2.0 * k * (b - k) / (b * (b - 1.0))
    return np.where(too_few, np.nan, flip)


@validate_params(
    {
        "n_models": [Interval(numbers.Integral, 2, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, 1, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def flip_rate_cutoff(n_models, alpha=0.05):
    """Flip rate above which an example's membership decision is a coin flip.

    The cut is the flip rate ``2 k (B - k) / (B (B - 1))`` at the smallest count ``k``
    of positive decisions among ``B = n_models`` for which the exact two-sided binomial
    test of ``theta = 1/2`` does not reject at level ``alpha`` (p-value above
    ``alpha``). Examples at or above it cannot be told apart from a fair coin. The
    p-value grows with ``k`` up to ``B / 2``, so ``k`` is found by bisection: about
    ``log2(B)`` binomial tests, for any ``B``.

    Parameters
    ----------
    n_models : int
        Number of targets ``B`` (at least 2).
    alpha : float in (0, 1), default=0.05
        Level of the binomial test.

    Returns
    -------
    cutoff : float
        The flip-rate cut in ``[0, 1]``.

    Examples
    --------
    >>> from sklearn_cispa.privacy import flip_rate_cutoff
    >>> round(flip_rate_cutoff(127), 4)
    0.4874
    """
    b = int(n_models)
    half = b // 2

    def accepts(k):
        return binomtest(k, b, 0.5).pvalue > alpha

    # the two-sided p-value of theta = 1/2 grows with k up to b // 2, where it is 1:
    # bisect for the smallest accepted count (O(log B) tests, not B / 2)
    lo, hi = 0, half
    while lo < hi:
        mid = (lo + hi) // 2
        if accepts(mid):
            hi = mid
        else:
            lo = mid + 1
    return 2.0 * lo * (b - lo) / (b * (b - 1.0))
