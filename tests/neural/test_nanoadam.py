"""NanoAdam: state size, frozen entries, refreshes, policies, AdamW equivalence (spec 7.2)."""

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from skorch import NeuralNetClassifier
from torch import nn

from sklearn_cispa.neural import NanoAdam
from sklearn_cispa.report._neural_experiments import split_digits


def _mlp(seed=0, dtype=torch.float32, sizes=(64, 256, 256)):
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b, dtype=dtype), nn.ReLU()]
    return nn.Sequential(*layers)


def _backward(net, seed=0, n=32):
    g = torch.Generator().manual_seed(seed)
    dtype = next(net.parameters()).dtype
    x = torch.randn(n, net[0].in_features, generator=g, dtype=dtype)
    net.zero_grad()
    net(x).pow(2).mean().backward()


def test_state_bytes_and_frozen_entries():
    net = _mlp()
    assert sum(p.numel() for p in net.parameters()) == 82_432
    opt = NanoAdam([{"params": list(net.parameters()), "dense": False}], lr=1e-2,
                   update_fraction=0.1)
    before = [p.detach().clone() for p in net.parameters()]
    _backward(net)
    opt.step()
    n_moments = sum(st["exp_avg"].numel() + st["exp_avg_sq"].numel() for st in opt.state.values())
    assert n_moments == 16_488
    assert n_moments / (2 * 82_432) == pytest.approx(0.1, abs=1e-3)
    # float32 moments; indices in the smallest dtype that fits: int16 for the 64 x 256
    # matrix (16,384 entries) and the biases, int32 for the 256 x 256 matrix (65,536)
    dtypes = [opt.state[p]["indices"].dtype for p in net.parameters()]
    assert dtypes == [torch.int16, torch.int16, torch.int32, torch.int16]
    n_idx = [1638, 26, 6554, 26]
    assert sum(n_idx) == 8_244
    expected = 16_488 * 4 + (1638 + 26 + 26) * 2 + 6554 * 4
    assert opt.state_bytes() == expected
    # honest: every tensor of the state, counted by hand
    assert expected == sum(
        v.numel() * v.element_size() for st in opt.state.values() for v in st.values()
        if torch.is_tensor(v)
    )
    # 12 bytes per updated entry at most (2 float32 moments + int32 index) vs Adam's 8 per
    # entry: the state is at most 1.5 x update_fraction of Adam's (it was 2 x with int64)
    assert opt.state_bytes() <= 1.5 * 0.1 * 8 * 82_432 * 1.001
    for p, p0 in zip(net.parameters(), before):
        st = opt.state[p]
        idx = st["indices"].long()
        n = max(1, round(0.1 * p.numel()))
        assert idx.numel() == n
        outside = torch.ones(p.numel(), dtype=torch.bool)
        outside[idx] = False
        # bit-identical outside the selected set
        assert torch.equal(p.detach().reshape(-1)[outside], p0.reshape(-1)[outside])
        changed = (p.detach() != p0).sum().item()
        assert changed <= n
        # the selection holds the n smallest magnitudes
        mags = p0.reshape(-1).abs()
        assert torch.equal(mags[idx].sort().values, mags.sort().values[:n])


def test_dense_default_for_1d_and_explicit_groups():
    net = _mlp(sizes=(8, 6))
    opt = NanoAdam(net.parameters(), update_fraction=0.2)
    _backward(net)
    opt.step()
    w, b = net[0].weight, net[0].bias
    assert "indices" in opt.state[w] and "indices" not in opt.state[b]
    assert opt.state[b]["exp_avg"].shape == b.shape
    opt2 = NanoAdam([{"params": [w], "dense": True}, {"params": [b], "dense": False}])
    _backward(net)
    opt2.step()
    assert "indices" not in opt2.state[w] and "indices" in opt2.state[b]


def test_refresh_at_multiples_of_mask_interval():
    net = _mlp(sizes=(16, 32))
    opt = NanoAdam([net[0].weight], lr=1e-2, update_fraction=0.25, mask_interval=3)
    w = net[0].weight
    refreshed = []
    last = None
    for t in range(8):
        _backward(net, seed=t)
        opt.step()
        idx = opt.state[w]["indices"]
        refreshed.append(idx is not last)
        last = idx
    assert refreshed == [True, False, False, True, False, False, True, False]


def test_update_fraction_ramp():
    net = _mlp(sizes=(20, 50))
    w = net[0].weight
    opt = NanoAdam([w], update_fraction=0.1, update_fraction_end=0.04, total_steps=10,
                   mask_interval=5)
    sizes = {}
    for t in range(12):
        _backward(net, seed=t)
        opt.step()
        sizes[t] = opt.state[w]["indices"].numel()
    assert sizes[0] == 100 and sizes[4] == 100
    assert sizes[5] == 70 and sizes[10] == 40 and sizes[11] == 40
    assert opt.n_selected(w, 5) == 70


def test_keep_overlap_moments_and_fresh_step():
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(200, dtype=torch.float64))
    opt = NanoAdam([{"params": [w], "dense": False}], lr=1e-3, eps=0.0, update_fraction=0.2,
                   mask_interval=2, moment_policy="keep_overlap")
    for t in range(2):
        w.grad = torch.randn(200, dtype=torch.float64)
        opt.step()
    st = opt.state[w]
    old_idx = st["indices"].long()
    old_m = dict(zip(old_idx.tolist(), st["exp_avg"].tolist()))
    old_c = dict(zip(old_idx.tolist(), st["count"].tolist()))
    assert st["count"].dtype == torch.int32 and set(old_c.values()) == {2}
    # force a different selection: make some selected entries large
    with torch.no_grad():
        w[old_idx[:5]] = 100.0
    before = w.detach().clone()
    g = torch.randn(200, dtype=torch.float64)
    w.grad = g.clone()
    opt.step()
    new_idx = st["indices"].tolist()
    survivors = [i for i in new_idx if i in old_m]
    fresh = [i for i in new_idx if i not in old_m]
    assert survivors and fresh
    pos = {i: j for j, i in enumerate(new_idx)}
    b1 = 0.9
    for i in survivors:
        assert st["count"][pos[i]] == 3
        assert st["exp_avg"][pos[i]].item() == pytest.approx(b1 * old_m[i] + (1 - b1) * g[i].item())
    for i in fresh:
        assert st["count"][pos[i]] == 1
        step = (w.detach()[i] - before[i]).item()
        assert step == pytest.approx(-1e-3 * np.sign(g[i].item()), rel=1e-9)


def test_reset_policy_restarts_bias_correction():
    w = nn.Parameter(torch.randn(100, dtype=torch.float64))
    opt = NanoAdam([{"params": [w], "dense": False}], lr=1e-3, eps=0.0, update_fraction=0.1,
                   mask_interval=3)
    for _ in range(4):
        w.grad = torch.randn(100, dtype=torch.float64)
        before = w.detach().clone()
        opt.step()
    # step 4 is the first after the refresh at t=3: every selected entry moves by lr * sign(g)
    st = opt.state[w]
    assert st["count"] == 1
    moved = (w.detach() - before)[st["indices"].long()]
    assert torch.allclose(moved.abs(), torch.full_like(moved, 1e-3), rtol=1e-9)


def test_full_update_fraction_static_mask_tracks_adamw():
    net_a = _mlp(sizes=(10, 12, 6), dtype=torch.float64)
    net_b = copy.deepcopy(net_a)
    opt_a = torch.optim.AdamW(net_a.parameters(), lr=1e-2, weight_decay=0.01)
    opt_b = NanoAdam([{"params": list(net_b.parameters()), "dense": False}], lr=1e-2,
                     weight_decay=0.01, update_fraction=1.0, mask_interval=10**9)
    for t in range(30):
        _backward(net_a, seed=t)
        _backward(net_b, seed=t)
        opt_a.step()
        opt_b.step()
    for pa, pb in zip(net_a.parameters(), net_b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-10, rtol=0)


def test_dense_groups_track_adamw():
    net_a = _mlp(sizes=(10, 12), dtype=torch.float64)
    net_b = copy.deepcopy(net_a)
    opt_a = torch.optim.AdamW(net_a.parameters(), lr=1e-2, weight_decay=0.1)
    opt_b = NanoAdam([{"params": list(net_b.parameters()), "dense": True}], lr=1e-2,
                     weight_decay=0.1)
    for t in range(20):
        _backward(net_a, seed=t)
        _backward(net_b, seed=t)
        opt_a.step()
        opt_b.step()
    for pa, pb in zip(net_a.parameters(), net_b.parameters()):
        assert torch.allclose(pa, pb, atol=1e-10, rtol=0)


@pytest.mark.parametrize("policy", ["reset", "keep_overlap"])
def test_state_dict_round_trip(policy):
    net = _mlp(sizes=(16, 24, 8), dtype=torch.float64)
    opt = NanoAdam(net.parameters(), lr=1e-2, update_fraction=0.3, mask_interval=3,
                   moment_policy=policy)
    for t in range(4):
        _backward(net, seed=t)
        opt.step()
    net2 = copy.deepcopy(net)
    opt2 = NanoAdam(net2.parameters(), lr=1e-2, update_fraction=0.3, mask_interval=3,
                    moment_policy=policy)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    for t in range(4, 9):
        _backward(net, seed=t)
        _backward(net2, seed=t)
        opt.step()
        opt2.step()
    for p, q in zip(net.parameters(), net2.parameters()):
        assert torch.equal(p, q)
    assert opt.state_bytes() == opt2.state_bytes()


def test_gradient_free_entries_stay_put_and_no_grad_skipped():
    net = _mlp(sizes=(8, 8))
    opt = NanoAdam(net.parameters())
    before = [p.detach().clone() for p in net.parameters()]
    opt.step()  # no gradients yet
    assert all(torch.equal(p, q) for p, q in zip(net.parameters(), before))
    assert opt.state_bytes() == 0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(update_fraction=0.0), "update_fraction"),
        (dict(update_fraction=1.5), "update_fraction"),
        (dict(update_fraction_end=0.05), "total_steps"),
        (dict(mask_interval=0), "mask_interval"),
        (dict(moment_policy="keep"), "moment_policy"),
        (dict(lr=-1.0), "lr"),
        (dict(betas=(0.9, 1.0)), "betas"),
        (dict(weight_decay=-0.1), "weight_decay"),
        (dict(total_steps=0), "total_steps"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NanoAdam([nn.Parameter(torch.zeros(3, 3))], **kwargs)


def test_bad_group_dense():
    with pytest.raises(ValueError, match="dense"):
        NanoAdam([{"params": [nn.Parameter(torch.zeros(3, 3))], "dense": "yes"}])


def test_works_in_skorch_with_param_groups():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(6, 16)
            self.head = nn.Linear(16, 3)

        def forward(self, x):
            return self.head(torch.relu(self.body(x)))

    rng = np.random.RandomState(0)
    X = rng.randn(60, 6).astype("float32")
    y = rng.randint(0, 3, 60).astype("int64")
    torch.manual_seed(0)
    net = NeuralNetClassifier(
        Net,
        criterion=nn.CrossEntropyLoss,
        optimizer=NanoAdam,
        optimizer__update_fraction=0.05,
        optimizer__param_groups=[("head.*", {"dense": True})],
        lr=1e-2,
        max_epochs=2,
        train_split=None,
        verbose=0,
    )
    net.initialize()
    w0 = net.module_.body.weight.detach().clone()
    net.partial_fit(X, y)
    opt = net.optimizer_
    assert opt.param_groups[0]["dense"] is True
    assert "indices" not in opt.state[net.module_.head.weight]
    st = opt.state[net.module_.body.weight]
    assert st["indices"].numel() == round(0.05 * 96)
    assert int((net.module_.body.weight.detach() != w0).sum()) <= round(0.05 * 96)


@pytest.mark.slow
def test_split_digits_forgetting():
    cfg = {
        "adamw": ("adamw", 1e-3),
        "nano": ("nanoadam", 3e-3, 0.01, 20),
        "static": ("nanoadam", 3e-3, 0.01, 10**9),
    }
    res = split_digits(cfg, random_state=0, pre_epochs=30, ft_epochs=30)
    pre = res["_pretrained"]["task1"]
    assert pre > 0.98
    assert pre - res["nano"]["task1"] < 0.005
    assert res["nano"]["forgetting"] < res["adamw"]["forgetting"]
    assert res["adamw"]["task2"] - res["nano"]["task2"] < 0.035
    assert res["static"]["drift"] > res["nano"]["drift"]
    assert res["nano"]["touched"] < 0.2 < res["adamw"]["touched"]
    assert res["nano"]["state_bytes"] < 0.1 * res["adamw"]["state_bytes"]


@settings(deadline=None, max_examples=25)
@given(
    shape=st.lists(st.integers(1, 12), min_size=1, max_size=3),
    update_fraction=st.floats(0.01, 1.0),
    policy=st.sampled_from(["reset", "keep_overlap"]),
    seed=st.integers(0, 1000),
)
def test_property_only_bottom_k_entries_move(shape, update_fraction, policy, seed):
    density = update_fraction
    g = torch.Generator().manual_seed(seed)
    w = nn.Parameter(torch.randn(*shape, generator=g, dtype=torch.float64))
    opt = NanoAdam([{"params": [w], "dense": False}], lr=1e-2, update_fraction=density,
                   mask_interval=2, moment_policy=policy)
    for _ in range(3):
        before = w.detach().clone()
        w.grad = torch.randn(*shape, generator=g, dtype=torch.float64)
        opt.step()
        idx = opt.state[w]["indices"].long()
        n = max(1, round(density * w.numel()))
        assert idx.numel() == n
        outside = torch.ones(w.numel(), dtype=torch.bool)
        outside[idx] = False
        assert torch.equal(w.detach().reshape(-1)[outside], before.reshape(-1)[outside])
    # float64 moments, int16 indices (at most 1,728 entries), int32 counters
    assert opt.state[w]["indices"].dtype == torch.int16
    assert opt.state_bytes() == n * (8 * 2 + 2) + (n * 4 if policy == "keep_overlap" else 0)


def _pruned_linear(sparsity=0.9, seed=0, shape=(64, 64)):
    g = torch.Generator().manual_seed(seed)
    w = nn.Parameter(torch.randn(*shape, generator=g))
    keep = torch.zeros(w.numel(), dtype=torch.bool)
    n_keep = w.numel() - round(sparsity * w.numel())
    keep[torch.randperm(w.numel(), generator=g)[:n_keep]] = True
    return w, keep.view(shape)


def _useful_fraction(opt, w, keep):
    idx = opt.state[w]["indices"].long()
    return float(keep.reshape(-1)[idx].double().mean())


def test_masked_group_spends_the_budget_on_trainable_entries_only():
    """Issue 15: with 90% pruned, the unmasked selection was mostly pruned entries."""
    w, keep = _pruned_linear(0.9)
    g = torch.Generator().manual_seed(1)
    w.grad = torch.randn(w.shape, generator=g) * keep  # pruned entries get zero gradient
    plain = NanoAdam([{"params": [w], "dense": False}], lr=1e-2, update_fraction=0.1)
    plain.step()
    # without the mask: selection by |w| ignores the mask, so about 90% of it is wasted
    assert _useful_fraction(plain, w, keep) < 0.3

    w2, keep2 = _pruned_linear(0.9)
    w2.grad = torch.randn(w2.shape, generator=torch.Generator().manual_seed(1)) * keep2
    before = w2.detach().clone()
    opt = NanoAdam([{"params": [w2], "dense": False, "mask": keep2}], lr=1e-2,
                   update_fraction=0.1)
    opt.step()
    assert _useful_fraction(opt, w2, keep2) == 1.0
    n_trainable = int(keep2.sum())
    assert opt.state[w2]["indices"].numel() == round(0.1 * n_trainable) == opt.n_selected(w2, 0)
    # the selection is the bottom-k of the kept entries, the pruned ones never move
    mags = before.reshape(-1).abs()
    idx = opt.state[w2]["indices"].long()
    kept = mags[keep2.reshape(-1)].sort().values
    assert torch.equal(mags[idx].sort().values, kept[: idx.numel()])
    assert torch.equal(w2.detach()[~keep2], before[~keep2])
    assert int((w2.detach() != before).sum()) == idx.numel()


@pytest.mark.parametrize(
    "group, exc, match",
    [
        (lambda w: {"params": [w, nn.Parameter(torch.zeros(2))],
                    "mask": torch.ones(3, 3, dtype=bool)}, ValueError, "exactly one"),
        (lambda w: {"params": [w], "mask": torch.ones(3, 3)}, TypeError, "bool"),
        (lambda w: {"params": [w], "mask": torch.ones(3, 2, dtype=bool)}, ValueError, "shape"),
        (lambda w: {"params": [w], "mask": torch.zeros(3, 3, dtype=bool)}, ValueError, "no True"),
    ],
)
def test_bad_group_mask(group, exc, match):
    with pytest.raises(exc, match=match):
        NanoAdam([group(nn.Parameter(torch.zeros(3, 3)))])


def test_index_dtype_grows_with_the_tensor():
    from sklearn_cispa.neural._nanoadam import _index_dtype

    assert _index_dtype(32_768) == torch.int16
    assert _index_dtype(32_769) == torch.int32
    assert _index_dtype(2**31) == torch.int32
    assert _index_dtype(2**31 + 1) == torch.int64
    w = nn.Parameter(torch.randn(200, 200))  # 40,000 entries: int32
    w.grad = torch.randn(200, 200)
    opt = NanoAdam([{"params": [w], "dense": False}], update_fraction=0.5)
    opt.step()
    idx = opt.state[w]["indices"]
    assert idx.dtype == torch.int32 and int(idx.max()) < 40_000
