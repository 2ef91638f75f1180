"""The reproduction report: ``python -m sklearn_cispa`` / ``sklearn-cispa``.

Each method registers one small experiment with :func:`register_experiment` in a module
named ``_exp_<method>.py`` inside ``sklearn_cispa/report/``. The report lists those rows
without importing them (``--help`` stays light), runs the selected ones (``--jobs N`` in
parallel through :func:`sklearn_cispa.utils.parallel_map`) with a progress bar, and writes
``report.html`` (the table, each method's figure, settings, peer and the paper's claim
beside the measured value), ``report.csv``, ``report.json`` and ``report.txt``.

This module imports only the standard library at import time: numpy, the method fields
and torch are imported when a row runs.
"""

import argparse
import dataclasses
import importlib
import json
import math
import os
import sys
import threading
import time
import traceback
from pathlib import Path

from sklearn_cispa.report._catalog import list_rows, order_rows, outcome_of, write_csv


@dataclasses.dataclass(frozen=True)
class ExperimentResult:
    """One row of the report.

    Parameters
    ----------
    metric : str
        Name of the headline metric, for example ``"edge F1"``.
    value : float
        The method's value of that metric (a mean over ``n_runs`` runs).
    peer : str
        The peer method (or baseline) it is compared with on the same data. Name only
        a peer that the row ran.
    peer_value : float
        The peer's value of the same metric.
    details : str, default=""
        A short free-text addition (other metrics).
    figures : tuple of str, default=()
        Paths of the figures written.
    value_sd : float, default=nan
        Seed-to-seed (or split-to-split) sample standard deviation of ``value``.
    peer_sd : float, default=nan
        The same for ``peer_value``.
    n_runs : int, default=1
        Number of seeds, splits or folds behind the means.
    settings : str, default=""
        Data, sizes and hyperparameters of this run.
    verdict : str, default=""
        In words: whether the paper's claim is measured here beyond the spread, and if
        not, what was seen instead.
    reproduced : bool or None, default=None
        True when the claim reproduces at this size, False when the measurement
        contradicts it, None when it is only partly reproduced or not resolvable.
    target : str, default=""
        The target at this size: what the row checks the measurement against (the
        paper's figure, or what the spec expects at these sizes).
    outcome : str, default=""
        The verdict in the table's vocabulary: ``"reproduced"``, ``"reproduced within
        noise"`` or ``"not reproduced"``; when empty it is read from ``reproduced``
        (True, None, False).
    """

    metric: str
    value: float
    peer: str
    peer_value: float
    details: str = ""
    figures: tuple = ()
    value_sd: float = float("nan")
    peer_sd: float = float("nan")
    n_runs: int = 1
    settings: str = ""
    verdict: str = ""
    reproduced: bool | None = None
    target: str = ""
    outcome: str = ""


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A registered row: its name, table title, one-line description, the paper's claim."""

    name: str
    title: str
    func: object
    description: str = ""
    claim: str = ""


_REGISTRY = {}


def register_experiment(name, *, title, description="", claim=""):
    """Register ``func(*, quick, out_dir, random_state) -> ExperimentResult`` as a report row.

    The arguments must be literals: ``--help`` reads them from the module's source
    without importing it.

    Parameters
    ----------
    name : str
        Short name used by ``--only``.
    title : str
        The method's column in the table (usually the estimator's name).
    description : str, default=""
        One line shown by ``--help`` and on the page.
    claim : str, default=""
        The paper's claim (or the spec's re-implementation figure) that the row checks,
        shown beside the measured value.

    Returns
    -------
    decorator : callable
    """

    def decorator(func):
        if name in _REGISTRY and _REGISTRY[name].func is not func:
            raise ValueError(f"Experiment {name!r} is registered twice.")
        _REGISTRY[name] = Experiment(name, title, func, description, claim)
        return func

    return decorator


def _static_rows():
    """The rows declared in ``_exp_*.py`` (read from source, nothing imported)."""
    return list_rows()


def discover_experiments(names=None):
    """Import the row modules and return the registry.

    Parameters
    ----------
    names : iterable of str, default=None
        Import only the modules declaring these rows; all rows when None.

    Returns
    -------
    experiments : dict of str to Experiment
        Sorted by name.
    """
    rows = _static_rows()
    wanted = rows if names is None else {n: rows[n] for n in names if n in rows}
    for module in sorted({info.module for info in wanted.values()}):
        importlib.import_module(module)
    return dict(sorted(_REGISTRY.items()))


def get_pyplot():
    """Return ``matplotlib.pyplot`` on the non-interactive Agg backend, or None.

    Experiments draw their figures only when matplotlib is installed
    (``pip install 'sklearn-cispa[report]'``).
    """
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, out_dir, filename):
    """Lay out ``fig``, write it to ``out_dir / filename`` at 100 dpi and close it.

    Returns
    -------
    figures : tuple of str
        The written path, ready for ``ExperimentResult(figures=...)``.
    """
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(out_dir) / filename
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return (str(path),)


def _fmt(value):
    if isinstance(value, float | int) and not isinstance(value, bool):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)


def _pm(value, sd):
    if isinstance(sd, float) and not math.isnan(sd):
        return f"{_fmt(value)} ± {sd:.2g}"
    return _fmt(value)


# the terminal table: short columns; the verdicts are printed under it
COLUMNS = ("method", "metric", "value", "peer", "peer value", "runs", "verdict", "time (s)")
# report.csv: sklearn_cispa.report._catalog.CSV_FIELDS (documented in docs/report.rst)


def _terminal_cells(row):
    verdict = "error" if "error" in row else outcome_of(row)
    return {
        "method": row.get("method", ""),
        "metric": row.get("metric", ""),
        "value": _pm(row.get("value", ""), row.get("value sd")),
        "peer": row.get("peer", ""),
        "peer value": _pm(row.get("peer value", ""), row.get("peer sd")),
        "runs": row.get("runs", ""),
        "verdict": verdict,
        "time (s)": row.get("time (s)", ""),
    }


def format_table(rows):
    """Format report rows (dicts) as an aligned plain-text table, verdicts underneath."""
    cells = [[_fmt(_terminal_cells(row)[c]) for c in COLUMNS] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(COLUMNS)]
    line = "  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    notes = [
        f"- {row.get('method', '')}: {row['verdict'] if 'error' not in row else row['details']}"
        for row in rows
        if row.get("verdict") or "error" in row
    ]
    return "\n".join([line, sep, *body, *([""] + notes if notes else [])])


def _status_path(out_dir):
    return Path(out_dir) / ".status"


def run_experiment(experiment, *, quick, out_dir, random_state):
    """Run one experiment and return its report row as a dict (``error`` set on failure)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _status_path(out_dir).write_text("running")
    start, cpu_start = time.perf_counter(), time.process_time()
    base = {
        "name": experiment.name,
        "method": experiment.title,
        "description": experiment.description,
        "claim": experiment.claim,
    }
    try:
        result = experiment.func(quick=quick, out_dir=out_dir, random_state=random_state)
        if not isinstance(result, ExperimentResult):
            raise TypeError(f"Experiment {experiment.name!r} must return an ExperimentResult.")
    except Exception as exc:  # a failing experiment must not hide the others
        row = {
            **base,
            "metric": "ERROR",
            "value": float("nan"),
            "peer": "",
            "peer value": float("nan"),
            "time (s)": time.perf_counter() - start,
            "details": f"{type(exc).__name__}: {exc}",
            "figures": [],
            "error": traceback.format_exc(),
        }
    else:
        row = {
            **base,
            "metric": result.metric,
            "value": float(result.value),
            "value sd": float(result.value_sd),
            "peer": result.peer,
            "peer value": float(result.peer_value),
            "peer sd": float(result.peer_sd),
            "runs": int(result.n_runs),
            "reproduced": result.reproduced,
            "verdict": result.verdict,
            "target": result.target,
            "outcome": outcome_of({"outcome": result.outcome, "reproduced": result.reproduced}),
            "settings": result.settings,
            "details": result.details,
            "time (s)": time.perf_counter() - start,
            "figures": list(result.figures),
        }
    row["cpu (s)"] = time.process_time() - cpu_start
    _status_path(out_dir).write_text("done")
    return row


def _run_task(experiment, quick, out_dir, random_state):
    # module level, so that parallel_map can ship it to worker processes
    return run_experiment(experiment, quick=quick, out_dir=out_dir, random_state=random_state)


class _Progress:
    """A progress bar over rows (tqdm in a terminal, plain lines otherwise)."""

    def __init__(self, total, enabled):
        self.total = total
        self.bar = None
        self.enabled = enabled
        if enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="row", desc="report", file=sys.stderr)

    def running(self, names, done):
        if not self.enabled:
            return
        text = "running: " + ", ".join(names) if names else ""
        if self.bar is not None:
            self.bar.n = done
            self.bar.set_postfix_str(text, refresh=False)
            self.bar.refresh()
        elif names:
            print(f"[{done}/{self.total}] {text}", file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.n = self.total
            self.bar.set_postfix_str("", refresh=False)
            self.bar.close()


def _run_serial(selected, *, quick, out, random_state, progress):
    rows = []
    for i, exp in enumerate(selected):
        progress.running([exp.name], i)
        rows.append(_run_task(exp, quick, out / exp.name, random_state))
    return rows


def _run_parallel(selected, *, quick, out, random_state, progress, n_jobs):
    from sklearn_cispa.utils import parallel_map

    for exp in selected:
        (out / exp.name).mkdir(parents=True, exist_ok=True)
        _status_path(out / exp.name).write_text("queued")
    stop = threading.Event()

    def poll():  # the workers leave a status file per row; show what runs now
        last = None
        while not stop.wait(0.3):
            states = {e.name: _status_path(out / e.name).read_text() for e in selected}
            running = sorted(n for n, s in states.items() if s == "running")
            done = sum(s == "done" for s in states.values())
            if (running, done) != last:
                progress.running(running, done)
                last = (running, done)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        tasks = [(exp, quick, out / exp.name, random_state) for exp in selected]
        return parallel_map(_run_task, tasks, n_jobs=n_jobs)
    finally:
        stop.set()
        watcher.join()


def _write_outputs(rows, out, *, meta):
    from sklearn_cispa.report._html import render_html

    rows = order_rows(rows)  # grouped by field, in the user guide's order
    table = format_table(rows)
    (out / "report.txt").write_text(table + "\n", encoding="utf-8")
    write_csv(rows, out / "report.csv")

    def plain(value):  # strict JSON: nan -> null
        return None if isinstance(value, float) and math.isnan(value) else value

    payload = {
        "meta": meta,
        "rows": [{k: plain(v) for k, v in row.items()} for row in rows],
    }
    (out / "report.json").write_text(
        json.dumps(payload, indent=2, default=str, allow_nan=False), encoding="utf-8"
    )
    page = render_html(
        rows,
        title="sklearn-cispa reproduction report",
        meta=(
            f"sklearn-cispa {meta['version']}; {'quick' if meta['quick'] else 'full'} sizes; "
            f"random_state={meta['random_state']}; {meta['jobs']} job(s); "
            f"{meta['total_time_s']:.0f} s in all (wall), "
            f"{sum(r.get('cpu (s)', 0.0) for r in rows):.0f} s CPU in the rows"
        ),
    )
    (out / "report.html").write_text(page, encoding="utf-8")
    return table


_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def _parser(rows):
    listing = "\n".join(
        f"  {r.name:<16} {r.title}" + (f": {r.description}" if r.description else "")
        for r in rows.values()
    )
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_cispa",
        description=(
            "Reproduction report of sklearn-cispa: runs each method's small experiment on "
            "bundled or generated data beside a peer, and writes report.html (table, figures, "
            "settings, the paper's claim beside the measured value), report.csv and "
            "report.json."
        ),
        epilog="experiments:\n" + (listing or "  (none found)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes (minutes in all)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        choices=sorted(rows),
        help="run only this experiment (repeatable)",
    )
    parser.add_argument(
        "--out",
        default="sklearn_cispa_report",
        type=Path,
        help="folder for report.html, report.csv, report.json and the figures "
        "(default: ./sklearn_cispa_report/)",
    )
    parser.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="run N rows in parallel (joblib, through sklearn_cispa.utils.parallel_map; "
        "-1: all cores; default 1)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar or progress lines"
    )
    return parser


def main(argv=None):
    """Entry point of ``python -m sklearn_cispa`` and of the ``sklearn-cispa`` script."""
    rows_declared = {**_static_rows()}
    # rows registered at run time outside the row modules (tests, plugins) are listed too
    for name, exp in _REGISTRY.items():
        rows_declared.setdefault(name, exp)
    parser = _parser(dict(sorted(rows_declared.items())))
    args = parser.parse_args(argv)
    if args.jobs == 0:
        parser.error("--jobs must be a positive integer or -1")

    names = args.only or list(sorted(rows_declared))
    if not names:
        print("no experiments found in sklearn_cispa/report/_exp_*.py", file=sys.stderr)
        return 2
    experiments = discover_experiments(names)
    missing = [n for n in names if n not in experiments]
    if missing:
        parser.error(f"declared but not registered on import: {', '.join(missing)}")
    selected = [experiments[n] for n in names]

    # one BLAS / OpenMP / torch thread per row (set before the rows import numpy or torch):
    # the rows' models are small, and on a shared or 2-core machine more threads per row
    # only spin; --jobs N is the way to use N cores. A value the user set is kept.
    for var in _THREAD_VARS:
        os.environ.setdefault(var, "1")
    args.out.mkdir(parents=True, exist_ok=True)
    progress = _Progress(len(selected), enabled=not args.no_progress)
    start = time.perf_counter()
    try:
        if args.jobs == 1 or len(selected) == 1:
            rows = _run_serial(
                selected,
                quick=args.quick,
                out=args.out,
                random_state=args.random_state,
                progress=progress,
            )
        else:
            rows = _run_parallel(
                selected,
                quick=args.quick,
                out=args.out,
                random_state=args.random_state,
                progress=progress,
                n_jobs=args.jobs,
            )
    finally:
        progress.close()
        for exp in selected:
            _status_path(args.out / exp.name).unlink(missing_ok=True)
    from sklearn_cispa import __version__

    meta = {
        "version": __version__,
        "quick": bool(args.quick),
        "random_state": args.random_state,
        "jobs": args.jobs,
        "total_time_s": time.perf_counter() - start,
    }
    for row in rows:
        if "error" in row:
            print(row["error"], file=sys.stderr)
    table = _write_outputs(rows, args.out, meta=meta)
    print(table)
    print(f"\nreport written to {args.out / 'report.html'}", file=sys.stderr)
    failed = [r["method"] for r in rows if "error" in r]
    if failed:
        print(f"failed experiments: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
