"""Issue 35: right or refused on every input (pruning field)."""

import numpy as np
import pytest

from sklearn_cispa.pruning import empirical_ntk, ntk_spectrum_stats

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kernel", [[[2.0]], [[0.0]]])
def test_ntk_spectrum_stats_refuses_1x1(kernel):
    with pytest.raises(ValueError, match="at least 2 x 2"):
        ntk_spectrum_stats(kernel)


def _psd_kernel():
    A = np.random.RandomState(0).normal(size=(6, 6))
    return A @ A.T


@pytest.mark.parametrize(
    "fit_range",
    [(float("nan"), 4), (1, float("nan")), (1, float("inf")), (1.5, 4), (True, 4), (1, 2, 3)],
)
def test_ntk_spectrum_stats_refuses_non_integer_fit_range(fit_range):
    # was: "cannot convert float NaN to integer" / OverflowError, and 1.5 silently became 1
    with pytest.raises(ValueError, match="fit_range"):
        ntk_spectrum_stats(_psd_kernel(), fit_range=fit_range)


def test_ntk_spectrum_stats_integral_floats_are_indices():
    # (2.0, 5.0) means the same indices as (2, 5): the decay exponent of the same fit
    K = _psd_kernel()
    exact = ntk_spectrum_stats(K, fit_range=(2, 5))["decay_exponent"]
    assert ntk_spectrum_stats(K, fit_range=(2.0, np.int64(5)))["decay_exponent"] == exact
    ev = np.linalg.eigvalsh(K)[::-1][1:5]
    slope = np.polyfit(np.log(np.arange(2, 6)), np.log(ev), 1)[0]
    assert exact == pytest.approx(-slope, rel=1e-9)


def test_empirical_ntk_float32_module_with_frozen_parameter():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    net[0].weight.requires_grad_(False)  # float32 and frozen
    X = np.random.RandomState(0).normal(size=(5, 3))
    K = empirical_ntk(net, X)
    assert net[0].weight.dtype == torch.float32  # the module is not modified
    # oracle: J J^T over the trainable parameters only, by autograd in float64
    n64 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    n64.load_state_dict(net.state_dict())
    n64 = n64.double()
    n64[0].weight.requires_grad_(False)
    trainable = [p for p in n64.parameters() if p.requires_grad]
    rows = []
    for x in torch.as_tensor(X):
        grads = torch.autograd.grad(n64(x[None]).sum(), trainable)
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    J = torch.stack(rows).numpy()
    np.testing.assert_allclose(K, J @ J.T, rtol=1e-12, atol=1e-12)


def test_graphon_estimator_reads_torch_prune_masks():
    import torch.nn.utils.prune as tprune

    from sklearn_cispa.pruning import GraphonEstimator

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(40, 40), torch.nn.ReLU(), torch.nn.Linear(40, 2))
    tprune.random_unstructured(net[0], "weight", amount=0.75)
    est = GraphonEstimator(n_blocks=4).fit(net)
    # oracle: the same estimate from the mask buffer itself
    ref = GraphonEstimator(n_blocks=4).fit(net[0].weight_mask)
    np.testing.assert_array_equal(est.graphon_, ref.graphon_)
    assert est.density_ == pytest.approx(0.25)


def test_graphon_estimator_says_what_to_pass():
    from sklearn_cispa.pruning import GraphonEstimator, prune_at_init

    with pytest.raises(ValueError, match="no torch.nn.utils.prune mask"):
        GraphonEstimator(n_blocks=2).fit(torch.nn.Linear(4, 4))
    conv = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 4 * 4, 3)
    )
    masks = prune_at_init(conv, sparsity=0.5, random_state=0)
    with pytest.raises(ValueError, match=r"convolutional mask.*reshape\(mask.shape\[0\], -1\)"):
        GraphonEstimator(n_blocks=2, layer="0.weight").fit(masks)
    # the advice works as written
    m = masks["0.weight"]
    GraphonEstimator(n_blocks=2).fit(m.reshape(m.shape[0], -1))


def test_prune_at_init_object_columns_get_a_clear_error():
    from sklearn_cispa.pruning import prune_at_init

    net = torch.nn.Linear(3, 2)
    X = np.array([["a", "b", "c"]] * 4, dtype=object)
    with pytest.raises(ValueError, match="X must hold real numbers"):
        prune_at_init(net, method="snip", X=X, y=np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="complex"):
        prune_at_init(net, method="snip", X=np.ones((4, 3)) * 1j, y=np.zeros(4, dtype=int))
    # numeric values in object columns (a mixed DataFrame) are converted, as numbers
    Xo = np.random.RandomState(0).normal(size=(4, 3)).astype(object)
    a = prune_at_init(net, method="snip", sparsity=0.5, X=Xo, y=np.zeros(4, dtype=int))
    b = prune_at_init(
        net, method="snip", sparsity=0.5, X=Xo.astype(float), y=np.zeros(4, dtype=int)
    )
    assert torch.equal(a["weight"], b["weight"])
