"""The causal rows of the report (augmented_iv, causal_mixture, causal_mixture_sachs) on tiny
settings: each row's own code runs end to end through the runner, with its data shrunk.

The sizes are shrunk by wrapping the row's data generator or experiment helper (the
``shrink`` fixture); the verdict branches that tiny data does not reach are driven by
stubbed per-seed results, which tests only the row's reporting, not the method.
"""

import importlib

import numpy as np
import pytest

from sklearn_cispa.report._catalog import OUTCOMES

aiv = importlib.import_module("sklearn_cispa.report._exp_augmented_iv")
cmm = importlib.import_module("sklearn_cispa.report._exp_causal_mixture")
sachs = importlib.import_module("sklearn_cispa.report._exp_causal_mixture_sachs")
cmm_eval = importlib.import_module("sklearn_cispa.report._cmm_eval")


def _tiny_aiv(monkeypatch):
    make = aiv.make_confounded_linear
    monkeypatch.setattr(
        aiv,
        "make_confounded_linear",
        lambda n, d, c, random_state: make(120, 4, c, random_state=random_state),
    )


def test_augmented_iv_row_on_tiny_sems(monkeypatch, run_row):
    _tiny_aiv(monkeypatch)
    row = run_row("augmented_iv")
    assert row["runs"] == 6
    # nCER is in [0, 1): 0 the causal solution, 0.5 what h = 0 scores
    assert 0 <= row["value"] < 1 and 0 <= row["peer value"] < 1
    assert "DA+IVL-CV" in row["details"] and "ERM" in row["details"]
    assert row["figures"] and row["figures"][0].endswith("augmented_iv_ncer.png")


@pytest.mark.parametrize(
    ("errors", "reproduced"),
    [
        # CV below DA+ERM below ERM on every SEM: resolved
        ((0.5, 0.2, 0.1), True),
        # the right order, not resolved (one SEM against)
        ((0.5, 0.2, 0.1, 0.5, 0.2, 0.25), None),
        # CV above DA+ERM everywhere
        ((0.5, 0.1, 0.2), False),
    ],
)
def test_augmented_iv_verdict_branches(monkeypatch, tmp_path, errors, reproduced):
    """The row's verdict from stubbed nCERs (the report's plumbing, not the estimator)."""
    _tiny_aiv(monkeypatch)
    # ncer is called per SEM in the order ERM, DA+ERM, PULSE, CV, alpha=0
    triples = [errors[i : i + 3] for i in range(0, len(errors), 3)]
    values = []
    for k in range(6):
        erm, da, cv = triples[k % len(triples)]
        values += [erm, da, cv, cv, cv]
    it = iter(values)
    monkeypatch.setattr(aiv, "ncer", lambda coef, f: next(it))
    res = aiv.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is reproduced
    word = {True: "Reproduces", None: "Not resolved", False: "Not resolved"}[reproduced]
    assert res.verdict.startswith(word)


def test_causal_mixture_row_on_tiny_data(shrink, run_row):
    pytest.importorskip("causallearn")
    shrink(cmm, "compare_on_generated", n_samples=60, cmm_params={"max_components": 2, "n_init": 1})
    row = run_row("causal_mixture")
    assert 0 <= row["value"] <= 1 and 0 <= row["peer value"] <= 1
    assert row["peer"] == "causal-learn GES (BIC)" and "DirectLiNGAM" in row["details"]
    assert row["verdict"].rstrip().endswith(".") and "DirectLiNGAM" in row["verdict"]


@pytest.mark.parametrize(
    ("cmm_f1", "ges_f1", "reproduced"),
    [
        ([0.9, 0.8, 0.85, 0.9], [0.5, 0.4, 0.45, 0.5], True),
        ([0.5, 0.4, 0.45, 0.5], [0.9, 0.8, 0.85, 0.9], False),
        ([0.9, 0.4, 0.45, 0.5], [0.5, 0.8, 0.45, 0.5], None),
    ],
)
def test_causal_mixture_verdict_branches(monkeypatch, tmp_path, cmm_f1, ges_f1, reproduced):
    """The verdict from stubbed per-seed F1s (the row's reporting only)."""

    def fake(**kw):
        n = len(kw["seeds"])
        return {
            "cmm": (cmm_f1 * 3)[:n],
            "ges": (ges_f1 * 3)[:n],
            "lingam": ([0.7, 0.6, 0.8] * 4)[:n],
            "ari": [0.5] * n,
            "cmm_time": [0.1] * n,
        }

    monkeypatch.setattr(cmm, "compare_on_generated", fake)
    res = cmm.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is reproduced
    assert res.verdict.startswith("Reproduces" if reproduced else "Not resolved")
    # without causal-learn (no peer results) the row names no peer and compares nothing
    monkeypatch.setattr(
        cmm, "compare_on_generated", lambda **kw: {**fake(**kw), "ges": [], "lingam": []}
    )
    res = cmm.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is None and "No peer ran" in res.verdict
    assert res.peer_value != res.peer_value  # nan: nothing was compared


def test_causal_mixture_sachs_row_through_the_runner(monkeypatch, run_row):
    """The row's reporting through the runner on stubbed subsample results
    (``sachs_experiment`` itself is tested in tests/causal/test_sachs.py; its 11-protein
    search takes seconds per subsample even at 8 rows per condition); the one-condition
    count runs on the real data with a stub discoverer that records what it was given."""
    import sklearn_cispa.causal

    seen = []

    class Stub:
        def __init__(self, **params):
            self.params = params

        def fit(self, X):
            seen.append((X.shape, self.params))
            self.n_components_ = (
                np.arange(X.shape[1]) % (3 if self.params.get("flexible_noise") else 2) + 1
            )
            return self

    monkeypatch.setattr(sklearn_cispa.causal, "CausalMixtureDiscoverer", Stub)
    single = sachs._single_condition_mixed(30, {"n_init": 1}, 0)
    monkeypatch.undo()
    # 11 proteins, the first 30 rows of condition 0, log intensities (finite)
    assert [shape for shape, _ in seen] == [(30, 11), (30, 11)]
    assert seen[1][1] == {"random_state": 0, "n_init": 1, "flexible_noise": True}
    assert single == {"rows": 30, "defaults": 5, "flexible_noise": 7}
    f1 = ([0.6, 0.7, 0.8], [0.3] * 3, [0.2] * 3, [0.1] * 3)
    monkeypatch.setattr(cmm_eval, "sachs_experiment", _fake_sachs(f1, 0.8, 0.01))
    monkeypatch.setattr(sachs, "_single_condition_mixed", lambda n, p, rs: {**single, "rows": n})
    row = run_row("causal_mixture_sachs")
    assert row["runs"] == 3 and row["value"] == pytest.approx(0.7)
    assert row["peer"] == "causal-learn GES (BIC)" and row["peer value"] == pytest.approx(0.3)
    assert f"{single['defaults']} of 11 with the defaults" in row["details"]
    assert row["outcome"] == "reproduced"


def _fake_sachs(cmm_f1, auc, p):
    def fake(*, seeds, **kw):
        n = len(seeds)
        per = {m: list(v) for m, v in zip(("cmm", "ges", "pc", "lingam"), cmm_f1)}
        return {
            "f1": per,
            "skeleton_f1": {"cmm": [0.5] * n},
            "shd": {"cmm": [10] * n},
            "target_ami": [0.2] * n,
            "other_ami": [0.1] * n,
            "null_ami": [0.0] * n,
            "mixed": [[1, 2]] * n,
            "evidence_auc": [auc] * n,
            "evidence_p": [p] * n,
            "reference_f1": {m: [0.4] * n for m in per},
        }

    return fake


@pytest.mark.parametrize(
    ("f1", "auc", "p", "reproduced", "lead"),
    [
        (([0.6, 0.7, 0.8], [0.3] * 3, [0.2] * 3, [0.1] * 3), 0.8, 0.01, True, "Target met"),
        (([0.6, 0.3, 0.8], [0.4] * 3, [0.2] * 3, [0.1] * 3), 0.4, 0.5, None, "Target met"),
        (
            ([0.1, 0.2, 0.15], [0.6, 0.7, 0.65], [0.2] * 3, [0.1] * 3),
            0.4,
            0.5,
            False,
            "Target missed",
        ),
        (([0.3, 0.7, 0.5], [0.6, 0.5, 0.7], [0.2] * 3, [0.1] * 3), 0.6, 0.2, None, "Target missed"),
    ],
)
def test_causal_mixture_sachs_verdict_branches(monkeypatch, tmp_path, f1, auc, p, reproduced, lead):
    """The verdict from stubbed subsample results (the row's reporting only)."""
    monkeypatch.setattr(cmm_eval, "sachs_experiment", _fake_sachs(f1, auc, p))
    monkeypatch.setattr(
        sachs,
        "_single_condition_mixed",
        lambda n, p, rs: {"rows": n, "defaults": 3, "flexible_noise": 1},
    )
    res = sachs.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is reproduced and res.verdict.startswith(lead)
    assert ("ranks the five targets first" in res.verdict) == (auc > 0.5 and p < 0.05)
    # without causal-learn: no peer, no comparison
    monkeypatch.setattr(sachs, "is_available", lambda name: False)
    res = sachs.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is None and "No peer ran" in res.verdict


def test_outcomes_vocabulary_is_fixed():
    assert OUTCOMES == ("reproduced", "reproduced within noise", "not reproduced")
