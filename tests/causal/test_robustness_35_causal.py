"""Issue 35: right or refused on every input (causal field)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _two_mechanisms():
    from sklearn_cispa.causal import MixtureOfLinearRegressions

    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 2))
    z = rng.rand(200) < 0.5
    y = np.where(z, X @ [1.0, -2.0], X @ [-3.0, 1.0]) + 0.1 * rng.normal(size=200)
    return MixtureOfLinearRegressions(n_components=2, random_state=0).fit(X, y), X, y


def test_mixture_component_proba_matches_gaussian_posterior():
    from scipy.stats import norm

    m, X, y = _two_mechanisms()
    logp = np.log(m.weights_) + norm.logpdf(
        y[:, None], m.intercept_ + X @ m.coef_.T, m.sigma_
    )
    expected = np.exp(logp - np.logaddexp.reduce(logp, axis=1, keepdims=True))
    np.testing.assert_allclose(m.predict_component_proba(X, y), expected, atol=1e-12)


@pytest.mark.parametrize("factor", [1e155, 1e300])
def test_mixture_far_outside_the_fit_is_finite(factor):
    # the squared residuals overflow: the posterior's limit puts all the mass on the
    # component of smallest standardised residual |X coef_c| / sigma_c (was NaN)
    m, X, y = _two_mechanisms()
    proba = m.predict_component_proba(X * factor, y)
    assert np.all(np.isfinite(proba))
    best = np.argmin(np.abs(X @ m.coef_.T) / m.sigma_, axis=1)
    np.testing.assert_array_equal(proba, np.eye(2)[best])
    with pytest.warns(RuntimeWarning, match="below the float range"):
        assert m.bic(X * factor, y) == np.inf


def _per_column_unit_free_augmentation(base):
    """The base augmentation applied to standardised columns (moves scale per column)."""

    def augment(X, rng):
        scale = X.std(axis=0)
        X_aug, G = base.augment(X / scale, rng)
        return X_aug * scale, G

    return augment


@pytest.mark.parametrize("alpha", [np.inf, 1.0, 0.0])
@settings(max_examples=10, deadline=None)
@given(exponents=st.lists(st.floats(-6.0, 6.0), min_size=8, max_size=8))
def test_coefficients_follow_per_column_units(alpha, exponents):
    # a feature in other units has its coefficient in the inverse units: coef(X * c) * c
    # equals coef(X). Before the fix the SVD solver lost digits on the column of small
    # units (relative prediction error 1.7e-4 at units (1, 1e-6, 1e5); found by the
    # common invariance property)
    X, y, _, aug = make_confounded_linear(n_samples=300, n_features=8, random_state=0)
    c = 10.0 ** np.array(exponents)
    params = dict(augmentation=_per_column_unit_free_augmentation(aug), alpha=alpha,
                  random_state=0)
    ref = AugmentedIVRegressor(**params).fit(X, y)
    moved = AugmentedIVRegressor(**params).fit(X * c, y)
    np.testing.assert_allclose(moved.coef_ * c, ref.coef_, rtol=1e-7,
                               atol=1e-9 * np.abs(ref.coef_).max())
    np.testing.assert_allclose(moved.predict(X * c), ref.predict(X), rtol=1e-9, atol=1e-9)


def test_least_squares_at_mixed_units_matches_the_closed_form():
    # alpha=inf without augmentation is ordinary least squares: compare with the normal
    # equations solved in unit scale (well conditioned there)
    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 3))
    y = X @ [1.5, -1.0, 0.5] + 0.1 * rng.normal(size=200)
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    exact = np.linalg.solve(Xc.T @ Xc, Xc.T @ yc)
    c = np.array([1.0, 1e-6, 1e5])
    est = AugmentedIVRegressor(alpha=np.inf).fit(X * c, y)
    np.testing.assert_allclose(est.coef_ * c, exact, rtol=1e-10)


def _augmentations():
    from sklearn_cispa.causal import (
        ComposeAugmentations,
        GaussianNoiseAugmentation,
        NullSpaceTranslation,
    )

    nst = NullSpaceTranslation(np.eye(3)[:1])
    return [GaussianNoiseAugmentation(), nst,
            ComposeAugmentations([GaussianNoiseAugmentation(), nst])]


@pytest.mark.parametrize("aug", _augmentations(), ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_augmentations_refuse_non_finite_x(aug, bad):
    # was: NaN / inf passed through to the augmented rows (a whole NaN row for the
    # Gaussian noise, whose scale is the spread of X), without an error
    X = np.random.RandomState(0).normal(size=(6, 3))
    X[0, 0] = bad
    with pytest.raises(ValueError, match="Input X contains"):
        aug.augment(X, random_state=0)


@pytest.mark.parametrize("aug", _augmentations(), ids=lambda a: type(a).__name__)
def test_augmentations_keep_working_on_finite_x(aug):
    X = np.random.RandomState(0).normal(size=(6, 3))
    X_aug, G = aug.augment(X.tolist(), random_state=0)
    assert X_aug.shape == X.shape and len(G) == 6 and np.all(np.isfinite(X_aug))
