"""Issue 34: options the spectral measurement needs (kernel centring, bias exclusion)
and the single-product path of empirical_ntk (issue 33)."""

import numpy as np
import pytest

from sklearn_cispa.pruning import _ntk, empirical_ntk, make_graphon_mlp, ntk_spectrum_stats

torch = pytest.importorskip("torch")


def test_center_removes_the_constant_mode():
    # K = 11^T + diag(d): centring leaves H diag(d) H, whose spectrum is known in closed
    # form for equal d: (n - 1) eigenvalues d and one 0
    n, d = 6, 0.5
    K = np.ones((n, n)) + d * np.eye(n)
    raw = ntk_spectrum_stats(K, n_top=1)
    cen = ntk_spectrum_stats(K, n_top=1, center=True)
    assert raw["top_energy"] == pytest.approx((n + d) / (n + n * d))
    np.testing.assert_allclose(cen["eigenvalues"], [d] * (n - 1) + [0.0], atol=1e-12)
    assert cen["top_energy"] == pytest.approx(1 / (n - 1))
    # a kernel with zero row means is left as it is
    H = np.eye(n) - 1 / n
    G = H @ np.diag(np.arange(1.0, n + 1)) @ H
    np.testing.assert_allclose(
        ntk_spectrum_stats(G, center=True)["eigenvalues"],
        ntk_spectrum_stats(G)["eigenvalues"],
        atol=1e-12,
    )


def test_exclude_bias_equals_the_kernel_of_the_weights_alone():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    X = np.random.RandomState(0).normal(size=(4, 3))
    with_b = empirical_ntk(net, X)
    without = empirical_ntk(net, X, exclude_bias=True)
    assert not np.allclose(with_b, without)
    for m in (net[0], net[2]):
        m.bias.requires_grad_(False)
    np.testing.assert_allclose(without, empirical_ntk(net, X), rtol=1e-12)
    # the last layer's bias alone contributes exactly n_outputs to every entry
    net[2].bias.requires_grad_(True)
    np.testing.assert_allclose(empirical_ntk(net, X) - without, 2.0, rtol=1e-12)
    only_bias = torch.nn.Linear(3, 1)
    only_bias.weight.requires_grad_(False)
    with pytest.raises(ValueError, match="besides its biases"):
        empirical_ntk(only_bias, X, exclude_bias=True)


def test_uncached_path_equals_the_single_product(monkeypatch):
    net = make_graphon_mlp(4, (8, 8), n_outputs=3, graphons=[None, 0.5, None], random_state=0)
    X = np.random.RandomState(1).normal(size=(7, 4))
    Y = X[:5] + 0.1
    full, cross = empirical_ntk(net, X, batch_size=3), empirical_ntk(net, X, Y, batch_size=2)
    assert np.array_equal(full, full.T)
    monkeypatch.setattr(_ntk, "_JACOBIAN_CACHE_BYTES", 0)
    np.testing.assert_allclose(empirical_ntk(net, X, batch_size=3), full, rtol=1e-12)
    np.testing.assert_allclose(empirical_ntk(net, X, Y, batch_size=2), cross, rtol=1e-12)
