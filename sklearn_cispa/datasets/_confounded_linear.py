"""The linear confounded simulation of Akbar et al. (NeurIPS 2025)."""

import numbers

from scipy import linalg
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_cispa.utils import check_random_generator

__all__ = ["make_confounded_linear"]


@validate_params(
    {
        "n_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_features": [Interval(numbers.Integral, 2, None, closed="left")],
        "confounding": [Interval(numbers.Real, 0, None, closed="left")],
        "scale": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_confounded_linear(
    n_samples=2048, n_features=32, confounding=1.0, *, scale=1.0, random_state=None
):
    """Draw the paper's linear simulation with a hidden confounder and its oracle augmentation.

    With ``d = n_features`` treatments and ``d`` hidden confounders:
    ``C ~ N(0, I_d)``, ``X = C W_CX + 0.1 e_X`` and
    ``y = X f + confounding * C w_CY + 0.1 e_y``, where ``W_CX``, ``w_CY`` and ``f`` have
    i.i.d. standard normal entries and ``e_X``, ``e_y`` are standard normal noise. The
    returned augmentation translates ``X`` along an orthonormal basis of the null space
    of ``f^T``, so it leaves ``X f`` unchanged (an oracle: it needs the true ``f``).

    Parameters
    ----------
    n_samples : int, default=2048
        Number of samples.
    n_features : int, default=32
        Number of treatments (and of hidden confounders), at least 2.
    confounding : float, default=1.0
        Strength ``kappa`` of the confounding of ``y`` (0 means no confounding; the
        paper uses values in [0, 1]).
    scale : float, default=1.0
        Step size ``gamma`` of the returned :class:`~sklearn_cispa.causal.NullSpaceTranslation`.
    random_state : int, RandomState instance or None, default=None
        Seeds the structural coefficients and the samples.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Treatments.
    y : ndarray of shape (n_samples,)
        Outcome.
    f_true : ndarray of shape (n_features,)
        The causal coefficients.
    augmentation : NullSpaceTranslation
        Outcome-invariant augmentation with directions spanning ``null(f_true^T)``,
        shape ``(n_features - 1, n_features)``.

    See Also
    --------
    sklearn_cispa.causal.AugmentedIVRegressor : Regressor that uses the augmentation.

    References
    ----------
    .. [1] U. Akbar et al., "An Analysis of Causal Effect Estimation using Outcome
       Invariant Data Augmentation", NeurIPS 2025, arXiv:2510.25128.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.datasets import make_confounded_linear
    >>> X, y, f, aug = make_confounded_linear(n_samples=100, n_features=5, random_state=0)
    >>> X.shape, y.shape, f.shape, np.shape(aug.directions)
    ((100, 5), (100,), (5,), (4, 5))
    >>> bool(np.allclose(np.asarray(aug.directions) @ f, 0.0))
    True
    """
    from sklearn_cispa.causal._augmentations import NullSpaceTranslation

    rng = check_random_generator(random_state)
    d = int(n_features)
    w_cxy = rng.standard_normal((d, d + 1))
    w_cx, w_cy = w_cxy[:, :d], w_cxy[:, d]
    f_true = rng.standard_normal(d)
    C = rng.standard_normal((n_samples, d))
    noise = 0.1 * rng.standard_normal((n_samples, d + 1))
    X = C @ w_cx + noise[:, :d]
    y = X @ f_true + confounding * (C @ w_cy) + noise[:, d]
    directions = linalg.null_space(f_true.reshape(1, -1)).T
    return X, y, f_true, NullSpaceTranslation(directions=directions, scale=float(scale))
