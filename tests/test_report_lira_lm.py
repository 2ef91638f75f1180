"""The LM LiRA report helpers on tiny settings (the row runs them at report sizes)."""

import numpy as np
import pytest

pytest.importorskip("transformers")

from sklearn_cispa.report._lira_lm_eval import (  # noqa: E402
    bootstrap_tpr,
    lm_epoch_sweep,
    lm_pool,
)


def test_epoch_sweep_trains_the_stated_passes():
    pool, _ = lm_pool(0, 32)
    half = sum(len(d) + 1 for d in pool) / 2
    out = lm_epoch_sweep(0, epochs=(1, 2), n_pool=32, n_reference=2, n_targets=1)
    assert list(out) == [1, 2]
    for ep, r in out.items():
        assert r["steps"] == max(1, round(ep * half / (16 * 65)))
        assert 0.0 <= r["auc"] <= 1.0 and 0.0 <= r["loss_auc"] <= 1.0
        assert np.isfinite(r["train_loss"]) and r["train_loss"] > 0
        assert -1.0 <= r["rho_last"] <= 1.0


def test_bootstrap_tpr_point_inside_interval():
    rng = np.random.default_rng(0)
    membership = rng.random((2, 200)) < 0.5
    scores = membership + rng.normal(0, 1, (2, 200))
    out = bootstrap_tpr(membership, scores, fprs=(0.1,), n_boot=50, random_state=0)
    tpr, low, high = out[0.1]
    assert low <= tpr <= high and 0.1 < tpr < 1.0
