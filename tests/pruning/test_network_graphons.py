"""network_graphons: every layer's graphon of a masked MLP, neurons ordered consistently
across layers, for the analytic Graphon NTK (issue 34)."""

import numpy as np
import pytest
import torch

from sklearn_cispa.pruning import (
    empirical_ntk,
    graphon_ntk,
    make_graphon_mlp,
    network_graphons,
    ntk_spectrum_stats,
    prune_at_init,
    sas_histogram,
)


def _relabel(masks, rng):
    """The same network with the neurons of every hidden layer relabelled."""
    perms = [rng.permutation(m.shape[0]) for m in masks[:-1]]
    out = []
    for i, m in enumerate(masks):
        m = m[perms[i]] if i < len(perms) else m
        out.append(m[:, perms[i - 1]] if i > 0 else m)
    return out


def test_one_order_labels_both_sides_of_a_hidden_layer():
    # hidden neurons 0-7 have in-degree 3 of 3 and out-degree 2 of 8; neurons 8-15 have
    # in-degree 1 of 3 and out-degree 8 of 8. The high in-degree neurons come first, and
    # the next layer's columns must follow them (low out-degree first); sorting that
    # layer's columns by their own degree would put the dense columns first.
    n = 16
    into = np.zeros((n, 3))
    into[:8] = 1
    into[8:, 0] = 1
    out_of = np.zeros((8, n))
    out_of[:2, :8] = 1
    out_of[:, 8:] = 1
    head = np.ones((1, 8))
    masks = _relabel([into, out_of, head], np.random.default_rng(0))
    g = network_graphons(masks, n_blocks=2)
    np.testing.assert_allclose(g[0], [[1, 1, 1], [1, 0, 0]])
    np.testing.assert_allclose(g[1].mean(axis=0), [0.25, 1.0])
    # sas_histogram sorts the columns by their own degree: the other way round
    np.testing.assert_allclose(sas_histogram(out_of, n_blocks=2).mean(axis=0), [1.0, 0.25])
    np.testing.assert_allclose(g[2], [[1.0, 1.0]])


def test_block_graphon_network_is_read_back_exactly():
    # a network made of constant blocks (already in in-degree order) gives its blocks
    W0 = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    W1 = np.array([[1.0, 0.5], [0.5, 0.0]])
    rng = np.random.default_rng(1)
    into = np.repeat(W0, 10, axis=0)  # 20 x 4: in-degree 4 then 2
    mid = np.kron(W1, np.ones((10, 10)))  # 20 x 20, values in {0, .5, 1}
    head = np.ones((1, 20))
    g = network_graphons(_relabel([into, mid, head], rng), n_blocks=2)
    np.testing.assert_allclose(g[0], W0)
    np.testing.assert_allclose(g[1], W1)
    np.testing.assert_allclose(g[2], [[1.0, 1.0]])


def test_relabelling_hidden_neurons_changes_nothing():
    rng = np.random.default_rng(2)
    # real-valued masks with distinct row sums, so the order has no ties
    masks = [rng.random((24, 5)), rng.random((24, 24)), rng.random((3, 24))]
    a = network_graphons(masks, n_blocks=4, output=2)
    b = network_graphons(_relabel(masks, rng), n_blocks=4, output=2)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=1e-12)


def test_dense_and_constant_networks_give_the_known_kernels():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 5))
    dense = [np.ones((12, 5)), np.ones((12, 12)), np.ones((12, 12)), np.ones((1, 12))]
    np.testing.assert_allclose(
        graphon_ntk(X, graphons=network_graphons(dense, n_blocks=4)), graphon_ntk(X), rtol=1e-12
    )
    half = [np.full((12, 5), 0.5), np.full((12, 12), 0.5), np.full((12, 12), 0.5), dense[-1]]
    np.testing.assert_allclose(
        graphon_ntk(X, graphons=network_graphons(half, n_blocks=4)),
        0.125 * graphon_ntk(X),
        rtol=1e-12,
    )


def test_an_input_graphon_that_selects_pixels_changes_the_spectrum():
    # the hidden graphons only rescale the kernel; an input layer that keeps the centre
    # pixels of 8 x 8 digits is what changes its shape (spec: .474 -> .515 on 256 digits)
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X = StandardScaler().fit_transform(load_digits().data[:96])
    centre = np.zeros((8, 8))
    centre[2:6, 2:6] = 1
    into = np.tile(centre.ravel(), (32, 1))
    rng = np.random.default_rng(4)
    hidden = (rng.random((32, 32)) < 0.3).astype(float)
    masks = [into, hidden, np.ones((1, 32))]
    K = graphon_ntk(X, graphons=network_graphons(masks, n_blocks=8))
    dense = ntk_spectrum_stats(graphon_ntk(X, graphons=[None] * 3))["top_energy"]
    assert abs(ntk_spectrum_stats(K)["top_energy"] - dense) > 0.02
    # with a constant input layer the same hidden mask only rescales the dense kernel
    flat = network_graphons([np.ones((32, 64)), hidden, np.ones((1, 32))], n_blocks=8)
    ratio = graphon_ntk(X, graphons=flat) / graphon_ntk(X, graphons=[None] * 3)
    assert np.ptp(ratio) < 1e-12 * ratio.mean()


def test_prune_at_init_dicts_and_the_analytic_kernel_of_a_pruned_net():
    torch.manual_seed(0)
    X = np.random.default_rng(5).normal(size=(16, 6))
    net = make_graphon_mlp(6, (64, 64), n_outputs=3, random_state=0)
    masks = prune_at_init(net, "random", 0.5, random_state=1)
    g = network_graphons(masks, n_blocks=8, output=1)
    assert [x.shape for x in g] == [(8, 6), (8, 8), (1, 8)]
    # a regression guard, not a paper figure: the analytic kernel of a random mask's
    # graphons is near the pruned net's own kernel (relative Frobenius distance measured
    # 0.33-0.40 over 4 seeds at width 64, the finite-width fluctuation)
    K = empirical_ntk(
        make_graphon_mlp(6, (64, 64), n_outputs=3, masks=masks, random_state=0), X, output=1
    )
    Ka = graphon_ntk(X, graphons=g)
    assert np.linalg.norm(Ka - K) / np.linalg.norm(K) < 0.5


def test_invalid_input_is_refused():
    with pytest.raises(ValueError, match="chain"):
        network_graphons([np.ones((8, 3)), np.ones((1, 9))], n_blocks=2)
    with pytest.raises(ValueError, match="fewer than n_blocks"):
        network_graphons([np.ones((4, 3)), np.ones((1, 4))], n_blocks=8)
    with pytest.raises(ValueError, match="not a row"):
        network_graphons([np.ones((8, 3)), np.ones((2, 8))], n_blocks=2, output=2)
    with pytest.raises(ValueError, match="input and an output"):
        network_graphons([np.ones((8, 3))], n_blocks=2)
    with pytest.raises(ValueError, match="2-D"):
        network_graphons([np.ones((8, 3)), np.ones((1, 8, 1))], n_blocks=2)
