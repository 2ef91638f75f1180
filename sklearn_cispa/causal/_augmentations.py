"""Parameterised data augmentations for :class:`AugmentedIVRegressor`.

An augmentation maps a design matrix ``X`` to an augmented ``X_aug`` of the same shape and
returns the augmentation parameters ``G`` (one row per sample) it drew. ``G`` is used as
an "IV-like" instrument by :class:`~sklearn_cispa.causal.AugmentedIVRegressor`, so it must
be drawn independently of the data, here always from Gaussian draws.

The augmentations derive from :class:`sklearn.base.BaseEstimator` for their parameter
handling (``get_params``, ``set_params``, ``repr``), so that :func:`sklearn.base.clone`
and grid searches over ``augmentation__scale`` work; they are not estimators and have no
``fit``. Their parameters are validated when :meth:`augment` is called.

Row order: ``G`` is drawn row by row from ``random_state``, so permuting the rows of
``X`` permutes the data but not the draws; the augmented rows then differ.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_array

from sklearn_cispa.utils import check_random_generator

__all__ = ["ComposeAugmentations", "GaussianNoiseAugmentation", "NullSpaceTranslation"]


def _check_X(X):
    """``X`` as a finite 2-d float64 array (NaN, infinity, complex or text refused)."""
    X = np.asarray(X) if not hasattr(X, "__array__") else X
    if np.ndim(X) != 2:
        raise ValueError(f"X must be a 2-d array, got shape {np.shape(X)}.")
    return check_array(X, dtype=np.float64, ensure_min_samples=0, ensure_min_features=0,
                       input_name="X")


class _BaseAugmentation(BaseEstimator):
    """Shared behaviour: calling the object is the same as :meth:`augment`."""

    def __call__(self, X, random_state=None):
        """Same as :meth:`augment`."""
        return self.augment(X, random_state)


class NullSpaceTranslation(_BaseAugmentation):
    """Random translation of each row along given directions (outcome invariant if f ignores them).

    Each row ``x`` is moved to ``x + scale * g @ directions`` with ``g ~ N(0, I_p)`` drawn
    independently per row. When every row of ``directions`` is orthogonal to the
    coefficient vector of a linear outcome function ``f``, the augmentation leaves
    ``f(x)`` unchanged: it is outcome invariant, the assumption under which
    :class:`AugmentedIVRegressor` removes confounding bias.

    Parameters
    ----------
    directions : array-like of shape (n_directions, n_features)
        Translation directions, used as given (not orthonormalised).
    scale : float, default=1.0
        Step size ``gamma`` multiplying the translation.

    See Also
    --------
    GaussianNoiseAugmentation : Isotropic Gaussian jitter of the features.
    ComposeAugmentations : Chain several augmentations.
    AugmentedIVRegressor : The regressor that uses the drawn parameters as an instrument.

    Notes
    -----
    The reference implementation builds its directions from the true ``f`` (an oracle);
    here they come from the user. :func:`sklearn_cispa.datasets.make_confounded_linear`
    returns the oracle augmentation of its simulation.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.causal import NullSpaceTranslation
    >>> aug = NullSpaceTranslation(directions=[[1.0, -1.0]], scale=0.5)
    >>> X = np.zeros((3, 2))
    >>> X_aug, G = aug.augment(X, random_state=0)
    >>> X_aug.shape, G.shape
    ((3, 2), (3, 1))
    >>> bool(np.allclose(X_aug @ [1.0, 1.0], 0.0))  # f(x) = x1 + x2 is unchanged
    True
    """

    _parameter_constraints: dict = {
        "directions": ["array-like"],
        "scale": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, directions, scale=1.0):
        self.directions = directions
        self.scale = scale

    def augment(self, X, random_state=None):
        """Translate every row of ``X`` by a random combination of the directions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to augment (not modified).
        random_state : int, RandomState instance, numpy Generator or None, default=None
            Source of the Gaussian draws.

        Returns
        -------
        X_aug : ndarray of shape (n_samples, n_features)
            Translated data.
        G : ndarray of shape (n_samples, n_directions)
            The standard normal coefficients drawn for each row.
        """
        self._validate_params()
        X = _check_X(X)
        directions = np.asarray(self.directions, dtype=np.float64)
        if directions.ndim == 1:
            directions = directions.reshape(1, -1)
        if directions.ndim != 2 or directions.shape[0] == 0:
            raise ValueError(
                "directions must be a non-empty 2-d array (n_directions, n_features), got "
                f"shape {directions.shape}."
            )
        if directions.shape[1] != X.shape[1]:
            raise ValueError(
                f"directions has {directions.shape[1]} columns but X has {X.shape[1]} features."
            )
        if not np.all(np.isfinite(directions)):
            raise ValueError("directions contains NaN or infinite values.")
        rng = check_random_generator(random_state)
        G = rng.standard_normal((X.shape[0], directions.shape[0]))
        return X + float(self.scale) * (G @ directions), G


class GaussianNoiseAugmentation(_BaseAugmentation):
    """Additive isotropic Gaussian noise scaled to the spread of the data.

    Returns ``X + sqrt(scale) * s * G`` with ``G ~ N(0, I_d)`` drawn per row and ``s`` the
    standard deviation of all entries of ``X`` pooled (one scalar), so ``scale`` is the
    noise variance as a fraction of the pooled variance of ``X``.

    Parameters
    ----------
    scale : float, default=0.1
        Noise variance relative to the pooled variance of ``X``; 0.1 is the reference's
        augmentation of the optical-device data.

    See Also
    --------
    NullSpaceTranslation : Translation along directions the outcome ignores.
    ComposeAugmentations : Chain several augmentations.

    Notes
    -----
    Gaussian jitter is **not outcome invariant**: it moves ``X`` along every direction,
    including those the outcome depends on, so ``f(X_aug) != f(X)`` for any non-constant
    ``f`` and its parameters ``G`` are not a valid instrument. Use it for DA+ERM
    (``AugmentedIVRegressor(alpha=np.inf)``), where it acts as a regulariser; with a
    finite ``alpha`` the IV-like fit is biased even on unconfounded data (measured: nCER
    0.52 at ``alpha=0`` where least squares is exact), and the regressor warns.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.causal import GaussianNoiseAugmentation
    >>> X = np.arange(12.0).reshape(4, 3)
    >>> X_aug, G = GaussianNoiseAugmentation(scale=0.1).augment(X, random_state=0)
    >>> X_aug.shape, G.shape
    ((4, 3), (4, 3))
    """

    _parameter_constraints: dict = {
        "scale": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, scale=0.1):
        self.scale = scale

    def augment(self, X, random_state=None):
        """Add scaled Gaussian noise to ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to augment (not modified).
        random_state : int, RandomState instance, numpy Generator or None, default=None
            Source of the Gaussian draws.

        Returns
        -------
        X_aug : ndarray of shape (n_samples, n_features)
            Noisy data.
        G : ndarray of shape (n_samples, n_features)
            The standard normal draws.
        """
        self._validate_params()
        X = _check_X(X)
        rng = check_random_generator(random_state)
        G = rng.standard_normal(X.shape)
        spread = float(np.std(X)) if X.size else 0.0
        return X + np.sqrt(float(self.scale)) * spread * G, G


class ComposeAugmentations(_BaseAugmentation):
    """Apply several augmentations in sequence and concatenate their parameters.

    ``augmentations[0]`` acts on ``X``, ``augmentations[1]`` on its output, and so on. The
    parameter blocks ``G`` are concatenated column-wise in the same order. Each step draws
    from its own child generator of ``random_state``.

    Parameters
    ----------
    augmentations : list of augmentations or callables
        Objects with ``augment(X, random_state) -> (X_aug, G)`` or callables
        ``f(X, rng) -> (X_aug, G)``.

    See Also
    --------
    NullSpaceTranslation, GaussianNoiseAugmentation

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.causal import (ComposeAugmentations, GaussianNoiseAugmentation,
    ...                                   NullSpaceTranslation)
    >>> aug = ComposeAugmentations([GaussianNoiseAugmentation(0.1),
    ...                             NullSpaceTranslation([[1.0, -1.0]])])
    >>> X_aug, G = aug.augment(np.ones((5, 2)), random_state=0)
    >>> G.shape
    (5, 3)
    """

    _parameter_constraints: dict = {"augmentations": [list, tuple]}

    def __init__(self, augmentations):
        self.augmentations = augmentations

    def augment(self, X, random_state=None):
        """Apply the augmentations one after the other.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data to augment (not modified).
        random_state : int, RandomState instance, numpy Generator or None, default=None
            Source of randomness; each step gets its own child generator.

        Returns
        -------
        X_aug : ndarray of shape (n_samples, n_features)
            Data after the last step.
        G : ndarray of shape (n_samples, total_n_params)
            The steps' parameters, concatenated column-wise.
        """
        self._validate_params()
        X = _check_X(X)
        steps = list(self.augmentations)
        if not steps:
            raise ValueError("ComposeAugmentations needs at least one augmentation.")
        rng = check_random_generator(random_state)
        children = rng.spawn(len(steps))
        blocks = []
        X_aug = X
        for step, child in zip(steps, children):
            X_aug, G = apply_augmentation(step, X_aug, child)
            blocks.append(G)
        return X_aug, np.hstack(blocks)


def apply_augmentation(augmentation, X, rng):
    """Call an augmentation object or callable on ``X`` and validate what it returns.

    ``X`` is handed over as a read-only view, so an augmentation that writes into its
    input raises instead of modifying the caller's data.

    Returns
    -------
    X_aug : ndarray of shape X.shape
    G : ndarray of shape (n_samples, n_params)
    """
    X = np.asarray(X, dtype=np.float64)
    view = X.view()
    view.flags.writeable = False
    if hasattr(augmentation, "augment"):
        out = augmentation.augment(view, rng)
    elif callable(augmentation):
        out = augmentation(view, rng)
    else:
        raise TypeError(
            "augmentation must have an augment(X, random_state) method or be a callable "
            f"f(X, rng) -> (X_aug, G); got {type(augmentation).__name__}."
        )
    if not isinstance(out, tuple | list) or len(out) != 2:
        what = type(out).__name__
        if isinstance(out, tuple | list):
            what += f" of length {len(out)}"
        raise ValueError(f"The augmentation must return a pair (X_aug, G); got {what}.")
    X_aug, G = out
    try:
        X_aug = np.asarray(X_aug, dtype=np.float64)
        G = np.asarray(G, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The augmentation returned non-numeric output: {exc}") from exc
    if X_aug.shape != X.shape:
        raise ValueError(
            f"The augmentation returned X_aug of shape {X_aug.shape}; expected the shape of "
            f"X, {X.shape}."
        )
    if G.ndim == 1:
        G = G.reshape(-1, 1)
    if G.ndim != 2 or G.shape[0] != X.shape[0]:
        raise ValueError(
            f"The augmentation returned G of shape {G.shape}; expected a 2-d array with one "
            f"row per sample ({X.shape[0]} rows)."
        )
    if not np.all(np.isfinite(X_aug)):
        raise ValueError("The augmentation returned X_aug with NaN or infinite values.")
    if not np.all(np.isfinite(G)):
        raise ValueError("The augmentation returned G with NaN or infinite values.")
    return X_aug, G
