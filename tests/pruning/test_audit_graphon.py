"""Audit: closed forms of the graphon estimate and the graphon NTK, across units.

No defect was found in the pruning field; these tests pin the closed forms the audit
measured (each is an independent oracle, not a threshold taken from our output).
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sklearn_cispa.pruning import GraphonEstimator, graphon_ntk


def _er(n, p, seed):
    rng = np.random.default_rng(seed)
    return [(rng.random((n, n)) < p).astype(float) for _ in range(3)]


def test_erdos_renyi_masks_give_a_constant_graphon():
    # the constant graphon p: exactly p on average; flat up to binomial noise without
    # sorting; with degree sorting flat only in the limit, the spread shrinking like
    # n^{-1/2} (measured max - min at K=8: 0.17 at n=256, 0.094 at n=1024)
    for n in (256, 1024):
        unsorted = GraphonEstimator(n_blocks=8, sort="none").fit(_er(n, 0.3, n))
        assert unsorted.graphon_.mean() == pytest.approx(0.3, abs=0.005)
        # cell sd of a K x K block average of 3 masks: sqrt(p(1-p) K^2 / (3 n^2))
        assert unsorted.graphon_.std() < 4 * np.sqrt(0.21 * 64 / (3 * n * n))
    small = GraphonEstimator(n_blocks=8).fit(_er(256, 0.3, 0))
    large = GraphonEstimator(n_blocks=8).fit(_er(1024, 0.3, 1))
    spread = [np.ptp(g.graphon_) for g in (small, large)]
    assert large.graphon_.mean() == pytest.approx(0.3, abs=0.005)
    assert spread[1] < 0.7 * spread[0]  # n^{-1/2}: a ratio of 0.5 expected


@pytest.mark.parametrize("scale", [1e-6, 1e6, 1e150])
def test_relu_ntk_is_homogeneous_of_degree_two(scale):
    # bias-free ReLU network: Theta(cX, cY) = c^2 Theta(X, Y) for c > 0, at any units
    X = load_iris().data[:20]
    graphons = [0.5, np.full((4, 4), 0.3), 1.0]
    K = graphon_ntk(X, graphons=graphons)
    K_scaled = graphon_ntk(X * scale, graphons=graphons)
    np.testing.assert_allclose(K_scaled / scale**2, K, rtol=1e-10)


def test_a_zero_input_has_a_zero_kernel_row():
    X = load_iris().data[:5].copy()
    X[0] = 0.0
    K = graphon_ntk(X)
    assert np.all(K[0] == 0.0) and np.all(np.isfinite(K))
