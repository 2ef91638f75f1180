"""Sign-In: reset invariants, dynamics, teacher-student sign flip, merge (spec 7.3)."""

import math
import pickle

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from skorch import NeuralNetClassifier
from torch import nn
from torch.nn.utils import parametrize

from sklearn_cispa.neural import (
    SignIn,
    SignInReset,
    apply_sign_in,
    merge_sign_in,
    reset_sign_in,
)
from sklearn_cispa.pruning import prune_at_init
from sklearn_cispa.report._neural_experiments import sign_in_comparison


def _net(seed=0, dtype=torch.float64, sizes=(6, 12, 3)):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(sizes[0], sizes[1], dtype=dtype),
        nn.ReLU(),
        nn.Linear(sizes[1], sizes[2], dtype=dtype),
    )


def _masks(net, sparsity=0.5, seed=0):
    return prune_at_init(net, "random", sparsity, random_state=seed)


def _factors(layer):
    plist = layer.parametrizations.weight
    return plist.original0, plist.original1


@pytest.mark.parametrize("dtype, rtol", [(torch.float64, 1e-12), (torch.float32, 1e-6)])
@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_registration_and_reset_invariants(dtype, rtol, beta):
    net = _net(dtype=dtype)
    masks = _masks(net)
    masked = {k: net.get_parameter(k).detach() * v for k, v in masks.items()}
    apply_sign_in(net, masks, beta=beta)
    assert torch.allclose(net[0].weight, masked["0.weight"], rtol=rtol, atol=0)
    assert net[0].parametrizations.weight[0].mask.dtype == dtype
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    x = torch.randn(20, 6, dtype=dtype)
    for _ in range(5):
        opt.zero_grad()
        net(x).pow(2).sum().backward()
        opt.step()
    m, w = _factors(net[0])
    ids = (id(m), id(w))
    assert m in opt.state and w in opt.state
    theta = net[0].weight.detach().clone()
    assert not torch.allclose(m**2 - w**2, torch.full_like(m, beta))  # Adam moved it
    assert reset_sign_in(net, opt) == 2
    m2, w2 = _factors(net[0])
    assert (id(m2), id(w2)) == ids  # the same Parameter objects
    assert torch.allclose(net[0].weight, theta, rtol=rtol, atol=1e-300)
    assert torch.allclose(m2**2 - w2**2, torch.full_like(m2, beta), rtol=rtol * 10, atol=0)
    assert (m2 > 0).all()
    assert m2 not in opt.state and w2 not in opt.state


def test_plain_sgd_drift_is_second_order_and_weight_decay_shrinks_beta():
    def drift(lr, steps=100, wd=0.0):
        torch.manual_seed(1)
        layer = nn.Linear(6, 12, dtype=torch.float64)
        apply_sign_in(layer, {"weight": torch.ones(12, 6, dtype=torch.bool)}, beta=1.0)
        opt = torch.optim.SGD(layer.parameters(), lr=lr, weight_decay=wd)
        x = torch.randn(16, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
        for _ in range(steps):
            opt.zero_grad()
            (layer(x) - 1).pow(2).mean().backward()
            opt.step()
        m, w = _factors(layer)
        return (m**2 - w**2).detach()

    d1 = float((drift(2e-3) - 1).abs().max())
    d2 = float((drift(1e-3) - 1).abs().max())
    assert 3.0 < d1 / d2 < 5.0
    lam, lr, t = 0.1, 1e-3, 1000
    value = drift(lr, steps=t, wd=lam)
    expected = math.exp(-2 * lam * lr * t)
    assert torch.allclose(value, torch.full_like(value, expected), rtol=0.01)


@pytest.mark.parametrize("beta", [1.0, 0.25])
def test_zero_weight_first_step(beta):
    layer = nn.Linear(4, 3, bias=False, dtype=torch.float64)
    with torch.no_grad():
        layer.weight[0, 0] = 0.0
    apply_sign_in(layer, {"weight": torch.ones(3, 4, dtype=torch.bool)}, beta=beta)
    m, w = _factors(layer)
    assert float(m.detach()[0, 0]) == pytest.approx(math.sqrt(beta))
    assert float(w.detach()[0, 0]) == 0.0
    opt = torch.optim.SGD(layer.parameters(), lr=0.01)
    x = torch.randn(5, 4, dtype=torch.float64)
    loss = layer(x).sum()
    loss.backward()
    dtheta = x.sum(dim=0)[0]  # dL/dtheta_00
    w_before = float(w.detach()[0, 0])
    opt.step()
    step = float(w.detach()[0, 0]) - w_before
    assert step == pytest.approx(-0.01 * math.sqrt(beta) * float(dtheta))


def test_beta_zero_freezes_zero_weights():
    layer = nn.Linear(3, 2, bias=False, dtype=torch.float64)
    with torch.no_grad():
        layer.weight[0, 0] = 0.0
    apply_sign_in(layer, {"weight": torch.ones(2, 3, dtype=torch.bool)}, beta=0.0)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(20):
        opt.zero_grad()
        layer(torch.randn(4, 3, dtype=torch.float64)).sum().backward()
        opt.step()
    assert float(layer.weight.detach()[0, 0]) == 0.0


def test_merge_reproduces_function_and_pickles():
    net = _net(seed=2)
    masks = _masks(net, 0.7)
    apply_sign_in(net, masks, beta=1.0)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(30, 6, dtype=torch.float64)
    for _ in range(10):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
    with torch.no_grad():
        before = net(x)
    with pytest.raises(RuntimeError):
        pickle.dumps(net)
    merge_sign_in(net)
    assert not parametrize.is_parametrized(net[0])
    assert isinstance(net[0].weight, nn.Parameter)
    with torch.no_grad():
        assert torch.allclose(net(x), before, atol=1e-12, rtol=0)
    for name, mask in masks.items():
        assert (net.get_parameter(name)[~mask] == 0).all()
    net2 = pickle.loads(pickle.dumps(net))
    assert torch.equal(net2[0].weight, net[0].weight)


def test_apply_sign_in_validation():
    net = _net()
    ok = torch.ones(12, 6, dtype=torch.bool)
    with pytest.raises(ValueError, match="not a parameter"):
        apply_sign_in(net, {"5.weight": ok})
    with pytest.raises(ValueError, match="shape"):
        apply_sign_in(net, {"0.weight": torch.ones(6, 12, dtype=torch.bool)})
    with pytest.raises(TypeError, match="bool"):
        apply_sign_in(net, {"0.weight": ok.double()})
    with pytest.raises(ValueError, match="beta"):
        apply_sign_in(net, {"0.weight": ok}, beta=-1.0)
    with pytest.raises(ValueError, match="not in masks"):
        apply_sign_in(net, {"0.weight": ok}, beta={"2.weight": 1.0})
    apply_sign_in(net, {"0.weight": ok})
    with pytest.raises(ValueError, match="parametrized"):
        apply_sign_in(net, {"0.weight": ok})
    with pytest.raises(ValueError, match="parametrized"):
        apply_sign_in(net, {"0.parametrizations.weight.original0": ok})
    with pytest.raises(TypeError):
        SignIn(ok.double())


def test_layerwise_beta():
    net = _net()
    ones = {k: torch.ones_like(p, dtype=torch.bool) for k, p in net.named_parameters()
            if k.endswith("weight")}
    apply_sign_in(net, ones, beta={"0.weight": 1.0, "2.weight": 4.0})
    m, w = _factors(net[2])
    assert torch.allclose(m**2 - w**2, torch.full_like(m, 4.0))


class _TeacherStudent(nn.Module):
    """Student a * relu(w x) for teacher relu(x), x ~ N(0, 1): the population loss."""

    def __init__(self, a, w):
        super().__init__()
        self.a = nn.Linear(1, 1, bias=False, dtype=torch.float64)
        self.w = nn.Linear(1, 1, bias=False, dtype=torch.float64)
        with torch.no_grad():
            self.a.weight.fill_(a)
            self.w.weight.fill_(w)

    def loss(self):
        a, w = self.a.weight[0, 0], self.w.weight[0, 0]
        return (a * a * w * w - 2 * a * torch.relu(w) + 1) / 4


def _teacher_student(a, w, beta, steps=3000, lr=0.1, every=300):
    model = _TeacherStudent(a, w)
    if beta is not None:
        one = torch.ones(1, 1, dtype=torch.bool)
        apply_sign_in(model, {"a.weight": one, "w.weight": one}, beta=beta)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for t in range(steps):
        opt.zero_grad()
        model.loss().backward()
        opt.step()
        if beta is not None and (t + 1) % every == 0:
            reset_sign_in(model, opt)
    with torch.no_grad():
        return float(model.loss()), float(model.a.weight), float(model.w.weight)


_MIXED = {"a.weight": 1.0, "w.weight": 0.1}


@pytest.mark.parametrize(
    "init, beta, solved",
    [
        ((0.5, 0.3), None, True),
        ((0.5, 0.3), 1.0, True),
        ((-0.5, 0.3), None, False),
        ((-0.5, 0.3), 1.0, False),
        ((-0.5, 0.3), _MIXED, True),
        ((0.5, -0.3), _MIXED, False),
    ],
)
def test_teacher_student_sign_flip(init, beta, solved):
    # GD with lr 0.1 for 3000 steps, reset every 300: the same flow as the spec's
    # lr 0.01 / 20,000 steps / reset every 2,000, at a fraction of the time
    loss, a, w = _teacher_student(*init, beta)
    if solved:
        assert loss < 1e-4
        assert a > 0
    else:
        assert loss > 0.2
    if init == (-0.5, 0.3) and beta is None:
        # gradient flow conserves a^2 - w^2 (GD up to O(lr^2)), so a cannot cross zero
        assert a < -0.9 * math.sqrt(0.5**2 - 0.3**2)
    if init == (0.5, -0.3):
        assert w < 0  # the impossibility case: a negative w receives no gradient signal


def test_sign_in_reset_callback_and_flip_history():
    module = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    masks = prune_at_init(module, "random", 0.5, random_state=0)
    apply_sign_in(module, masks)
    X = np.random.RandomState(0).randn(60, 4).astype("float32")
    y = (X[:, 0] * X[:, 1] > 0).astype("int64")
    cb = SignInReset(every=3)
    net = NeuralNetClassifier(module, criterion=nn.CrossEntropyLoss, optimizer=torch.optim.SGD,
                              lr=0.5, max_epochs=7, train_split=None, verbose=0, callbacks=[cb])
    net.fit(X, y)
    assert cb.n_resets_ == 2
    flips = net.history[:, "sign_flip_fraction"]
    assert len(flips) == 7 and all(0 <= f <= 1 for f in flips)
    m, w = _factors(net.module_[0])
    assert m not in net.optimizer_.state or net.optimizer_.state[m] == {}  # cleared at epoch 6
    with pytest.raises(ValueError, match="every"):
        NeuralNetClassifier(nn.Linear(4, 2), callbacks=[SignInReset(every=0)]).initialize()


def test_mask_follows_module_to_dtype():
    layer = nn.Linear(3, 2)
    apply_sign_in(layer, {"weight": torch.ones(2, 3, dtype=torch.bool)})
    layer.double()
    assert layer.parametrizations.weight[0].mask.dtype == torch.float64
    assert layer.weight.dtype == torch.float64


@pytest.mark.slow
def test_digits_sign_in_matches_plain_at_90_percent():
    res = sign_in_comparison(random_state=0, sparsity=0.9, epochs=30)
    assert res["plain"]["accuracy"] > 0.9
    assert abs(res["sign_in"]["accuracy"] - res["plain"]["accuracy"]) < 0.01 + 1e-9
    # the parity above would also hold if Sign-In did nothing (the same init, mask and
    # batches then give the plain run bit for bit): require that it changed the training
    assert res["sign_in"]["early_loss"] != res["plain"]["early_loss"]
    assert res["sign_in"]["weight_distance"] > 0.05
    assert res["sign_in"]["merge_error"] < 1e-5
    assert 0 < res["sign_in"]["sign_flips"] < 0.5
    assert 0 < res["plain"]["sign_flips"] < 0.5


@settings(deadline=None, max_examples=40)
@given(
    theta=st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=20),
    beta=st.floats(0.0, 10.0),
)
@example(theta=[0.0], beta=5e-324)  # subnormal beta: beta**2 underflowed to 0 and gave m = 0
def test_property_split_invariants(theta, beta):
    t = torch.tensor(theta, dtype=torch.float64)
    sign_in = SignIn(torch.ones_like(t, dtype=torch.bool), beta=beta).double()
    m, w = sign_in.right_inverse(t)
    assert torch.allclose(m * w, t, rtol=1e-12, atol=1e-12)
    assert torch.allclose(m**2 - w**2, torch.full_like(m, beta), rtol=1e-9, atol=1e-9)
    assert (m >= 0).all()
    if beta > 0:
        assert (m > 0).all()
    assert torch.equal(sign_in(m, w), m * w)
