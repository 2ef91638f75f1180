"""Report rows on tiny settings: lira, mibp, mmi, neurules, rcp1, maxsup, nanoadam, sign_in.

Each row's own code runs end to end through the runner (``run_row``: schema, finite
values, verdict vocabulary, printed = stored numbers). Sizes are shrunk by wrapping the
row's experiment helper or data loader with smaller arguments (``shrink``); a test that
stubs per-seed results instead says so, and checks only the row's reporting.
"""

import functools
import importlib

import numpy as np
import pytest

lira = importlib.import_module("sklearn_cispa.report._exp_lira")
mibp = importlib.import_module("sklearn_cispa.report._exp_mibp")
mmi = importlib.import_module("sklearn_cispa.report._exp_mmi")
rcp1 = importlib.import_module("sklearn_cispa.report._exp_rcp1")
neural = importlib.import_module("sklearn_cispa.report._exp_neural")
neural_exp = importlib.import_module("sklearn_cispa.report._neural_experiments")


def test_lira_row_on_a_tiny_pool(monkeypatch, run_row):
    tiny = {"n_pool": 80, "hidden": (4,), "max_iter": 30, "n_reference": 4, "n_targets": 2}
    monkeypatch.setattr(lira, "QUICK", tiny)
    row = run_row("lira")
    assert row["runs"] == 3
    assert 0 <= row["value"] <= 1 and 0 <= row["peer value"] <= 1
    assert "M=4" in row["settings"] or "4 references" in row["settings"]
    assert row["verdict"].startswith(("Reproduces", "Does not fully reproduce"))


def test_mibp_row_runs_its_three_bounds(monkeypatch, run_row):
    orig = mibp._one_seed
    monkeypatch.setattr(mibp, "_one_seed", lambda seed, n, e, eps: orig(seed, 12, 2, eps))
    row = run_row("mibp")
    assert row["runs"] == 3 and 0 <= row["value"] <= 1 and 0 <= row["peer value"] <= 1
    assert "SCIP solves optimal" in row["details"]
    assert row["verdict"].startswith(("Reproduces", "Partly", "Does not reproduce"))


@pytest.mark.parametrize(
    ("mibp_acc", "interval_acc", "ratio", "reproduced", "lead"),
    [
        ([0.9, 0.8, 0.85], [0.5, 0.45, 0.5], 3.0, True, "Reproduces"),
        ([0.9, 0.4, 0.5], [0.5, 0.45, 0.5], 3.0, None, "Partly"),
        ([0.5, 0.4, 0.45], [0.9, 0.8, 0.85], 0.5, False, "Does not reproduce"),
    ],
)
def test_mibp_verdict_branches(
    monkeypatch, tmp_path, mibp_acc, interval_acc, ratio, reproduced, lead
):
    """The verdict from stubbed per-seed results (the row's reporting only)."""
    seeds = iter(range(3))

    def fake(seed, n_train, n_epochs, eps):
        i = next(seeds)
        width = {
            "interval": np.array([2.0, ratio]),
            "lp": np.array([1.5, 1.2]),
            "mibp": np.array([1.0, 1.0]),
        }
        acc = {"interval": interval_acc[i], "lp": 0.6, "mibp": mibp_acc[i]}
        return {
            b: {
                "acc": acc[b],
                "clean": 0.9,
                "width": width[b],
                "status": ["optimal"] if b == "mibp" else [],
            }
            for b in mibp.BOUNDS
        }

    monkeypatch.setattr(mibp, "_one_seed", fake)
    res = mibp.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is reproduced and res.verdict.startswith(lead)
    assert res.value == pytest.approx(np.mean(mibp_acc))
    assert "3/3 SCIP solves optimal" in res.details


def test_mmi_row_with_two_member_ensembles(shrink, run_row):
    shrink(mmi, "digits_selective_prediction", n_members=2)
    row = run_row("mmi")
    assert row["runs"] == 3 and 0.5 < row["value"] <= 1 and 0.5 < row["peer value"] <= 1
    # every compared measure is reported beside MMI and E-Diff
    for k in mmi.MEASURES:
        if k not in ("MMI", "E-Diff"):
            assert f"{k} " in row["details"], k


@pytest.mark.parametrize(
    ("mmi_auc", "ediff_auc", "gh_auc", "best_plain", "reproduced"),
    [
        ([0.95, 0.96, 0.97], [0.90, 0.91, 0.92], [0.95, 0.96, 0.97], False, True),
        ([0.95, 0.96, 0.97], [0.90, 0.91, 0.92], [0.90, 0.90, 0.90], True, None),
        ([0.90, 0.91, 0.92], [0.95, 0.96, 0.97], [0.90, 0.91, 0.92], False, False),
    ],
)
def test_mmi_verdict_branches(
    monkeypatch, tmp_path, mmi_auc, ediff_auc, gh_auc, best_plain, reproduced
):
    """The verdict from stubbed accuracy-rejection AUCs (the row's reporting only)."""
    it = iter(range(3))

    def fake(seed):
        i = next(it)
        auc = {k: 0.8 for k in mmi.MEASURES}
        auc.update(
            {"MMI": mmi_auc[i], "MMI-Lin": mmi_auc[i], "E-Diff": ediff_auc[i], "GH": gh_auc[i]}
        )
        if best_plain:
            auc["1 - max p"] = 0.99
        return {k: (np.linspace(0, 0.99, 5), np.linspace(0.9, 1, 5), v) for k, v in auc.items()}

    monkeypatch.setattr(mmi, "digits_selective_prediction", fake)
    res = mmi.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is reproduced
    assert res.verdict.startswith("Reproduces" if reproduced else "Does not fully reproduce")
    assert ("the plain score '1 - max p'" in res.verdict) == best_plain


def test_uncertainty_scores_skip_gh_for_many_classes():
    rng = np.random.default_rng(0)
    probas = rng.dirichlet(np.ones(16), size=(4, 3))
    scores = mmi.uncertainty_scores(probas)
    assert "GH" not in scores and list(scores) == [k for k in mmi.MEASURES if k != "GH"]
    assert all(np.all(np.isfinite(v)) and v.shape == (4,) for v in scores.values())
    assert mmi.entropy_bits([0.5, 0.5, 0.0]) == pytest.approx(1.0)


def test_neurules_row_on_short_training(monkeypatch, run_row):
    import sklearn_cispa.rules

    monkeypatch.setattr(
        sklearn_cispa.rules,
        "NeurulesClassifier",
        functools.partial(sklearn_cispa.rules.NeurulesClassifier, max_epochs=3),
    )
    row = run_row("neurules")
    assert row["runs"] == 5 and 0.3 < row["value"] <= 1 and 0.8 < row["peer value"] <= 1
    assert "rules" in row["details"] and "CART leaves" in row["details"]


@pytest.mark.parametrize(
    ("ours", "cart", "reproduced", "lead"),
    [
        ([0.95, 0.96, 0.97, 0.95, 0.96], [0.90, 0.91, 0.92, 0.90, 0.91], True, "Reproduces"),
        ([0.90, 0.91, 0.92, 0.90, 0.91], [0.95, 0.96, 0.97, 0.95, 0.96], False, "Does not"),
        ([0.95, 0.90, 0.92, 0.90, 0.96], [0.90, 0.95, 0.92, 0.93, 0.91], None, "Not resolvable"),
    ],
)
def test_neurules_verdict_branches(monkeypatch, tmp_path, ours, cart, reproduced, lead):
    """The verdict from stub classifiers that score the given accuracies per fold
    (the row's reporting only)."""
    import sklearn.tree

    import sklearn_cispa.rules

    def stub(scores, **extra):
        it = iter(scores)

        class Stub:
            def __init__(self, **params):
                self.score_ = next(it)

            def fit(self, X, y):
                return self

            def score(self, X, y):
                return self.score_

            def get_n_leaves(self):
                return 10

        for k, v in extra.items():
            setattr(Stub, k, v)
        return Stub

    neurules = importlib.import_module("sklearn_cispa.report._exp_neurules")
    monkeypatch.setattr(
        sklearn_cispa.rules, "NeurulesClassifier", stub(ours, n_rules_=4, n_conditions_=6)
    )
    monkeypatch.setattr(sklearn.tree, "DecisionTreeClassifier", stub(cart))
    res = neurules.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is reproduced and res.verdict.startswith(lead)
    assert res.value == pytest.approx(np.mean(ours)) and res.peer_value == pytest.approx(
        np.mean(cart)
    )


def test_rcp1_row_on_a_digits_subset(monkeypatch, run_row):
    """The row on the first 1200 digits (718 train, 400 calibration, 82 attacked)."""
    import sklearn.datasets

    load = sklearn.datasets.load_digits

    def small(return_X_y=False):
        X, y = load(return_X_y=True)
        return X[:1200], y[:1200]

    monkeypatch.setattr(sklearn.datasets, "load_digits", small)
    row = run_row("rcp1")
    assert row["runs"] == 5 and 0 <= row["value"] <= 1 and 0 <= row["peer value"] <= 1
    assert "BinCP(N=100 passes)" in row["details"]
    assert row["verdict"].startswith(("Reproduces", "Does not reproduce"))


def test_rcp1_verdict_when_the_attack_bites(monkeypatch, tmp_path):
    """Stubbed per-split coverages (the row's reporting only): RCP1 keeps coverage,
    vanilla CP drops, so the row reproduces."""
    it = iter(range(5))

    def fake(model, X, y, tr, rest, key, seed):
        i = next(it)
        return {
            "vanilla": {"cov": 0.80 + 0.01 * i, "size": 1.0},
            "rcp1": {"cov": 0.93 + 0.005 * i, "size": 1.4},
            "bincp": {"cov": 0.98, "size": 1.6},
        }

    monkeypatch.setattr(rcp1, "_one_split", fake)
    monkeypatch.setattr(rcp1, "parallel_map", lambda f, tasks: [f(*t) for t in tasks])
    res = rcp1.run(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is True and res.verdict.startswith("Reproduces")
    assert res.value == pytest.approx(0.94) and res.peer_value == pytest.approx(0.82)


def test_neural_rows_on_tiny_networks(shrink, run_row):
    shrink(neural_exp, "loss_comparison", hidden=(8,), max_epochs=2)
    shrink(neural_exp, "split_digits", hidden=(8,), pre_epochs=2, ft_epochs=2)
    shrink(neural_exp, "sign_in_comparison", hidden=(8,), epochs=2)
    for name in ("maxsup", "nanoadam", "sign_in"):
        row = run_row(name)
        assert row["runs"] == 3, name
        assert len(row["figures"]) >= 1, name


@pytest.mark.parametrize("gain", [0.05, -0.05, 0.0])
def test_neural_rows_verdict_branches(monkeypatch, tmp_path, gain):
    """The three rows' verdicts from stubbed per-seed results (reporting only)."""
    noise = iter(np.tile([0.0, 0.001, -0.001], 30))

    def loss_comparison(seed, **kw):
        base = 0.9 + next(noise)
        acc = {"cross_entropy": base - 0.01, "label_smoothing": base, "maxsup": base + gain}
        return {k: {"accuracy": v, "conf_err": 0.5} for k, v in acc.items()}

    def split_digits(configs, random_state, **kw):
        d = next(noise)
        nano_forget = 0.02 + d if gain == 0 else 0.001 + d / 10
        nano_task2 = 0.95 + d + min(gain, 0)
        return {
            "AdamW": {"forgetting": 0.02 + d, "task2": 0.95 + d, "state_bytes": 200},
            "NanoAdam": {"forgetting": nano_forget, "task2": nano_task2, "state_bytes": 20},
        }

    def sign_in_comparison(seed, **kw):
        d = next(noise)
        return {
            "plain": {"accuracy": 0.8 + d, "sign_flips": 10},
            "sign_in": {"accuracy": 0.8 + gain + d, "sign_flips": 20},
        }

    monkeypatch.setattr(neural_exp, "loss_comparison", loss_comparison)
    monkeypatch.setattr(neural_exp, "split_digits", split_digits)
    monkeypatch.setattr(neural_exp, "sign_in_comparison", sign_in_comparison)
    for run in (neural.run_maxsup, neural.run_nanoadam, neural.run_sign_in):
        res = run(quick=True, out_dir=tmp_path, random_state=0)
        assert res.reproduced in (True, None, False) and res.verdict
        assert np.isfinite(res.value) and np.isfinite(res.peer_value)
    # a resolved gain reproduces the MaxSup row, a resolved loss contradicts it
    res = neural.run_maxsup(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is {0.05: True, -0.05: False, 0.0: None}[gain]
    res = neural.run_sign_in(quick=True, out_dir=tmp_path, random_state=0)
    assert res.reproduced is {0.05: True, -0.05: False, 0.0: None}[gain]
    res = neural.run_nanoadam(quick=True, out_dir=tmp_path, random_state=0)
    lead = {0.05: "Reproduces", -0.05: "Not reproduced", 0.0: "Does not reproduce"}[gain]
    assert res.verdict.startswith(lead) and res.reproduced is (gain > 0)


def test_local_sgd_row_at_its_quick_setting(run_row):
    """The row as the quick report runs it (3 seeds, two settings: about 3 s)."""
    row = run_row("local_sgd")
    assert row["runs"] == 3 and row["value"] > 0 and row["peer value"] > 0
    assert "tau*zeta*" in row["verdict"]
