"""The report's progress in a terminal (tqdm bar) and in a log, on tiny fake rows."""

import io

from sklearn_cispa.report import _runner


class _Tty(io.StringIO):
    """A text stream that says it is a terminal (as tqdm and the runner ask)."""

    def isatty(self):
        return True


def test_progress_in_a_tty_is_a_tqdm_bar_weighted_by_cost():
    stream = _Tty()
    progress = _runner._Progress({"a": 10.0, "b": 30.0}, enabled=True, stream=stream)
    assert progress.bar is not None and progress.bar.total == 40.0
    progress.running(["a"], [])
    assert "running: a" in stream.getvalue()
    progress.running(["b"], ["a"])
    # the bar counts the finished rows' expected seconds, not the rows
    assert progress.bar.n == 10.0 and progress.finished == {"a"}
    assert "running: b" in stream.getvalue()
    progress.close()
    assert progress.bar.n == 40.0
    assert "report: 100%" in stream.getvalue()


def test_progress_in_a_log_prints_no_bar_and_disabled_prints_nothing():
    log = io.StringIO()
    progress = _runner._Progress({"a": 10.0, "b": 30.0}, enabled=True, stream=log)
    assert progress.bar is None
    progress.running(["a"], [])
    progress.running(["b"], ["a"])
    progress.running([], ["a", "b"])
    progress.close()
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("[0/2] running: a (expected 10 s); ")
    assert lines[1].startswith("[1/2] done: a; ") and "so far, about" in lines[1]
    assert lines[2].startswith("[1/2] running: b (expected 30 s); ")
    assert lines[3].startswith("[2/2] done: b; ") and lines[3].endswith("about 00:00 left")
    quiet = _Tty()
    off = _runner._Progress({"a": 1.0}, enabled=False, stream=quiet)
    off.running(["a"], [])
    off.close()
    assert off.bar is None and quiet.getvalue() == ""


def test_time_left_uses_the_pace_measured_so_far(monkeypatch):
    clock = iter([100.0, 110.0])  # start, then 10 s later
    monkeypatch.setattr(_runner.time, "perf_counter", lambda: next(clock))
    progress = _runner._Progress({"a": 5.0, "b": 15.0}, enabled=True, stream=io.StringIO())
    progress.finished = {"a"}
    # 10 s for 5 expected seconds: twice as slow, so b's 15 s take about 30 s
    assert progress._left() == 30.0


def test_time_left_before_any_row_divides_by_the_jobs(monkeypatch):
    monkeypatch.setattr(_runner.time, "perf_counter", lambda: 0.0)
    progress = _runner._Progress({"a": 8.0, "b": 8.0}, enabled=True, stream=io.StringIO(), n_jobs=2)
    assert progress.n_jobs == 2 and progress._left() == 8.0


def test_costs_fall_back_to_the_median_of_the_declared():
    rows = [
        _runner.Experiment("a", "A", None, cost=(2, 20)),
        _runner.Experiment("b", "B", None, cost=(4, 40)),
        _runner.Experiment("c", "C", None, cost=(6, 60)),
        _runner.Experiment("d", "D", None),
    ]
    assert _runner._costs(rows, True) == {"a": 2, "b": 4, "c": 6, "d": 4}
    assert _runner._costs(rows, False)["d"] == 40
    assert _runner._costs([_runner.Experiment("x", "X", None)], True) == {"x": 1.0}


def test_fmt_seconds_is_tqdms_interval():
    assert _runner._fmt_seconds(75) == "01:15"
    assert _runner._fmt_seconds(-3) == "00:00"
    assert _runner._fmt_seconds(3725) == "1:02:05"


def test_get_pyplot_is_none_without_matplotlib(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("no matplotlib here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert _runner.get_pyplot() is None


def test_a_row_returning_something_else_is_an_error_row(tmp_path):
    exp = _runner.Experiment("bad", "Bad", lambda **kw: {"value": 1.0})
    row = _runner.run_experiment(exp, quick=True, out_dir=tmp_path, random_state=0)
    assert row["metric"] == "ERROR" and row["value"] != row["value"]  # nan
    assert row["details"] == "TypeError: Experiment 'bad' must return an ExperimentResult."
    assert not (tmp_path / ".status").exists() or (tmp_path / ".status").read_text() == "done"


def test_capture_without_file_descriptors_keeps_python_output(tmp_path, monkeypatch):
    # where descriptors 1 and 2 cannot be duplicated, Python-level output is still captured
    def no_dup(fd):
        raise OSError("no descriptors")

    monkeypatch.setattr(_runner.os, "dup", no_dup)
    log = tmp_path / "log.txt"
    with _runner._captured_output(log):
        print("from python")
    assert log.read_text() == "from python\n"
