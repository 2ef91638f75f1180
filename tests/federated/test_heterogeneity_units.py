"""``heterogeneity`` finds the same optimum ``theta*`` whatever the columns' units and
offsets (it minimises in standardised coordinates, shared with the LocalSGD
convergence check). Before, the normal equations on raw columns of scale 1e-3..1e6 with
an offset of 1e3 gave a first coefficient of 2e-6 instead of 1.0, silently."""

import warnings

import numpy as np
import pytest

from sklearn_cispa.federated import heterogeneity


def _data(loss, seed=0):
    rng = np.random.default_rng(seed)
    n = 600
    X = rng.normal(size=(n, 3))
    g = np.repeat(np.arange(4), n // 4)
    y = X @ [1.0, -2.0, 0.5] + 0.3 * g + 0.5 * rng.normal(size=n)
    if loss == "logistic":
        y = (y > np.median(y)).astype(int)
    return X, y, g


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize(
    "scale, offset",
    [(np.array([1e-3, 1e3, 1e6]), 1e3), (np.array([1e-6, 1.0, 1e6]), 0.0), (1e5, -1e4)],
)
def test_theta_star_follows_a_change_of_units(loss, scale, offset):
    X, y, g = _data(loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no spurious "no minimiser" warning either
        t0 = np.ravel(heterogeneity(X, y, g, loss=loss)["theta_star"])
        t1 = np.ravel(heterogeneity(X * scale + offset, y, g, loss=loss)["theta_star"])
    coef = t1[:3] * scale  # the same model in the original units
    intercept = t1[3] + np.sum(t1[:3] * offset)
    # the oracle is the fit on the original, well-scaled columns
    np.testing.assert_allclose(coef, t0[:3], rtol=1e-6)
    # mapping the intercept back cancels terms of size |coef * offset / scale|: allow
    # their rounding, not more
    cancelled = np.sum(np.abs(t1[:3] * offset))
    np.testing.assert_allclose(intercept, t0[3], rtol=1e-6, atol=1e-8 + 1e-11 * cancelled)


def test_ridge_optimum_matches_the_closed_form_on_raw_units():
    # with a ridge penalty theta* depends on the units; the oracle is the closed form
    # of the pooled objective (the ridge keeps these normal equations well posed)
    X, y, g = _data("squared", seed=1)
    X = X * np.array([1e-2, 1.0, 1e2]) + 10.0
    alpha = 0.3
    h = heterogeneity(X, y, g, alpha=alpha, averaging="samples")
    Z = np.hstack([X, np.ones((len(X), 1))])
    pen = np.array([1.0, 1.0, 1.0, 0.0])
    A = Z.T @ Z / len(Z) + alpha * np.diag(pen)
    b = Z.T @ y / len(Z)
    np.testing.assert_allclose(h["theta_star"], np.linalg.solve(A, b), rtol=1e-8)
