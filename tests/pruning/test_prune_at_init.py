"""prune_at_init: counts, hygiene, score definitions, sign balance (spec 7.4)."""

import copy
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn.utils import prune

from sklearn_cispa.neural import MLPNetClassifier, apply_sign_in
from sklearn_cispa.pruning import prune_at_init
from sklearn_cispa.pruning._prune_at_init import _synflow
from sklearn_cispa.report._neural_experiments import block_std, mask_structure, pai_early_loss

METHODS = ["random", "magnitude", "snip", "grasp", "synflow"]


def _mlp(sizes=(8, 16, 12, 4), seed=0, dtype=torch.float64, bias=True):
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b, bias=bias, dtype=dtype))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _data(n=32, d=8, k=4, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=dtype), torch.randint(0, k, (n,), generator=g)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("sparsity", [0.0, 0.5, 0.83])
def test_counts_shapes_and_hygiene(method, sparsity):
    net = _mlp()
    net.train()
    X, y = _data()
    net(X).sum().backward()  # the module has gradients that must survive
    state = copy.deepcopy(net.state_dict())
    grads = [p.grad.clone() for p in net.parameters()]
    rng = torch.get_rng_state()
    masks = prune_at_init(net, method, sparsity, X=X, y=y, random_state=0)
    assert torch.equal(torch.get_rng_state(), rng)
    assert net.training
    for k, v in net.state_dict().items():
        assert torch.equal(v, state[k]) and v.dtype == state[k].dtype
    for p, g in zip(net.parameters(), grads):
        assert torch.equal(p.grad, g)
    weights = {n: p for n, p in net.named_parameters() if n.endswith("weight")}
    assert list(masks) == list(weights)
    total = sum(w.numel() for w in weights.values())
    for name, m in masks.items():
        assert m.dtype == torch.bool and m.shape == weights[name].shape
        assert m.device == weights[name].device
        if method == "random":
            n = weights[name].numel()
            assert int(m.sum()) == n - round(sparsity * n)
    kept = sum(int(m.sum()) for m in masks.values())
    assert kept == total - round(sparsity * total)


@settings(deadline=None, max_examples=20)
@given(
    sparsity=st.floats(0.0, 0.99),
    seed=st.integers(0, 1000),
    method=st.sampled_from(["random", "magnitude", "snip"]),
)
def test_property_exact_counts(sparsity, seed, method):
    net = _mlp(sizes=(5, 7, 3), seed=seed)
    X, y = _data(n=10, d=5, k=3, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # layer collapse at high sparsity
        masks = prune_at_init(net, method, sparsity, X=X, y=y, random_state=seed)
    kept = [int(m.sum()) for m in masks.values()]
    if method == "random":
        assert kept == [n - round(sparsity * n) for n in (35, 21)]
    else:
        assert sum(kept) == 56 - round(sparsity * 56)


def test_random_reproducible_and_matches_torch_count():
    net = _mlp()
    a = prune_at_init(net, "random", 0.7, random_state=3)
    b = prune_at_init(net, "random", 0.7, random_state=3)
    c = prune_at_init(net, "random", 0.7, random_state=4)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], c[k]) for k in a)
    for name, mask in a.items():
        layer = copy.deepcopy(net.get_submodule(name.split(".")[0]))
        prune.random_unstructured(layer, "weight", amount=0.7)
        assert int(layer.weight_mask.sum()) == int(mask.sum())
    rs = np.random.RandomState(3)
    d = prune_at_init(net, "random", 0.7, random_state=rs)
    assert all(torch.equal(a[k], d[k]) for k in a)


def test_magnitude_equals_torch_global_l1():
    net = _mlp(seed=5)
    masks = prune_at_init(net, "magnitude", 0.6)
    ref = copy.deepcopy(net)
    params = [(m, "weight") for m in ref if isinstance(m, nn.Linear)]
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=0.6)
    for (layer, _), (name, mask) in zip(params, masks.items()):
        assert torch.equal(layer.weight_mask.bool(), mask), name


def test_snip_equals_hand_computed_scores():
    net = _mlp(seed=2)
    X, y = _data(seed=2)
    masks = prune_at_init(net, "snip", 0.75, X=X, y=y)
    loss = nn.functional.cross_entropy(net(X), y)
    weights = [p for n, p in net.named_parameters() if n.endswith("weight")]
    grads = torch.autograd.grad(loss, weights)
    scores = torch.cat([(w * g).abs().reshape(-1) for w, g in zip(weights, grads)]).detach()
    keep = scores.numel() - round(0.75 * scores.numel())
    thresh = scores.sort(descending=True).values[keep - 1]
    got = torch.cat([m.reshape(-1) for m in masks.values()])
    assert torch.equal(got, scores >= thresh)


def test_grasp_hessian_gradient_product_matches_finite_differences():
    net = _mlp(sizes=(6, 10, 3), seed=4)
    X, y = _data(n=20, d=6, k=3, seed=4)
    weights = [p for n, p in net.named_parameters() if n.endswith("weight")]

    def grads_at(ws):
        model = copy.deepcopy(net)
        with torch.no_grad():
            for (n, p), w in zip(
                [(n, p) for n, p in model.named_parameters() if n.endswith("weight")], ws
            ):
                p.copy_(w)
        mw = [p for n, p in model.named_parameters() if n.endswith("weight")]
        loss = nn.functional.cross_entropy(model(X) / 200.0, y)
        return [g.detach() for g in torch.autograd.grad(loss, mw)]

    g = grads_at([w.detach() for w in weights])
    eps = 1e-4
    plus = grads_at([w.detach() + eps * gi for w, gi in zip(weights, g)])
    minus = grads_at([w.detach() - eps * gi for w, gi in zip(weights, g)])
    hg_fd = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
    scores = torch.cat([(w.detach() * h).reshape(-1) for w, h in zip(weights, hg_fd)])
    masks = prune_at_init(net, "grasp", 0.5, X=X, y=y)
    got = torch.cat([m.reshape(-1) for m in masks.values()])
    keep = scores.numel() - round(0.5 * scores.numel())
    order = scores.argsort(descending=True)
    # the kept set is the top `keep` of theta * Hg (ties at the boundary aside)
    assert int(got[order[: keep - 2]].sum()) == keep - 2
    assert int(got[order[keep + 2 :]].sum()) == 0
    # and the analytic Hg agrees with the finite difference
    from sklearn_cispa.pruning._prune_at_init import _grasp_scores

    names = [n for n, _ in net.named_parameters() if n.endswith("weight")]
    analytic = torch.cat([s.reshape(-1) for s in _grasp_scores(net, names, X, y)])
    assert torch.allclose(analytic, scores, rtol=1e-4, atol=1e-12)


def test_synflow_score_formula_on_linear_net():
    net = _mlp(sizes=(5, 7, 3), seed=1, bias=False)
    names = ["0.weight", "1.weight"]
    net = nn.Sequential(net[0], net[2])
    _, scores = _synflow(net, names, (5,), n_keep=35, n_total=56, sparsity=0.375, rounds=1)
    W1, W2 = net[0].weight.detach().abs(), net[1].weight.detach().abs()
    expected = W1 * W2.sum(dim=0)[:, None]  # |W1_ij| sum_k |W2_ki|
    assert torch.allclose(scores[0], expected, rtol=1e-12)
    expected2 = W2 * W1.sum(dim=1)[None, :]
    assert torch.allclose(scores[1], expected2, rtol=1e-12)


def test_synflow_keeps_every_layer_at_99_percent():
    net = _mlp(sizes=(64, 256, 256, 10), dtype=torch.float32)
    masks = prune_at_init(net, "synflow", 0.99)
    assert all(int(m.sum()) >= 1 for m in masks.values())
    # random at 99.9% on a small layer collapses it and warns
    tiny = _mlp(sizes=(4, 3, 2))
    with pytest.warns(UserWarning, match="collapse"):
        prune_at_init(tiny, "magnitude", 0.97)


def test_synflow_uses_x_shape_for_conv():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    with pytest.raises(ValueError, match="input shape"):
        prune_at_init(net, "synflow", 0.5)
    masks = prune_at_init(net, "synflow", 0.5, X=np.zeros((2, 1, 8, 8)))
    assert list(masks) == ["0.weight", "3.weight"]
    X = torch.randn(4, 1, 8, 8)
    y = torch.tensor([0, 1, 2, 0])
    for method in ["snip", "grasp"]:
        m = prune_at_init(net, method, 0.5, X=X, y=y)
        assert sum(int(v.sum()) for v in m.values()) == 468 - 234


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(method="l1"), ValueError, "method"),
        (dict(sparsity=1.0), ValueError, "sparsity"),
        (dict(sparsity=-0.1), ValueError, "sparsity"),
        (dict(sparsity="0.5"), TypeError, "sparsity"),
        (dict(method="snip"), ValueError, "X, y"),
        (dict(method="grasp", X=np.zeros((3, 8)), y=np.zeros(2)), ValueError, "rows"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        prune_at_init(_mlp(), **kwargs)


def test_rejects_parametrized_or_pruned_modules_and_non_modules():
    net = _mlp()
    prune.random_unstructured(net[0], "weight", 0.5)
    with pytest.raises(ValueError, match="already"):
        prune_at_init(net)
    net = _mlp()
    apply_sign_in(net, {"0.weight": torch.ones(16, 8, dtype=torch.bool)})
    with pytest.raises(ValueError, match="already"):
        prune_at_init(net)
    with pytest.raises(TypeError, match="Module"):
        prune_at_init(np.zeros(3))
    with pytest.raises(ValueError, match="no nn.Linear"):
        prune_at_init(nn.ReLU())


def test_numpy_inputs_not_modified():
    net = _mlp()
    X = np.random.RandomState(0).randn(10, 8)
    y = np.arange(10) % 4
    X0, y0 = X.copy(), y.copy()
    prune_at_init(net, "snip", 0.5, X=X, y=y)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)


@pytest.mark.parametrize("seed", range(5))
def test_sign_balance_of_kept_initial_weights(seed):
    # the user pattern: global seed for the init, random_state for the mask
    torch.manual_seed(seed)
    net = _mlp(sizes=(64, 256, 256, 10), seed=seed, dtype=torch.float32)
    masks = prune_at_init(net, "random", 0.9, random_state=seed)
    params = dict(net.named_parameters())
    kept = torch.cat([params[k].detach()[m] for k, m in masks.items()])
    assert abs(float((kept > 0).double().mean()) - 0.5) < 0.02
    # the classifier's module-building step
    clf = MLPNetClassifier(hidden_layer_sizes=(256, 256), sparsity=0.9, random_state=seed)
    clf.classes_ = np.arange(10)
    X = np.zeros((20, 64))
    module, masks, _ = clf._build_module(X, np.arange(20) % 10, (256, 256))
    kept = []
    for name, mask in masks.items():
        owner = module.get_submodule(name.rpartition(".")[0])
        kept.append(owner.weight_orig.detach()[mask])
    kept = torch.cat(kept)
    assert abs(float((kept > 0).double().mean()) - 0.5) < 0.02


@pytest.mark.slow
def test_pai_masks_train_faster_than_random():
    res = pai_early_loss(("random", "snip", "synflow"), keep=0.05, random_state=0)
    assert res["synflow"] <= res["snip"] < res["random"]
    assert res["dense"] < res["random"]


def test_block_std_of_uniform_and_block_matrices():
    assert block_std(np.ones((64, 64))) == 0.0
    block = np.zeros((64, 64))
    block[:32, :32] = 1
    assert block_std(block) == pytest.approx(np.std([1] * 64 + [0] * 192))


@pytest.mark.slow
def test_snip_and_synflow_masks_are_structured():
    res = mask_structure(("random", "snip", "synflow"), width=1000, random_state=0)
    assert res["snip"] > 4 * res["random"]
    assert res["synflow"] > 5 * res["random"]


# -- issue 12 item 6: bad inputs end in clear errors naming the problem ---------------
@pytest.mark.parametrize("method", ["snip", "grasp"])
@pytest.mark.parametrize(
    "X, y, match",
    [
        (
            lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, np.nan, X),
            None,
            "NaN or infinite",
        ),
        (None, lambda y: y + 0.5, "class indices"),
        (None, lambda y: np.full(len(y), np.nan), "class indices"),
        (None, lambda y: y - 1, ">= 0"),
        (None, lambda y: y + 100, r"\[0, 4\)"),
        (lambda X: X[:, :5], None, "features"),
        (lambda X: X[:, 0], None, "shape"),
    ],
)
def test_bad_batches_give_clear_errors(method, X, y, match):
    rng = np.random.RandomState(0)
    X0, y0 = rng.randn(12, 8), rng.randint(0, 3, 12)
    X1 = X(X0) if X is not None else X0
    y1 = y(y0) if y is not None else y0
    with pytest.raises(ValueError, match=match):
        prune_at_init(_mlp(), method, 0.5, X=X1, y=y1)


def test_float_labels_holding_whole_numbers_are_accepted():
    rng = np.random.RandomState(0)
    X, y = rng.randn(12, 8), rng.randint(0, 3, 12)
    a = prune_at_init(_mlp(), "snip", 0.5, X=X, y=y)
    b = prune_at_init(_mlp(), "snip", 0.5, X=X, y=y.astype(float))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_synflow_checks_the_width_of_x():
    with pytest.raises(ValueError, match="features"):
        prune_at_init(_mlp(), "synflow", 0.5, X=np.zeros((2, 5)))


def test_public_functions_name_the_bad_parameter():
    from sklearn_cispa.neural import apply_sign_in, merge_sign_in, reset_sign_in

    with pytest.raises(ValueError, match="'module'"):
        reset_sign_in(None)
    with pytest.raises(ValueError, match="'optimizer'"):
        reset_sign_in(_mlp(), optimizer="sgd")
    with pytest.raises(ValueError, match="'module'"):
        merge_sign_in(None)
    with pytest.raises(ValueError, match="'masks'"):
        apply_sign_in(_mlp(), masks=None)
    with pytest.raises(ValueError, match="'random_state'"):
        prune_at_init(_mlp(), random_state="seed")
    with pytest.raises(ValueError, match="'sparsity'"):
        prune_at_init(_mlp(), sparsity=float("nan"))


@pytest.mark.parametrize("scale, offset", [(1e-6, 0.0), (1e6, 0.0), (1.0, 1000.0)])
@pytest.mark.parametrize("method", ["snip", "grasp"])
def test_scores_stay_finite_in_any_units(method, scale, offset):
    # the masks depend on the units (documented); they must still be exact-count masks
    rng = np.random.RandomState(0)
    X, y = rng.randn(16, 8) * scale + offset, rng.randint(0, 3, 16)
    masks = prune_at_init(_mlp(), method, 0.5, X=X, y=y)
    total = sum(m.numel() for m in masks.values())
    assert sum(int(m.sum()) for m in masks.values()) == total - round(0.5 * total)


def test_overflowing_scores_raise():
    rng = np.random.RandomState(0)
    X, y = rng.randn(16, 8) * 1e200, rng.randint(0, 3, 16)
    with pytest.raises(ValueError, match="not finite"):
        prune_at_init(_mlp(), "grasp", 0.5, X=X, y=y)
