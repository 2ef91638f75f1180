"""The report's helpers on tiny inputs: statistics, the row catalogue, the page, __main__."""

import math
import runpy

import numpy as np
import pytest

from sklearn_cispa.report._catalog import _csv_cell, list_rows
from sklearn_cispa.report._html import _num, render_html
from sklearn_cispa.report._stats import fmt_pm, mean_sd, paired_difference, seed_bars


def test_mean_sd_of_empty_and_single_values_is_nan_where_undefined():
    assert all(math.isnan(v) for v in mean_sd([]))
    mean, sd = mean_sd([2.5])
    assert mean == 2.5 and math.isnan(sd)
    # closed form: values 1, 3 have mean 2 and sample sd sqrt(2)
    assert mean_sd([1.0, 3.0]) == pytest.approx((2.0, math.sqrt(2.0)))


def test_paired_difference_edge_cases():
    one = paired_difference([1.0], [0.0])
    assert one["n"] == 1 and not one["resolved"] and math.isnan(one["se"])
    # identical differences: no spread, resolved when not zero, not when zero
    assert paired_difference([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])["resolved"]
    assert not paired_difference([1.0, 2.0], [1.0, 2.0])["resolved"]
    d = paired_difference([0.9, 0.8, 0.85], [0.7, 0.65, 0.6])
    assert d["se"] == pytest.approx(d["sd"] / math.sqrt(3))


def test_fmt_pm():
    assert fmt_pm(0.12345, 0.0041) == "0.123 ± 0.004"
    assert fmt_pm(0.5, float("nan")) == "0.500"
    assert fmt_pm(0.5, None, digits=1) == "0.5"


def test_seed_bars_draws_one_bar_per_method_and_the_seeds():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    seed_bars(ax, [("a", [1.0, 2.0]), ("b", [3.0, 3.0, 3.0])], colors=["red"])
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([1.5, 3.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert sum(len(line.get_xdata()) for line in ax.lines) == 5
    plt.close(fig)


def _write(folder, name, text):
    (folder / name).write_text(text)


def test_list_rows_reads_literals_and_refuses_duplicates_and_expressions(tmp_path):
    _write(
        tmp_path,
        "_exp_a.py",
        "import functools\n"
        "@functools.cache\n"
        "@other('x')\n"
        "@register_experiment('a', title='A', claim='c')\n"
        "def run(): pass\n",
    )
    rows = list_rows(tmp_path)
    assert list(rows) == ["a"] and rows["a"].claim == "c"
    _write(tmp_path, "_exp_b.py", "@register_experiment('a', title='again')\ndef run(): pass\n")
    with pytest.raises(ValueError, match="declared twice"):
        list_rows(tmp_path)
    (tmp_path / "_exp_b.py").unlink()
    _write(tmp_path, "_exp_c.py", "@register_experiment('c', title=NAME)\ndef run(): pass\n")
    with pytest.raises(ValueError, match="must be literals"):
        list_rows(tmp_path)


def test_csv_cells_never_write_nan_or_inf():
    assert [_csv_cell(v) for v in (None, float("nan"), float("inf"), -np.inf)] == [""] * 4
    assert _csv_cell(True) == "True" and _csv_cell(0.1) == "0.1"
    assert _csv_cell(["a.png", "b.png"]) == "a.png;b.png" and _csv_cell(3) == "3"


def test_num_formats_values_spreads_and_text():
    assert _num(0.123456, 0.01) == "0.1235 ± 0.01"
    assert _num(1.0, 0.0, runs=3) == "1 (the same in all 3 runs)"
    assert _num(1.0, 0.0, runs=1) == "1 ± 0"  # one run: the sd of one value is 0 here
    assert _num(float("nan")) == "" and _num(None) == "" and _num("<a>") == "&lt;a&gt;"


def test_page_of_a_failed_row_and_a_row_without_peer():
    rows = [
        {
            "name": "boom",
            "method": "Boom",
            "metric": "ERROR",
            "value": float("nan"),
            "peer": "",
            "peer value": float("nan"),
            "time (s)": 0.2,
            "cpu (s)": 0.1,
            "details": "RuntimeError: x",
            "figures": ["/nonexistent.png"],
            "error": "Traceback <x>",
        }
    ]
    page = render_html(rows, title="T <1>", meta="m")
    assert "T &lt;1&gt;" in page and "Traceback &lt;x&gt;" in page
    assert "not reproduced" in page and "the row failed: RuntimeError: x" in page
    assert "<img" not in page  # a missing figure is left out, not a broken image
    assert 'class="error"' in page and "nan" not in page.split("<section")[0].lower()


def test_main_module_runs_the_report_cli(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["python -m sklearn_cispa", "--help"])
    with pytest.raises(SystemExit) as exc:
        runpy.run_module("sklearn_cispa", run_name="__main__")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "experiments:" in out


def test_terminal_value_cell_says_zero_spread_in_words():
    from sklearn_cispa.report import _runner

    assert _runner._pm(1.0, 0.0, 5) == "1 (same in all 5 runs)"
    assert _runner._pm(1.0, 0.0, 1).endswith("± 0")
    assert "±" in _runner._pm(0.5, 0.1, 3)
    assert _runner._pm(0.5, float("nan"), 3) == _runner._fmt(0.5)
