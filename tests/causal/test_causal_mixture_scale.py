"""Issue 12 item 1: causal mixtures do not depend on the units of the columns.

Every case below failed before the fits were standardised internally (the weighted
least-squares ridge scaled with the largest column of the design).
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_cispa.causal import CausalMixtureDiscoverer, MixtureOfLinearRegressions

FAST = {"max_components": 3, "n_init": 2, "random_state": 0}


def _line(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 1))
    return x, 3.0 * x[:, 0] + 0.5 * rng.normal(size=n)


def _chain(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=n)
    x1 = 0.8 * x0 + 0.5 * rng.normal(size=n)
    x2 = 0.8 * x1 + 0.5 * rng.normal(size=n)
    return np.column_stack([x0, x1, x2])


def _two_groups(n=500, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 1))
    z = (rng.random(n) < 0.3).astype(int)
    y = np.where(z == 1, -1.0 * x[:, 0] + 3.0, 1.0 * x[:, 0]) + 0.4 * rng.normal(size=n)
    return x, y, z


def test_offset_feature_keeps_the_slope():
    # before: slope 0.06 and R^2 0.04 with a feature offset of 1000
    x, y = _line()
    mix = MixtureOfLinearRegressions(random_state=0).fit(x + 1000.0, y)
    assert mix.n_components_ == 1
    assert mix.coef_[0, 0] == pytest.approx(3.0, abs=0.1)
    assert mix.score(x + 1000.0, y) > 0.95


@pytest.mark.parametrize("scale, offset", [(1e6, 1e6), (1e-5, 0.0), (1e-6, 3.0)])
def test_huge_and_tiny_features_fit(scale, offset):
    # before: R^2 -1.5 near 1e6 (here 0.47 with offset 1e6) and 0.86 near 1e-5
    x, y = _line()
    ref = MixtureOfLinearRegressions(random_state=0).fit(x, y)
    mix = MixtureOfLinearRegressions(random_state=0).fit(x * scale + offset, y)
    assert mix.score(x * scale + offset, y) == pytest.approx(ref.score(x, y), abs=1e-9)
    assert mix.coef_[0, 0] * scale == pytest.approx(ref.coef_[0, 0], rel=1e-6)


def test_two_group_fit_is_equivariant_in_x_and_y():
    x, y, _ = _two_groups()
    ref = MixtureOfLinearRegressions(random_state=0).fit(x, y)
    assert ref.n_components_ == 2
    a, b, c, d = 1e-4, 1000.0, 2e5, -7.0
    mix = MixtureOfLinearRegressions(random_state=0).fit(x * a + b, y * c + d)
    np.testing.assert_array_equal(mix.labels_, ref.labels_)
    np.testing.assert_allclose(mix.coef_ * a / c, ref.coef_, rtol=1e-6)
    np.testing.assert_allclose(
        (mix.intercept_ - d + mix.coef_[:, 0] * b) / c, ref.intercept_, rtol=1e-6, atol=1e-8
    )
    np.testing.assert_allclose(mix.sigma_ / c, ref.sigma_, rtol=1e-6)
    np.testing.assert_allclose(mix.weights_, ref.weights_, rtol=1e-6)
    # the BIC changes by the Jacobian 2 n log(c) of the rescaled target
    n = len(y)
    assert mix.bic_ == pytest.approx(ref.bic_ + 2 * n * np.log(c), rel=1e-9)
    assert mix.bic(x * a + b, y * c + d) == pytest.approx(mix.bic_, rel=1e-9)


def test_discoverer_finds_graph_with_offset_columns():
    # before: CausalMixtureDiscoverer().fit(X + 1000) returned another graph
    # (an empty graph with the defaults)
    X = _chain()
    ref = CausalMixtureDiscoverer(**FAST).fit(X)
    np.testing.assert_array_equal(ref.adjacency_, [[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    est = CausalMixtureDiscoverer(**FAST).fit(X + 1000.0)
    np.testing.assert_array_equal(est.adjacency_, ref.adjacency_)


@pytest.mark.parametrize("scale", [1e-6, 1e-3, 1e6])
def test_discoverer_chain_survives_rescaling(scale):
    # before: a scale of 1e-3 or 1e6 turned the chain 0 -> 1 -> 2 into a complete DAG
    X = _chain()
    est = CausalMixtureDiscoverer(**FAST).fit(X * scale)
    np.testing.assert_array_equal(est.adjacency_, [[0, 1, 0], [0, 0, 1], [0, 0, 0]])


def _mixed_data(seed, n=300):
    rng = np.random.default_rng(seed)
    z = (rng.random(n) < 0.3).astype(int)
    x0 = rng.normal(size=n) + 6.0 * z
    x1 = np.where(z == 1, -1.5 * x0 + 4.0, x0) + 0.5 * rng.normal(size=n)
    x2 = 0.7 * x1 + 0.5 * rng.normal(size=n)
    return np.column_stack([x0, x1, x2])


_exponents = st.integers(-6, 6)


@settings(deadline=None, max_examples=8)
@given(
    seed=st.integers(0, 50),
    log_scales=st.lists(_exponents, min_size=3, max_size=3),
    offsets=st.lists(st.sampled_from([0.0, -1.0, 1e3, 1e6]), min_size=3, max_size=3),
)
def test_discoverer_invariant_to_column_units(seed, log_scales, offsets):
    X = _mixed_data(seed)
    scales = 10.0 ** np.asarray(log_scales, dtype=float)
    Xt = X * scales + np.asarray(offsets) * scales
    ref = CausalMixtureDiscoverer(**FAST).fit(X)
    est = CausalMixtureDiscoverer(**FAST).fit(Xt)
    np.testing.assert_array_equal(est.adjacency_, ref.adjacency_)
    np.testing.assert_array_equal(est.causal_order_, ref.causal_order_)
    np.testing.assert_array_equal(est.n_components_, ref.n_components_)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    assert est.mixing_sets_ == ref.mixing_sets_
    # scores_ are in the caller's units: they move by 2 n log(scale) per node
    n = len(X)
    np.testing.assert_allclose(est.scores_, ref.scores_ + 2 * n * np.log(scales), rtol=1e-7)


@settings(deadline=None, max_examples=15)
@given(
    seed=st.integers(0, 1000),
    log_a=_exponents,
    log_c=_exponents,
    offset=st.sampled_from([0.0, 1.0, -50.0, 1e3, 1e6]),
)
def test_mixture_equivariant_under_units(seed, log_a, log_c, offset):
    x, y, _ = _two_groups(n=200, seed=seed)
    a, c = 10.0**log_a, 10.0**log_c
    kw = {"max_components": 3, "n_init": 2, "random_state": 1}
    ref = MixtureOfLinearRegressions(**kw).fit(x, y)
    mix = MixtureOfLinearRegressions(**kw).fit((x + offset) * a, (y - offset) * c)
    assert mix.n_components_ == ref.n_components_
    np.testing.assert_array_equal(mix.labels_, ref.labels_)
    np.testing.assert_allclose(mix.coef_ * a / c, ref.coef_, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(mix.sigma_ / c, ref.sigma_, rtol=1e-5)
    np.testing.assert_allclose(
        mix.predict((x + offset) * a) / c + offset,
        ref.predict(x),
        rtol=1e-6,
        atol=1e-6 * np.abs(y).max(),
    )


@pytest.mark.parametrize("scale", [1e-300, 1e-250, 1e200, 1e300])
def test_extreme_units_give_the_same_fit_without_warnings(scale):
    # before: NaN coefficients and infinite BIC near 1e200 (squares overflowed in the
    # standard deviation), an IndexError in the discoverer near 1e-300
    x, y = _line(n=300)
    ref = MixtureOfLinearRegressions(random_state=0).fit(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mix = MixtureOfLinearRegressions(random_state=0).fit(x * scale, y * scale)
        np.testing.assert_allclose(mix.coef_, ref.coef_, rtol=1e-9)
        np.testing.assert_allclose(mix.sigma_ / scale, ref.sigma_, rtol=1e-9)
        n = len(y)
        assert mix.bic_ == pytest.approx(ref.bic_ + 2 * n * np.log(scale), rel=1e-9, abs=1e-6)
        assert mix.bic(x * scale, y * scale) == pytest.approx(mix.bic_, rel=1e-9, abs=1e-6)
        assert mix.score(x * scale, y * scale) == pytest.approx(ref.score(x, y), abs=1e-9)
        proba = mix.predict_component_proba(x * scale, y * scale)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        X = _chain(n=300)
        est = CausalMixtureDiscoverer(**FAST).fit(X * scale)
    np.testing.assert_array_equal(est.adjacency_, [[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert np.all(np.isfinite(est.scores_))
