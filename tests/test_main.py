"""``python -m sklearn_cispa`` run in-process (runpy), so that coverage sees ``__main__``.

Each test runs the package as ``python -m sklearn_cispa ARGS`` does (``runpy.run_module``
with ``run_name="__main__"`` and ``sys.argv`` set), on a registry holding tiny rows only:
the exit code is the ``SystemExit`` the module raises.
"""

import csv
import json
import runpy
import sys
import warnings

import pytest

from sklearn_cispa.report import ExperimentResult, _runner, register_experiment
from sklearn_cispa.report._catalog import RowInfo


def _tiny(*, quick, out_dir, random_state):
    return ExperimentResult(
        "acc",
        0.75 if quick else 0.8,
        "peer",
        0.5,
        value_sd=0.05,
        peer_sd=0.1,
        n_runs=3,
        settings=f"tiny, seed {random_state}",
        verdict="Reproduced: 0.75 > 0.5 beyond the spread",
        reproduced=True,
        target="above the peer",
    )


def _fails(*, quick, out_dir, random_state):
    raise ValueError("tiny row failed")


@pytest.fixture
def rows(monkeypatch):
    """An empty registry, no row modules, and one tiny row ``tiny``."""
    monkeypatch.setattr(_runner, "_REGISTRY", {})
    monkeypatch.setattr(_runner, "_static_rows", lambda: {})
    register_experiment("tiny", title="TinyMethod", claim="beats the peer", cost=(2, 30))(
        _tiny
    )
    return _runner._REGISTRY


def run_main(monkeypatch, *args):
    """``python -m sklearn_cispa *args`` in this process; returns the exit code."""
    monkeypatch.setattr(sys, "argv", ["python -m sklearn_cispa", *args])
    with warnings.catch_warnings():
        # runpy warns when sklearn_cispa.__main__ was imported before (by another test)
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(SystemExit) as exc:
            runpy.run_module("sklearn_cispa", run_name="__main__", alter_sys=True)
    return exc.value.code


def test_importing_main_does_not_run_the_report(rows, capsys):
    # imported under its own name (not "__main__"), the module only binds main
    namespace = runpy.run_module("sklearn_cispa.__main__", run_name="not_main")
    assert namespace["main"] is _runner.main
    assert capsys.readouterr() == ("", "")


def test_help_states_the_costs(rows, monkeypatch, capsys):
    assert run_main(monkeypatch, "--help") == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m sklearn_cispa")
    # the quick and the full run's cost, from the rows' declared costs (2 s and 30 s)
    assert "cost: --quick about 0 min in all, the full run about 0 min" in out
    assert "tiny" in out and "TinyMethod" in out and "[2 s quick, 30 s full]" in out
    assert "--jobs N" in out and "--no-progress" in out


def test_bad_only_is_a_usage_error(rows, monkeypatch, capsys):
    assert run_main(monkeypatch, "--only", "nope") == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope'" in err and "'tiny'" in err


@pytest.mark.parametrize("jobs", ["0"])
def test_jobs_zero_is_a_usage_error(rows, monkeypatch, capsys, jobs):
    assert run_main(monkeypatch, "--jobs", jobs) == 2
    assert "--jobs must be a positive integer or -1" in capsys.readouterr().err


def test_jobs_not_an_integer_is_a_usage_error(rows, monkeypatch, capsys):
    assert run_main(monkeypatch, "--jobs", "two") == 2
    assert "invalid int value: 'two'" in capsys.readouterr().err


def test_quick_run_writes_the_report(rows, monkeypatch, capsys, tmp_path):
    out = tmp_path / "rep"
    assert run_main(monkeypatch, "--quick", "--out", str(out), "--no-progress") == 0
    captured = capsys.readouterr()
    assert "TinyMethod" in captured.out and "0.75 ± 0.05" in captured.out
    assert f"report written to {out / 'report.html'}" in captured.err
    payload = json.loads((out / "report.json").read_text())
    assert payload["meta"]["quick"] is True and payload["meta"]["random_state"] == 0
    with open(out / "report.csv", newline="") as fh:
        (record,) = csv.DictReader(fh)
    assert record["value"] == "0.75" and record["outcome"] == "reproduced"


def test_full_run_with_seed_and_progress_lines(rows, monkeypatch, capsys, tmp_path):
    # without a tty the progress is one line per row start and end, with time so far/left
    out = tmp_path / "rep"
    assert run_main(monkeypatch, "--out", str(out), "--random-state", "3") == 0
    captured = capsys.readouterr()
    assert "[0/1] running: tiny (expected 30 s)" in captured.err
    assert "[1/1] done: tiny;" in captured.err and "so far, about" in captured.err
    payload = json.loads((out / "report.json").read_text())
    assert payload["meta"]["quick"] is False and payload["meta"]["random_state"] == 3
    assert payload["rows"][0]["value"] == 0.8
    assert payload["rows"][0]["settings"] == "tiny, seed 3"


def test_failed_row_exits_one(rows, monkeypatch, capsys, tmp_path):
    register_experiment("fails", title="FailingMethod")(_fails)
    assert run_main(monkeypatch, "--quick", "--out", str(tmp_path), "--no-progress") == 1
    captured = capsys.readouterr()
    assert "ValueError: tiny row failed" in captured.err
    assert "failed experiments: FailingMethod" in captured.err
    assert "TinyMethod" in captured.out  # the other row is still reported


def test_no_rows_exits_two(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(_runner, "_REGISTRY", {})
    monkeypatch.setattr(_runner, "_static_rows", lambda: {})
    assert run_main(monkeypatch, "--out", str(tmp_path)) == 2
    assert "no experiments found" in capsys.readouterr().err


def test_declared_row_that_does_not_register_is_a_usage_error(rows, monkeypatch, capsys):
    # a row declared in a module's source whose import does not register it
    ghost = RowInfo(name="ghost", title="Ghost", module="sklearn_cispa.report._catalog")
    monkeypatch.setattr(_runner, "_static_rows", lambda: {"ghost": ghost})
    assert run_main(monkeypatch, "--only", "ghost") == 2
    assert "declared but not registered on import: ghost" in capsys.readouterr().err


def test_two_rows_in_parallel(rows, monkeypatch, capsys, tmp_path):
    register_experiment("tiny2", title="TinyMethod2", cost=(1, 1))(_tiny)
    out = tmp_path / "rep"
    argv = ["--quick", "--jobs", "2", "--out", str(out), "--no-progress"]
    assert run_main(monkeypatch, *argv) == 0
    payload = json.loads((out / "report.json").read_text())
    assert sorted(r["name"] for r in payload["rows"]) == ["tiny", "tiny2"]
    assert payload["meta"]["jobs"] == 2
    assert not list(out.glob("*/.status"))  # the workers' status files are removed
