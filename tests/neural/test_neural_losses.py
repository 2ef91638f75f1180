"""MaxSupLoss, LabelSmoothingLoss and AlphaSchedule: identities of spec 7.1.1."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from skorch import NeuralNetClassifier
from torch.nn import functional as F

from sklearn_cispa.neural import AlphaSchedule, LabelSmoothingLoss, MaxSupLoss


def _logits(n, k, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (3 * torch.randn(n, k, generator=g)).to(dtype), torch.randint(0, k, (n,), generator=g)


def _rows(loss, z, y):
    return torch.stack([loss(z[i : i + 1], y[i : i + 1]) for i in range(z.shape[0])])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.35, 1.0])
def test_ls_identity_and_torch_convention(dtype, alpha):
    z, y = _logits(200, 10, dtype)
    ce = F.cross_entropy(z, y, reduction="none")
    ls = _rows(LabelSmoothingLoss(alpha), z, y)
    zy = z.gather(1, y[:, None]).squeeze(1)
    expected = ce + alpha * (zy - z.mean(dim=1))
    assert torch.allclose(ls, expected, atol=1e-5, rtol=0)
    ref = F.cross_entropy(z, y, label_smoothing=alpha)
    assert torch.allclose(LabelSmoothingLoss(alpha)(z, y), ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_maxsup_equals_ls_on_correct_rows_and_exceeds_elsewhere(dtype):
    alpha = 0.1
    z, y = _logits(2000, 10, dtype, seed=1)
    ms, ls = MaxSupLoss(alpha), LabelSmoothingLoss(alpha)
    gap = _rows(ls, z, y) - _rows(ms, z, y)
    zy = z.gather(1, y[:, None]).squeeze(1)
    assert torch.allclose(gap, alpha * (zy - z.max(dim=1).values), atol=1e-5, rtol=0)
    correct = z.argmax(dim=1) == y
    assert correct.any() and (~correct).any()
    assert gap[correct].abs().max() < 1e-5
    assert (gap[~correct] < 0).all()
    # LS's own penalty is negative on many misclassified rows (error amplification)
    ls_penalty = zy - z.mean(dim=1)
    frac_neg = float((ls_penalty[~correct] < 0).double().mean())
    assert 0.4 < frac_neg < 0.75


def test_penalty_gradient_single_row():
    alpha, k = 0.1, 10
    z = torch.randn(1, k, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    z.requires_grad_(True)
    y = torch.tensor([0])
    loss = MaxSupLoss(alpha)(z, y) - F.cross_entropy(z, y)
    (grad,) = torch.autograd.grad(loss, z)
    top = int(z.argmax())
    expected = torch.full((k,), -alpha / k, dtype=torch.float64)
    expected[top] = alpha * (1 - 1 / k)
    assert torch.allclose(grad[0], expected, atol=1e-12)
    assert abs(float(grad[0, top]) - 0.09) < 1e-12


def test_tie_goes_to_first_index():
    z = torch.tensor([[1.0, 3.0, 3.0, 0.0]], requires_grad=True)
    (MaxSupLoss(0.4)(z, torch.tensor([0])) - F.cross_entropy(z, torch.tensor([0]))).backward()
    assert torch.allclose(z.grad[0], torch.tensor([-0.1, 0.3, -0.1, -0.1]))


@pytest.mark.parametrize("cls", [MaxSupLoss, LabelSmoothingLoss])
def test_one_hot_soft_targets_match_integer_targets(cls):
    z, y = _logits(50, 7, torch.float64, seed=2)
    onehot = F.one_hot(y, 7).to(torch.float64)
    loss = cls(0.2)
    assert torch.allclose(loss(z, y), loss(z, onehot), atol=1e-12)


def test_soft_targets_ls_matches_torch():
    z, _ = _logits(30, 5, torch.float64, seed=4)
    t = torch.softmax(torch.randn(30, 5, dtype=torch.float64), dim=1)
    ref = F.cross_entropy(z, t, label_smoothing=0.3)
    assert torch.allclose(LabelSmoothingLoss(0.3)(z, t), ref, atol=1e-12)


@settings(deadline=None, max_examples=30)
@given(
    n=st.integers(1, 8),
    k=st.integers(2, 6),
    alpha=st.floats(0, 1),
    seed=st.integers(0, 10_000),
)
def test_property_maxsup_ge_ls(n, k, alpha, seed):
    z, y = _logits(n, k, torch.float64, seed)
    ms, ls = MaxSupLoss(alpha)(z, y), LabelSmoothingLoss(alpha)(z, y)
    assert float(ms) >= float(ls) - 1e-12
    ce = F.cross_entropy(z, y)
    assert float(ms) >= float(ce) - 1e-12  # z_max >= mean


def test_diagnostics():
    z, y = _logits(100, 4, torch.float64)
    loss = MaxSupLoss(0.1)
    loss(z, y)
    assert loss.last_ce == pytest.approx(float(F.cross_entropy(z, y)))
    assert loss.last_penalty >= 0
    assert loss.last_misclassified == pytest.approx(float((z.argmax(1) != y).double().mean()))


def test_ramp_values():
    loss = MaxSupLoss(0.1, 0.2)
    assert [round(loss.set_progress(e, 5), 10) for e in range(5)] == [
        0.1,
        0.125,
        0.15,
        0.175,
        0.2,
    ]
    assert loss.set_progress(0, 1) == 0.1
    assert loss.set_progress(9, 5) == pytest.approx(0.2)
    assert LabelSmoothingLoss(0.1).set_progress(3, 5) == 0.1


def _skorch_fit(criterion, max_epochs, callbacks):
    X = np.random.RandomState(0).randn(40, 4).astype("float32")
    y = (X[:, 0] > 0).astype("int64")
    net = NeuralNetClassifier(
        torch.nn.Linear(4, 2),
        criterion=criterion,
        max_epochs=max_epochs,
        train_split=None,
        verbose=0,
        callbacks=callbacks,
    )
    return net.fit(X, y)


@pytest.mark.parametrize("E, expected", [(5, [0.1, 0.125, 0.15, 0.175, 0.2]), (1, [0.1])])
def test_alpha_schedule_in_skorch(E, expected):
    net = _skorch_fit(LabelSmoothingLoss(0.1, 0.2), E, [AlphaSchedule()])
    assert np.allclose(net.history[:, "alpha"], expected)


def test_alpha_schedule_rejects_plain_criterion():
    with pytest.raises(TypeError, match="set_progress"):
        _skorch_fit(torch.nn.CrossEntropyLoss, 2, [AlphaSchedule()])


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        (dict(alpha=-0.1), ValueError),
        (dict(alpha=0.1, alpha_end=-1.0), ValueError),
        (dict(alpha="0.1"), TypeError),
        (dict(alpha=float("nan")), ValueError),
    ],
)
def test_bad_alpha(kwargs, exc):
    with pytest.raises(exc, match="alpha"):
        MaxSupLoss(**kwargs)


def test_ls_alpha_above_one_rejected_maxsup_accepts():
    with pytest.raises(ValueError, match=r"\[0.0, 1.0\]"):
        LabelSmoothingLoss(1.5)
    assert MaxSupLoss(1.5).alpha == 1.5


@pytest.mark.parametrize(
    "z, y, match",
    [
        (torch.zeros(3), torch.zeros(3, dtype=torch.long), "shape"),
        (torch.zeros(3, 1), torch.zeros(3, dtype=torch.long), "2 classes"),
        (torch.zeros(3, 4), torch.zeros(2, dtype=torch.long), "shape"),
        (torch.zeros(3, 4), torch.zeros(3, 3), "soft targets"),
    ],
)
@pytest.mark.parametrize("cls", [MaxSupLoss, LabelSmoothingLoss])
def test_bad_inputs(cls, z, y, match):
    with pytest.raises(ValueError, match=match):
        cls()(z, y)


def test_inputs_not_modified():
    z, y = _logits(20, 5, torch.float64)
    z0, y0 = z.clone(), y.clone()
    MaxSupLoss(0.2)(z, y)
    LabelSmoothingLoss(0.2)(z, y)
    assert torch.equal(z, z0) and torch.equal(y, y0)


@pytest.mark.parametrize("cls", [MaxSupLoss, LabelSmoothingLoss])
def test_spatial_logits_like_torch(cls):
    g = torch.Generator().manual_seed(0)
    z = torch.randn(2, 5, 3, 4, generator=g, dtype=torch.float64)
    y = torch.randint(0, 5, (2, 3, 4), generator=g)
    flat = cls(0.1)(z.movedim(1, -1).reshape(-1, 5), y.reshape(-1))
    assert torch.allclose(cls(0.1)(z, y), flat, atol=1e-12)
    soft = F.one_hot(y, 5).movedim(-1, 1).double()
    assert torch.allclose(cls(0.1)(z, soft), flat, atol=1e-12)
    if cls is LabelSmoothingLoss:
        assert torch.allclose(cls(0.1)(z, y), F.cross_entropy(z, y, label_smoothing=0.1))
    with pytest.raises(ValueError, match="shape"):
        cls(0.1)(z, y[:, :2])


def _explicit(cls, z, target, a):
    """The textbook formula with autograd, as the independent oracle of the fused path."""
    k = z.shape[1]
    zf = z.movedim(1, -1).reshape(-1, k)
    if target.is_floating_point():
        t = target.movedim(1, -1).reshape(-1, k)
        ce = -(t * torch.log_softmax(zf, dim=1)).sum(dim=1)
        zy = (t * zf).sum(dim=1)
    else:
        t = target.reshape(-1)
        ce = F.cross_entropy(zf, t, reduction="none")
        zy = zf.gather(1, t[:, None]).squeeze(1)
    top = zf.max(dim=1).values if cls is MaxSupLoss else zy
    return (ce + a * (top - zf.mean(dim=1))).mean()


@pytest.mark.parametrize("cls", [MaxSupLoss, LabelSmoothingLoss])
@pytest.mark.parametrize("shape", [(50, 7), (4, 5, 3, 2)])
@pytest.mark.parametrize("soft", [False, True])
def test_fused_value_and_gradient_match_the_explicit_formula(cls, shape, soft):
    g = torch.Generator().manual_seed(7)
    z = (3 * torch.randn(*shape, generator=g, dtype=torch.float64)).requires_grad_(True)
    k = shape[1]
    if soft:
        target = torch.softmax(torch.randn(*shape, generator=g, dtype=torch.float64), dim=1)
    else:
        target = torch.randint(0, k, (shape[0], *shape[2:]), generator=g)
    ours = cls(0.3)(z, target)
    ref = _explicit(cls, z, target, 0.3)
    (g1,) = torch.autograd.grad(ours, z)
    (g2,) = torch.autograd.grad(ref, z)
    assert torch.allclose(ours, ref, atol=1e-12, rtol=0)
    assert torch.allclose(g1, g2, atol=1e-12, rtol=0)
    # gradcheck of the hand-written backward
    assert torch.autograd.gradcheck(lambda x: cls(0.3)(x, target), (z.detach().requires_grad_(),))


def test_diagnostics_are_lazy_and_not_pickled():
    import pickle

    loss = MaxSupLoss(0.1)
    assert np.isnan(loss.last_ce)
    z, y = _logits(30, 4, torch.float64)
    loss(z, y)
    assert loss.last_ce == pytest.approx(float(F.cross_entropy(z, y)))
    clone = pickle.loads(pickle.dumps(loss))
    assert np.isnan(clone.last_penalty) and clone.alpha == 0.1


@pytest.mark.parametrize("cls", [MaxSupLoss, LabelSmoothingLoss])
def test_int32_labels_and_fast_path_agree_with_the_general_path(cls):
    z, y = _logits(40, 6, torch.float64, seed=3)
    fast = cls(0.2)(z, y)
    assert torch.allclose(cls(0.2)(z, y.to(torch.int32)), fast, atol=1e-14)
    # the (N, K, 1) layout takes the general path: same value
    assert torch.allclose(cls(0.2)(z[:, :, None], y[:, None]), fast, atol=1e-12)


@pytest.mark.parametrize("cls", [MaxSupLoss, LabelSmoothingLoss])
def test_fast_path_weight_table_equals_the_scattered_weights(cls):
    """Issue 33: the fast path looks its weights up in a table of (label, argmax) rows;
    value and gradient equal those of the weights built by scattering into a fresh matrix
    (:meth:`_fast_weights`, the issue-16 path), ties in the maximum included, across
    batch sizes, dtypes and a changing alpha (the table is cached per batch shape)."""
    loss = cls(0.1, alpha_end=0.3)
    shapes = [(64, 10, torch.float64), (7, 3, torch.float32), (64, 10, torch.float64)]
    for epoch, (n, k, dtype) in enumerate([*shapes, (1, 2, torch.float64)]):
        loss.set_progress(epoch, 3)
        z, y = _logits(n, k, dtype, seed=epoch)
        z[0, :] = z[0].max() + 1.0  # a tie over every class: the first index wins
        z1, z2 = z.clone().requires_grad_(), z.clone().requires_grad_()
        ours = loss(z1, y)
        w = cls._fast_weights(z.detach(), y, loss.current_alpha)
        ref = torch.dot(torch.log_softmax(z2, dim=1).reshape(-1), w.view(-1))
        ours.backward()
        ref.backward()
        assert torch.equal(ours.detach(), ref.detach())
        assert torch.allclose(z1.grad, z2.grad, atol=1e-6, rtol=0)
        assert torch.equal(z1.grad, z2.grad)
        assert torch.allclose(ours, _explicit(cls, z, y, loss.current_alpha), atol=1e-5)
