"""The report's "graphon" row helpers on tiny settings (issue 32: the code that writes
the report's numbers is tested, not only run by the report)."""

from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.report import _exp_graphon


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X[:128]), y[:128]


def test_spearman_helper():
    rows = [{"a": float(i), "b": float(-i)} for i in range(5)]
    rho, p = _exp_graphon._spearman(rows, "a", "b")
    assert rho == pytest.approx(-1.0) and p < 0.05
    few = [{"a": 1.0, "b": np.nan}, {"a": 2.0, "b": 1.0}, {"a": 3.0, "b": 2.0}]
    assert all(np.isnan(_exp_graphon._spearman(few, "a", "b")))  # 2 finite pairs


def test_graphon_masks_keep_shapes_and_densities(digits):
    from sklearn_cispa.pruning import make_graphon_mlp, prune_at_init

    net = make_graphon_mlp(64, (48, 48, 48), n_outputs=10, random_state=0)
    masks = prune_at_init(net, "random", 0.8, random_state=1)
    drawn = _exp_graphon._graphon_masks(masks, seed=0)
    assert list(drawn) == list(masks)
    for key in masks:
        assert drawn[key].shape == tuple(masks[key].shape)
        assert abs(drawn[key].mean() - masks[key].float().mean().item()) < 0.05


def test_early_loss_is_relative_and_below_one_for_a_trainable_net(digits):
    from sklearn_cispa.pruning import make_graphon_mlp

    X, y = digits
    net = make_graphon_mlp(64, (32, 32, 32), n_outputs=10, random_state=0)
    early = _exp_graphon._early_loss(net, torch.as_tensor(X), torch.as_tensor(y))
    assert 0 < early < 1


def test_one_seed_and_spectral_seed_on_tiny_networks(digits, tmp_path):
    X, y = digits
    conv = _exp_graphon._one_seed((32, 64), X, y, 0)
    assert set(conv) == {"random", "snip"}
    assert abs(conv["random"]["density"] - 0.2) < 0.01
    assert len(conv["snip"]["std"]) == 2 and len(conv["snip"]["dist"]) == 1
    rows = _exp_graphon._spectral_seed(("random", "snip"), (0.8,), 32, 24, True, X, y, 0)
    assert [r["method"] for r in rows] == ["random", "snip"]
    for r in rows:
        # the analytic kernel of the hidden graphons is the dense one rescaled (closed form)
        assert r["analytic_dev"] < 1e-12
        for key in ("top", "top_centred", "g_top", "a_top"):
            assert 0 < r[key] <= 1
        assert r["a_rel"] > 0 and np.isfinite(r["g_early"]) and 0 < r["early"] <= 1
        assert r["spectrum"].sum() == pytest.approx(1.0)
    pytest.importorskip("matplotlib")
    figures = _exp_graphon._spectral_figure(rows, ("random", "snip"), tmp_path)
    assert figures and all((tmp_path / f).exists() or Path(f).exists() for f in figures)
