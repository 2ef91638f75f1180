"""Issue 35: right or refused on every input (pruning field)."""

import numpy as np
import pytest

from sklearn_cispa.pruning import empirical_ntk, ntk_spectrum_stats

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kernel", [[[2.0]], [[0.0]]])
def test_ntk_spectrum_stats_refuses_1x1(kernel):
    with pytest.raises(ValueError, match="at least 2 x 2"):
        ntk_spectrum_stats(kernel)


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
