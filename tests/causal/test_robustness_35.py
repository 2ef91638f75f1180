"""Issue 35: right or refused on every input (causal field)."""

import numpy as np
import pytest

from sklearn_cispa.causal import AugmentedIVRegressor
from sklearn_cispa.datasets import make_confounded_linear


def _unit_free_augmentation(base):
    """The base augmentation applied in the units of X (moves scale with X)."""

    def augment(X, rng):
        scale = X.std()
        X_aug, G = base.augment(X / scale, rng)
        return X_aug * scale, G

    return augment


@pytest.mark.parametrize("factor", [1e-3, 1e3, 1e6])
def test_confounder_correction_alpha_is_unit_invariant(factor):
    # Janzing's target norm and the coefficient path both scale as 1 / factor, so the
    # selected alpha must not move; before the fix the likelihood's optimiser stopped at
    # its start point in large units and alpha_ went to an end of alpha_range.
    X, y, _, aug = make_confounded_linear(n_samples=500, n_features=8, random_state=0)
    augment = _unit_free_augmentation(aug)
    est = AugmentedIVRegressor(augmentation=augment, alpha="confounder_correction",
                               random_state=0)
    base = est.fit(X, y)
    alpha, coef = base.alpha_, base.coef_.copy()
    assert alpha_range_inside(alpha, est.alpha_range)
    scaled = AugmentedIVRegressor(augmentation=augment, alpha="confounder_correction",
                                  random_state=0).fit(X * factor, y)
    assert scaled.alpha_ == pytest.approx(alpha, rel=1e-9)
    np.testing.assert_allclose(scaled.coef_ * factor, coef, rtol=1e-6, atol=1e-9)


def alpha_range_inside(alpha, alpha_range):
    lo, hi = alpha_range
    return lo < alpha < hi
