"""Shared checks of the report rows run on tiny settings (tests/report/)."""

import csv
import math
import re
from pathlib import Path

import pytest


@pytest.fixture
def run_row(tmp_path):
    """Run one registered report row through the runner and check its row's invariants.

    The row runs as ``python -m sklearn_cispa`` runs it (``run_experiment``: output
    captured, timing, the row dict); the checks are the report's schema: no error, a
    finite value (and peer value where a peer ran), a spread when there are several runs,
    a verdict in the fixed vocabulary, the figures on disk, and the printed table, the CSV
    and the page all showing the stored numbers.
    """

    def run(name, *, quick=True, random_state=0, peer=True, target=True, out=None):
        from sklearn_cispa.report import _runner
        from sklearn_cispa.report._catalog import (
            CSV_FIELDS,
            OUTCOMES,
            csv_records,
            write_csv,
        )
        from sklearn_cispa.report._html import render_html

        exp = _runner.discover_experiments([name])[name]
        out = Path(out or tmp_path / name)
        row = _runner.run_experiment(exp, quick=quick, out_dir=out, random_state=random_state)
        assert "error" not in row, row.get("error")
        assert row["name"] == name and row["method"] == exp.title
        assert row["claim"] == exp.claim and row["claim"]
        assert isinstance(row["metric"], str) and row["metric"]
        assert math.isfinite(row["value"]), row
        if peer:
            assert row["peer"] and math.isfinite(row["peer value"]), row
        assert row["runs"] >= 1
        if row["runs"] >= 2:
            assert math.isfinite(row["value sd"]) and row["value sd"] >= 0, row
        assert row["reproduced"] in (True, None, False)
        assert row["outcome"] in OUTCOMES
        assert row["verdict"] and row["settings"], row
        if target:
            assert row["target"], row
        assert row["time (s)"] >= 0 and row["cpu (s)"] >= 0
        for fig in row["figures"]:
            path = Path(fig)
            assert path.parent == out and path.suffix == ".png"
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # the printed table shows the stored value (with its spread)
        table = _runner.format_table([row])
        assert _runner._pm(row["value"], row["value sd"], row.get("runs")) in table
        assert row["outcome"] in table
        # report.csv holds the same numbers, no nan
        write_csv([row], out / "report.csv")
        with open(out / "report.csv", newline="") as fh:
            (record,) = list(csv.DictReader(fh))
        assert tuple(record) == CSV_FIELDS
        assert float(record["value"]) == row["value"]
        assert not [v for v in record.values() if re.search(r"(?i)\bnan\b", v)], record
        assert csv_records([row])[0]["outcome"] == row["outcome"]
        page = render_html([row], title="t", meta="m")
        assert f'id="{name}"' in page
        return row

    return run


@pytest.fixture
def shrink(monkeypatch):
    """``shrink(target, name, **sizes)``: wrap ``target.name`` to run with tiny sizes.

    The wrapped function is the row's own code; only the keyword arguments in ``sizes``
    change (they override what the row passes).
    """

    def patch(target, name, **overrides):
        orig = getattr(target, name)

        def wrapper(*args, **kwargs):
            return orig(*args, **{**kwargs, **overrides})

        monkeypatch.setattr(target, name, wrapper)
        return orig

    return patch
