"""Mixture selection on heavy-tailed data (issue 23): a node with one mechanism and
heavy-tailed noise is not called mixed, and real mixtures still are."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_cispa.causal import CausalMixtureDiscoverer, MixtureOfLinearRegressions
from sklearn_cispa.causal._mixture_regression import MIN_SEPARATION, _separation, with_intercept


def _chain(noise, seed, n=600, n_nodes=5):
    """x_j = 0.8 x_{j-1} + e_j with heavy-tailed noise e (one mechanism per node)."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, n_nodes))
    for j in range(n_nodes):
        e = rng.standard_t(3, n) if noise == "t3" else rng.laplace(size=n)
        X[:, j] = (0.8 * X[:, j - 1] if j else 0.0) + e
    return X


def test_separation_closed_form():
    x = np.linspace(-1, 1, 101)[:, None]
    Z = with_intercept(x)
    # parallel lines 3 apart, unit variances: Ashman's D = 3
    fit = {"B": np.array([[0.0, 1.0], [3.0, 1.0]]), "s2": np.array([1.0, 1.0]), "pi": np.ones(2)}
    assert _separation(Z, fit) == pytest.approx(3.0)
    # y = x vs y = -x: the gap is |2x|, median 1 over the symmetric grid; variances 1 and 3
    fit = {"B": np.array([[0.0, 1.0], [0.0, -1.0]]), "s2": np.array([1.0, 3.0]), "pi": np.ones(2)}
    assert _separation(Z, fit) == pytest.approx(1.0 / np.sqrt(2.0))
    # the same line with two noise scales (a heavy tail, not a second mechanism)
    fit = {"B": np.array([[1.0, 2.0], [1.0, 2.0]]), "s2": np.array([1.0, 9.0]), "pi": np.ones(2)}
    assert _separation(Z, fit) == 0.0
    fit = {"B": np.array([[1.0, 2.0]]), "s2": np.array([1.0]), "pi": np.ones(1)}
    assert _separation(Z, fit) == np.inf


def test_student_t_noise_is_one_mechanism():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(800, 1))
    y = 2.0 * x[:, 0] + rng.standard_t(2, 800)
    mix = MixtureOfLinearRegressions(random_state=0).fit(x, y)
    assert mix.n_components_ == 1
    assert mix.noise_dof_ <= 4
    assert abs(mix.coef_[0, 0] - 2.0) < 0.1
    assert mix.bic(x, y) == pytest.approx(mix.bic_, rel=1e-10)
    # the symptom: the Gaussian BIC alone splits the heavy tail
    plain = MixtureOfLinearRegressions(heavy_tails=False, min_separation=0, random_state=0)
    assert plain.fit(x, y).n_components_ >= 2
    assert np.isinf(plain.noise_dof_)
    # units: the t fit is equivariant like the Gaussian one
    scaled = MixtureOfLinearRegressions(random_state=0).fit(1e4 * x + 5.0, 1e-3 * y - 7.0)
    assert scaled.n_components_ == 1 and scaled.noise_dof_ == mix.noise_dof_
    np.testing.assert_allclose(scaled.coef_ * 1e4, mix.coef_ * 1e-3, rtol=1e-6)
    np.testing.assert_allclose(scaled.sigma_, mix.sigma_ * 1e-3, rtol=1e-6)


def test_real_groups_with_heavy_tailed_noise_stay_mixed():
    rng = np.random.default_rng(1)
    n = 600
    x = rng.normal(size=(n, 1))
    z = rng.random(n) < 0.3
    y = np.where(z, -1.0 * x[:, 0] + 8.0, 1.0 * x[:, 0]) + rng.standard_t(5, n)
    mix = MixtureOfLinearRegressions(max_components=3, random_state=0).fit(x, y)
    assert mix.n_components_ == 2
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(z, mix.labels_) > 0.9


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    dof=st.floats(1.5, 6.0),
    slope=st.floats(-2.0, 2.0),
    log_scale=st.floats(-3.0, 3.0),
)
def test_student_t_noise_gets_one_component(seed, dof, slope, log_scale):
    """Property: one regression line with Student-t noise (1.5 to 6 degrees of freedom,
    any slope and noise scale) gets one component; with at most 3 degrees of freedom
    (infinite kurtosis) the one component is the Student-t mechanism.

    Above 3 degrees of freedom a sample of 500 can be Gaussian to the BIC, and then the
    Gaussian single mechanism is the right choice, not a bug: the dev profile drew
    seed 320, dof 5, whose noise has sample excess kurtosis 0.49; the exact Student-t
    maximum likelihood (scipy's ``t.fit``, nu = 13) gains 2.08 nats over the Gaussian
    fit, less than the BIC's price of the extra parameter, log(500) / 2 = 3.11."""
    rng = np.random.default_rng(seed)
    n = 500
    x = rng.normal(size=(n, 1))
    y = slope * x[:, 0] + 10.0**log_scale * rng.standard_t(dof, n)
    mix = MixtureOfLinearRegressions(max_components=3, random_state=0).fit(x, y)
    assert mix.n_components_ == 1
    if dof <= 3.0:
        assert np.isfinite(mix.noise_dof_)


def test_scale_mixture_noise_mostly_one_component():
    """A scale mixture (20% of the rows with 2-6 times the noise sd, one line) is a heavy
    tail, not a second mechanism: one component in at least 8 of 10 seeds (measured 10
    of 10; the Gaussian BIC alone chose 2 in 10 of 10). Not every seed is guaranteed: a
    broad component that drifts off the line by half a pooled sd passes the separation
    rule (seen once in the hypothesis search at ratio 4)."""
    ones = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(500, 1))
        sd = np.where(rng.random(500) < 0.2, 2.0 + 0.4 * seed, 1.0)
        y = 0.5 * x[:, 0] + sd * rng.normal(size=500)
        mix = MixtureOfLinearRegressions(max_components=3, random_state=0).fit(x, y)
        ones += mix.n_components_ == 1
    assert ones >= 8, ones


@pytest.mark.parametrize("noise", ["t3", "laplace"])
@pytest.mark.parametrize("seed", [0, 1])
def test_heavy_tailed_chain_has_no_mixed_node(noise, seed):
    X = _chain(noise, seed)
    params = {"max_components": 3, "n_init": 2, "random_state": 0}
    est = CausalMixtureDiscoverer(**params).fit(X)
    np.testing.assert_array_equal(est.n_components_, 1)
    assert est.mixing_sets_ == []
    skeleton = est.adjacency_ | est.adjacency_.T
    assert all(skeleton[j, j + 1] for j in range(4))
    # the symptom with the Gaussian BIC alone (regression guard of the old rule:
    # measured 5 of 5 nodes mixed in all four cases)
    old = CausalMixtureDiscoverer(**params, heavy_tails=False, min_separation=0).fit(X)
    assert (old.n_components_ > 1).sum() >= 4


def test_default_separation_is_documented_value():
    assert MIN_SEPARATION == CausalMixtureDiscoverer().min_separation == 0.5
    assert MixtureOfLinearRegressions().min_separation == 0.5
