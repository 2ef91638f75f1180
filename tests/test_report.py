import pytest

from sklearn_cispa.report import ExperimentResult, register_experiment
from sklearn_cispa.report import _runner as _report
from sklearn_cispa.report._runner import format_table


def _ok(*, quick, out_dir, random_state):
    (out_dir / "marker.txt").write_text("x")
    return ExperimentResult("acc", 0.9 if quick else 0.95, "peer", 0.8, details="n=10")


def _boom(*, quick, out_dir, random_state):
    raise RuntimeError("exploded")


@pytest.fixture
def registry(monkeypatch):
    # import the real experiment modules first, so that they do not register into the
    # empty registry of this test when main() discovers them
    _report.discover_experiments()
    monkeypatch.setattr(_report, "_REGISTRY", {})
    register_experiment("ok", title="OkMethod", description="fine")(_ok)
    return _report._REGISTRY


def test_report_quick_run_prints_table_and_writes_files(registry, tmp_path, capsys):
    assert _report.main(["--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "OkMethod" in out and "0.9" in out and "peer" in out
    assert (tmp_path / "report.csv").read_text().count("\n") == 2
    assert (tmp_path / "ok" / "marker.txt").exists()


def test_report_failure_is_reported_and_exit_code_nonzero(registry, tmp_path, capsys):
    register_experiment("boom", title="Boom")(_boom)
    assert _report.main(["--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "RuntimeError: exploded" in captured.out
    assert "OkMethod" in captured.out


def test_report_only_and_help(registry, tmp_path, capsys):
    register_experiment("boom", title="Boom")(_boom)
    assert _report.main(["--only", "ok", "--out", str(tmp_path)]) == 0
    with pytest.raises(SystemExit):
        _report.main(["--help"])
    assert "ok" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        _report.main(["--only", "nope"])


def test_register_twice_raises(registry):
    with pytest.raises(ValueError, match="registered twice"):
        register_experiment("ok", title="x")(_boom)


def test_format_table_aligns():
    table = format_table([{"method": "A", "value": 1.23456, "time (s)": 0.1}])
    assert "1.235" in table and table.splitlines()[0].startswith("method")


def test_all_registered_experiments_are_discovered():
    experiments = _report.discover_experiments()
    for exp in experiments.values():
        assert callable(exp.func)
