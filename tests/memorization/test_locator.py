"""CriticalNeuronLocator, NeuronMask and the oracle on small torch models (fast tests)."""

import json
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from torch import nn

from sklearn_cispa.memorization import (
    CriticalNeuronLocator,
    NeuronMask,
    greedy_extraction_oracle,
)


class TinyTransformer(nn.Module):
    """A 2-block causal character transformer with GELU MLPs (a sequence model)."""

    def __init__(self, vocab=7, d=16, hidden=24, blocks=2, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(32, d, generator=g) * 0.1)
        self.attn = nn.ModuleList(
            nn.MultiheadAttention(d, 2, batch_first=True) for _ in range(blocks)
        )
        self.mlp = nn.ModuleList(
            nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
            for _ in range(blocks)
        )
        self.head = nn.Linear(d, vocab)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)

    def forward(self, ids):
        ids = torch.as_tensor(ids).long()
        T = ids.shape[1]
        h = self.embed(ids) + self.pos[:T]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        for attn, mlp in zip(self.attn, self.mlp, strict=True):
            a, _ = attn(h, h, h, attn_mask=causal, need_weights=False)
            h = h + a
            h = h + mlp(h)
        return self.head(h)


class Window(nn.Module):
    """A window model: ids (batch, length) -> next logits (batch, vocab)."""

    def __init__(self, vocab=5, context=3, hidden=12, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.context, self.vocab = context, vocab
        self.fc = nn.Linear(context * vocab, hidden, dtype=torch.float64)
        self.act = nn.ReLU()
        self.out = nn.Linear(hidden, vocab, dtype=torch.float64)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))

    def forward(self, ids):
        ids = torch.as_tensor(ids).long()[:, -self.context:]
        pad = self.context - ids.shape[1]
        if pad > 0:
            ids = torch.cat([ids.new_full((ids.shape[0], pad), -1), ids], dim=1)
        x = nn.functional.one_hot(ids + 1, self.vocab + 1)[..., 1:].double()
        return self.out(self.act(self.fc(x.reshape(len(ids), -1))))


def _ids(n, length, vocab, seed):
    return np.random.RandomState(seed).randint(0, vocab, size=(n, length))


def _record(model, name, x):
    out = []
    handle = dict(model.named_modules())[name].register_forward_hook(
        lambda m, i, o: out.append(o.detach().double())
    )
    with torch.no_grad():
        model(torch.as_tensor(x))
    handle.remove()
    return out[0].numpy()


def test_auto_layers_transformer_and_window():
    loc = CriticalNeuronLocator(TinyTransformer()).fit(_ids(6, 10, 7, 0))
    assert loc.layers_ == ["mlp.0.1", "mlp.1.1"]
    assert loc.n_units_ == {"mlp.0.1": 24, "mlp.1.1": 24}
    win = CriticalNeuronLocator(Window()).fit(_ids(6, 5, 5, 0))
    assert win.layers_ == ["act"] and win.n_units_ == {"act": 12}


@pytest.mark.parametrize("aggregate", ["max", "mean_abs"])
@pytest.mark.parametrize("batch_size", [1, 4, 256])
def test_statistics_equal_numpy_sequence_model(aggregate, batch_size):
    model = TinyTransformer()
    X = _ids(9, 8, 7, 1)
    loc = CriticalNeuronLocator(model, aggregate=aggregate, batch_size=batch_size).fit(X)
    for name in loc.layers_:
        a = _record(model, name, X)  # (n, T, units)
        rows = np.abs(a).mean(axis=1) if aggregate == "mean_abs" else a.reshape(-1, a.shape[-1])
        np.testing.assert_allclose(loc.mu_[name], rows.mean(axis=0), atol=1e-6, rtol=1e-6)
        np.testing.assert_allclose(
            loc.sigma_[name], np.maximum(rows.std(axis=0), 1e-6), atol=1e-6, rtol=1e-6
        )


@pytest.mark.parametrize("aggregate", ["max", "mean_abs"])
def test_statistics_equal_numpy_window_model(aggregate):
    # a window model is run on every prefix X[:, :j], j = 1..L: those are its positions
    model = Window()
    X = _ids(7, 4, 5, 2)
    loc = CriticalNeuronLocator(model, aggregate=aggregate, batch_size=3).fit(X)
    a = np.stack([_record(model, "act", X[:, :j]) for j in range(1, 5)], axis=1)
    rows = np.abs(a).mean(axis=1) if aggregate == "mean_abs" else a.reshape(-1, 12)
    np.testing.assert_allclose(loc.mu_["act"], rows.mean(axis=0), atol=1e-10)
    np.testing.assert_allclose(loc.sigma_["act"], np.maximum(rows.std(axis=0), 1e-6),
                               atol=1e-10)


def test_sigma_floor_for_dead_units():
    model = Window()
    with torch.no_grad():
        model.fc.bias[:3] = -1e3  # three units never fire
    loc = CriticalNeuronLocator(model).fit(_ids(5, 4, 5, 0))
    np.testing.assert_array_equal(loc.sigma_["act"][:3], 1e-6)
    np.testing.assert_array_equal(loc.mu_["act"][:3], 0.0)


def test_fit_leaves_model_and_inputs_unchanged():
    model = TinyTransformer()
    model.train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    X = _ids(4, 6, 7, 0)
    X_before = X.copy()
    CriticalNeuronLocator(model).fit(X)
    assert model.training and all(m.training for m in model.modules())
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k])
    np.testing.assert_array_equal(X, X_before)
    assert not any(m._forward_hooks for m in model.modules())


def test_mask_is_removed_bit_for_bit_and_composes():
    model = TinyTransformer()
    x = torch.as_tensor(_ids(3, 9, 7, 3))
    with torch.no_grad():
        before = model(x)
        with NeuronMask(model, [("mlp.0.1", 1), ("mlp.1.1", 5)]) as m1:
            masked = model(x)
            m2 = NeuronMask(model, [("mlp.0.1", 2)], scale=0.5)
            both = model(x)
            m2.remove()
            assert torch.equal(model(x), masked)
        after = model(x)
    assert not m1.active and not m2.active
    assert torch.equal(before, after)
    assert not torch.equal(before, masked) and not torch.equal(masked, both)
    assert not any(m._forward_hooks for m in model.modules())
    assert json.loads(m1.to_json()) == [["mlp.0.1", 1], ["mlp.1.1", 5]]


@settings(max_examples=20, deadline=None)
@given(scale=st.floats(-3, 3), units=st.sets(st.integers(0, 11), min_size=1, max_size=12))
def test_mask_scales_exactly_the_selected_units(scale, units):
    model = Window()
    x = torch.as_tensor(_ids(4, 3, 5, 0))
    plain = _record(model, "act", x)
    with NeuronMask(model, [("act", u) for u in units], scale=scale):
        masked = _record(model, "act", x)
    expected = plain.copy()
    idx = sorted(units)
    expected[:, idx] = plain[:, idx] * scale
    np.testing.assert_array_equal(masked, expected)


def test_mask_rejects_bad_units():
    model = Window()
    with pytest.raises(ValueError, match="no submodule"):
        NeuronMask(model, [("nope", 0)])
    with pytest.raises(ValueError, match=">= 0"):
        NeuronMask(model, [("act", -1)])
    with pytest.raises(ValueError, match="out of range"), NeuronMask(model, [("act", 99)]):
        model(torch.zeros(1, 3, dtype=torch.long))
    assert not model.act._forward_hooks
    with pytest.raises(TypeError, match="torch.nn.Module"):
        NeuronMask(object(), [])


class Planted(nn.Module):
    """Window model with a planted memory: after token 1 it predicts token 4 through
    unit 0 only, and otherwise follows a bias (closed form: unit 0 is the memory)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 4, dtype=torch.float64)
        self.act = nn.ReLU()
        self.out = nn.Linear(4, 5, dtype=torch.float64)
        with torch.no_grad():
            self.fc.weight.zero_()
            self.fc.bias.copy_(torch.tensor([0.0, 0.5, 0.5, 0.5]))
            self.fc.weight[0, 1] = 10.0  # unit 0 fires on token 1
            self.out.weight.zero_()
            self.out.bias.copy_(torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0]))
            self.out.weight[4, 0] = 1.0  # unit 0 votes for token 4
            self.out.weight[2, 1:] = 0.1  # the other units back the default token 2

    def forward(self, ids):
        ids = torch.as_tensor(ids).long()[:, -1]
        return self.out(self.act(self.fc(nn.functional.one_hot(ids, 5).double())))


def test_planted_unit_is_found_exactly():
    model = Planted()
    X_ref = np.array([[0, 2, 3, 0, 2], [3, 2, 0, 0, 3]])  # never token 1
    loc = CriticalNeuronLocator(model).fit(X_ref)
    assert greedy_extraction_oracle(model, [1], [4])
    [res] = loc.localize([[1]], [[4]])
    assert res["memorized_before"] and res["localized"]
    assert res["neurons"] == [("act", 0)]
    assert res["theta"] == 8.0 and res["n_initial"] == 1
    with loc.deactivate():
        assert not greedy_extraction_oracle(model, [1], [4])
    assert greedy_extraction_oracle(model, [1], [4])
    # the matched random control never picks the located unit
    for seed in range(5):
        control = loc.random_control(res["neurons"], random_state=seed)
        assert len(control) == 1 and control != res["neurons"]
        with loc.deactivate(control):
            assert greedy_extraction_oracle(model, [1], [4])


def test_non_memorized_pair_is_skipped_after_one_call():
    calls = []

    def oracle(model, prefix, target):
        calls.append(1)
        return greedy_extraction_oracle(model, prefix, target)

    loc = CriticalNeuronLocator(Planted(), oracle=oracle).fit([[0, 2, 3]])
    [res] = loc.localize([[0]], [[4]])
    assert len(calls) == 1 and res["n_oracle_calls"] == 1
    assert res == dict(neurons=[], memorized_before=False, localized=False, theta=None,
                       n_initial=0, n_oracle_calls=1, z={})
    assert loc.neurons_ == []


def test_localize_is_deterministic_and_nemo_runs():
    model = TinyTransformer(seed=3)
    X = _ids(8, 10, 7, 5)
    prefixes = [X[0, :5], X[1, :5], X[2, :5]]
    targets = [greedy_target(model, p, 3) for p in prefixes]
    runs = []
    for _ in range(2):
        loc = CriticalNeuronLocator(model, theta_start=4.0).fit(X)
        runs.append(loc.localize(prefixes, targets))
    for a, b in zip(*runs, strict=True):
        assert a["neurons"] == b["neurons"] and a["theta"] == b["theta"]
        for name in a["z"]:
            np.testing.assert_array_equal(a["z"][name], b["z"][name])
    nemo = CriticalNeuronLocator.nemo(model).fit(X)
    assert (nemo.theta_start, nemo.theta_step, nemo.topk_step, nemo.signed,
            nemo.aggregate) == (5.0, 0.25, 1, False, "mean_abs")
    results = nemo.localize(prefixes, targets)
    for res, p, t in zip(results, prefixes, targets, strict=True):
        assert res["memorized_before"]  # the targets are the model's own continuations
        if res["localized"]:
            assert 1 <= len(res["neurons"]) <= res["n_initial"]
            with nemo.deactivate(res["neurons"]):
                assert not greedy_extraction_oracle(model, p, t)
    assert any(r["localized"] for r in results)
    rows = json.loads(nemo.results_to_json())
    assert [len(r["neurons"]) for r in rows] == [len(r["neurons"]) for r in results]


def greedy_target(model, prefix, n):
    seq = list(prefix)
    with torch.no_grad():
        for _ in range(n):
            seq.append(int(model(torch.as_tensor([seq]))[0, -1].argmax()))
    return np.asarray(seq[len(prefix):])


def test_refined_set_is_minimal_for_single_removals():
    model = TinyTransformer(seed=1)
    X = _ids(8, 10, 7, 6)
    prefixes = [X[i, :6] for i in range(4)]
    targets = [greedy_target(model, p, 4) for p in prefixes]
    loc = CriticalNeuronLocator(model).fit(X)
    for res, p, t in zip(loc.localize(prefixes, targets), prefixes, targets, strict=True):
        if not res["localized"] or len(res["neurons"]) < 2:
            continue
        for drop in res["neurons"]:
            rest = [nu for nu in res["neurons"] if nu != drop]
            with loc.deactivate(rest):
                assert greedy_extraction_oracle(model, p, t)


def test_random_control_matches_per_layer_counts():
    loc = CriticalNeuronLocator(TinyTransformer(), random_state=0).fit(_ids(3, 6, 7, 0))
    neurons = [("mlp.0.1", 1), ("mlp.0.1", 7), ("mlp.1.1", 3)]
    control = loc.random_control(neurons)
    assert sorted(u for layer, u in control if layer == "mlp.0.1") != [1, 7]
    assert [layer for layer, _ in control].count("mlp.0.1") == 2
    assert [layer for layer, _ in control].count("mlp.1.1") == 1
    assert not set(control) & set(neurons)
    assert control == loc.random_control(neurons)  # random_state fixes the draw
    assert control != loc.random_control(neurons, random_state=1) or True
    with pytest.raises(ValueError, match="not a hooked layer"):
        loc.random_control([("head", 0)])


def test_oracle_match_fraction_and_validation():
    model = Planted()
    assert greedy_extraction_oracle(model, [1], [4, 2])
    assert not greedy_extraction_oracle(model, [1], [4, 4])
    assert greedy_extraction_oracle(model, [1], [4, 4], match=0.5)
    with pytest.raises(ValueError, match="integer token ids"):
        greedy_extraction_oracle(model, [1.5], [4])
    with pytest.raises(ValueError, match="non-empty"):
        greedy_extraction_oracle(model, [], [4])


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="layers='auto' found no activation"):
        CriticalNeuronLocator(nn.Sequential(nn.Linear(3, 2))).fit(np.ones((2, 3)))
    with pytest.raises(ValueError, match="no submodules named"):
        CriticalNeuronLocator(Window(), layers=["fc", "nope"]).fit(_ids(2, 3, 5, 0))
    loc = CriticalNeuronLocator(Window()).fit(_ids(2, 3, 5, 0))
    with pytest.raises(ValueError, match="pair up"):
        loc.localize([[1]], [[2], [3]])
    with pytest.raises(ValueError, match="theta_step"):
        CriticalNeuronLocator(Window(), theta_step=0).fit(_ids(2, 3, 5, 0))


def test_explicit_layers_clone_and_pickle():
    model = Window()
    loc = CriticalNeuronLocator(model, layers=["fc", "act"]).fit(_ids(4, 3, 5, 0))
    assert loc.layers_ == ["fc", "act"]
    twin = clone(loc)
    assert twin.get_params()["layers"] == ["fc", "act"] and not hasattr(twin, "mu_")
    twin.set_params(scale=0.5, signed=False)
    assert twin.scale == 0.5 and not twin.signed
    restored = pickle.loads(pickle.dumps(loc))
    for name in loc.layers_:
        np.testing.assert_array_equal(restored.mu_[name], loc.mu_[name])


def test_overflowing_inputs_raise():
    # a real-valued sequence model: every feature is a position with 4 hidden units
    model = nn.Sequential(nn.Unflatten(1, (-1, 1)), nn.Linear(1, 4, dtype=torch.float64),
                          nn.ReLU())
    with torch.no_grad():
        model[1].weight.fill_(1.0)
    with pytest.raises(ValueError, match="not finite"):
        CriticalNeuronLocator(model).fit(np.full((4, 3), 1e300))
