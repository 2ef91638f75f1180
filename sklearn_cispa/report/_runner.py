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
import contextlib
import dataclasses
import importlib
import json
import math
import os
import sys
import threading
import time
import traceback
import warnings
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
    """A registered row: its name, title, description, the paper's claim and its cost."""

    name: str
    title: str
    func: object
    description: str = ""
    claim: str = ""
    cost: tuple | None = None


_REGISTRY = {}


def register_experiment(name, *, title, description="", claim="", cost=None):
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
    cost : tuple of (float, float), default=None
        The row's wall seconds when run alone on a quiet 2-core machine, at quick and at
        full sizes (the rows state the quick one as measured, the full one as measured
        or estimated from the sizes). ``--help`` adds them up, and the progress report
        weighs the rows by them to estimate the time left. None: the median of the
        other rows.

    Returns
    -------
    decorator : callable
    """

    def decorator(func):
        if name in _REGISTRY and _REGISTRY[name].func is not func:
            raise ValueError(f"Experiment {name!r} is registered twice.")
        if cost is not None and (
            len(cost) != 2 or not all(isinstance(c, int | float) and c > 0 for c in cost)
        ):
            raise ValueError(f"cost of {name!r} must be (quick seconds, full seconds) > 0.")
        _REGISTRY[name] = Experiment(name, title, func, description, claim, cost)
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


def _pm(value, sd, runs=None):
    """``value ± sd``; a zero spread over several runs is said in words (as the HTML table
    does), so that ``1 ± 0`` does not read as a placeholder."""
    if isinstance(sd, float) and not math.isnan(sd):
        if sd == 0 and isinstance(runs, int) and runs > 1:
            return f"{_fmt(value)} (same in all {runs} runs)"
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
        "value": _pm(row.get("value", ""), row.get("value sd"), row.get("runs")),
        "peer": row.get("peer", ""),
        "peer value": _pm(row.get("peer value", ""), row.get("peer sd"), row.get("runs")),
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


def _original_stderr():
    """A stream on the process's standard error that the rows' capture leaves alone."""
    try:
        return os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, closefd=True)
    except (AttributeError, OSError, ValueError):  # no real descriptor (pytest's capsys)
        return sys.stderr


@contextlib.contextmanager
def _captured_output(path):
    """Send everything a row prints (Python or native: solver banners) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = []
    with open(path, "w", encoding="utf-8") as log:
        try:
            for fd in (1, 2):
                saved.append((fd, os.dup(fd)))
                os.dup2(log.fileno(), fd)
        except OSError:  # no descriptors to redirect: Python-level capture only
            pass
        try:
            with (
                contextlib.redirect_stdout(log),
                contextlib.redirect_stderr(log),
                warnings.catch_warnings(record=True) as caught,
            ):
                try:
                    yield
                finally:
                    for w in caught:  # the filters in force decide which are recorded
                        log.write(
                            warnings.formatwarning(
                                w.message, w.category, w.filename, w.lineno, w.line
                            )
                        )
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            log.flush()
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)


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
    log_path = out_dir / "log.txt"
    try:
        with _captured_output(log_path):
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
    if log_path.exists() and log_path.stat().st_size == 0:
        log_path.unlink()
    row["log"] = str(log_path) if log_path.exists() else ""
    _status_path(out_dir).write_text("done")
    return row


def _run_task(experiment, quick, out_dir, random_state):
    # module level, so that parallel_map can ship it to worker processes
    return run_experiment(experiment, quick=quick, out_dir=out_dir, random_state=random_state)


def _costs(experiments, quick):
    """Each row's expected wall seconds (its declared cost; the median when it has none)."""
    i = 0 if quick else 1
    declared = sorted(e.cost[i] for e in experiments if e.cost)
    fallback = declared[len(declared) // 2] if declared else 1.0
    return {e.name: e.cost[i] if e.cost else fallback for e in experiments}


def _fmt_seconds(seconds):
    from tqdm import tqdm

    return tqdm.format_interval(max(0.0, seconds))


class _Progress:
    """Progress over rows, weighted by their expected cost (tqdm).

    In a terminal: a tqdm bar whose total is the rows' expected seconds, with the running
    rows as its postfix. Otherwise (a log, CI): one line per row start and end, with the
    time so far and tqdm's estimate of the time left.

    Parameters
    ----------
    costs : dict of str to float
        Expected seconds per row (see :func:`_costs`).
    enabled : bool
    stream : file, default=None
        Where to write (the report's original standard error; rows' own output is
        captured elsewhere).
    n_jobs : int, default=1
        Rows run at once: the estimate divides the remaining cost by it.
    """

    def __init__(self, costs, enabled, stream=None, n_jobs=1):
        self.costs = dict(costs)
        self.total = len(self.costs)
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.n_jobs = max(1, min(n_jobs, self.total or 1))
        self.start = time.perf_counter()
        self.finished = set()
        self.bar = None
        isatty = getattr(self.stream, "isatty", lambda: False)
        if enabled and isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=round(sum(self.costs.values()), 1),
                desc="report",
                unit="s",
                bar_format="{l_bar}{bar}| {elapsed}<{remaining} {postfix}",
                file=self.stream,
            )

    def _left(self):
        """Seconds left: the remaining expected cost at the pace measured so far."""
        done_cost = sum(self.costs[n] for n in self.finished)
        left_cost = sum(c for n, c in self.costs.items() if n not in self.finished)
        elapsed = time.perf_counter() - self.start
        pace = elapsed / done_cost if done_cost > 0 else 1.0 / self.n_jobs
        return left_cost * pace

    def running(self, names, done_names):
        if not self.enabled:
            return
        new = set(done_names) - self.finished
        self.finished |= new
        elapsed = time.perf_counter() - self.start
        text = "running: " + ", ".join(names) if names else ""
        if self.bar is not None:
            self.bar.n = round(sum(self.costs[n] for n in self.finished), 1)
            self.bar.set_postfix_str(text, refresh=False)
            self.bar.refresh()
            return
        for name in sorted(new):
            print(
                f"[{len(self.finished)}/{self.total}] done: {name}; "
                f"{_fmt_seconds(elapsed)} so far, about {_fmt_seconds(self._left())} left",
                file=self.stream,
                flush=True,
            )
        if names:
            print(
                f"[{len(self.finished)}/{self.total}] {text} "
                f"(expected {', '.join(f'{self.costs[n]:.0f} s' for n in names)}); "
                f"{_fmt_seconds(elapsed)} so far, about {_fmt_seconds(self._left())} left",
                file=self.stream,
                flush=True,
            )

    def close(self):
        if self.bar is not None:
            self.bar.n = self.bar.total
            self.bar.set_postfix_str("", refresh=False)
            self.bar.close()


def _run_serial(selected, *, quick, out, random_state, progress):
    rows = []
    for i, exp in enumerate(selected):
        progress.running([exp.name], [e.name for e in selected[:i]])
        rows.append(_run_task(exp, quick, out / exp.name, random_state))
    progress.running([], [e.name for e in selected])
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
            done = sorted(n for n, s in states.items() if s == "done")
            if (running, done) != last:
                progress.running(running, done)
                last = (running, done)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        tasks = [(exp, quick, out / exp.name, random_state) for exp in selected]
        rows = parallel_map(_run_task, tasks, n_jobs=n_jobs)
    finally:
        stop.set()
        watcher.join()
    progress.running([], [e.name for e in selected])
    return rows


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
    def cost(r, i):
        return f"{r.cost[i]:.0f}" if r.cost else "?"

    listing = "\n".join(
        f"  {r.name:<20} {r.title}"
        + (f": {r.description}" if r.description else "")
        + f" [{cost(r, 0)} s quick, {cost(r, 1)} s full]"
        for r in rows.values()
    )
    quick_s = sum(_costs(list(rows.values()), True).values()) if rows else 0.0
    full_s = sum(_costs(list(rows.values()), False).values()) if rows else 0.0
    if any(r.cost for r in rows.values()):
        quick_help = (
            f"small sizes: about {quick_s / 60:.0f} min in all on a quiet 2-core machine, "
            f"where the full sizes take about {full_s / 60:.0f} min"
        )
        costs = (
            f"cost: --quick about {quick_s / 60:.0f} min in all, the full run about "
            f"{full_s / 60:.0f} min, on a quiet 2-core machine with --jobs 1 (per row in "
            "brackets, in seconds: quick measured, full measured or estimated; --jobs N "
            "divides the wall time by up to N)."
        )
    else:
        quick_help, costs = "small sizes", "cost: not declared by the rows."
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_cispa",
        description=(
            "Reproduction report of sklearn-cispa: runs each method's small experiment on "
            "bundled or generated data beside a peer, and writes report.html (table, figures, "
            "settings, the paper's claim beside the measured value), report.csv and "
            "report.json."
        ),
        epilog=costs + "\n\nexperiments:\n" + (listing or "  (none found)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help=quick_help)
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
    n_jobs = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
    progress = _Progress(
        _costs(selected, args.quick),
        enabled=not args.no_progress,
        stream=_original_stderr(),
        n_jobs=1 if len(selected) == 1 else n_jobs,
    )
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
    logged = [r["name"] for r in rows if r.get("log")]
    if logged:
        print(
            f"\nwhat the rows printed (warnings, solver output) is in {args.out}/<row>/log.txt "
            f"for: {', '.join(logged)}",
            file=sys.stderr,
        )
    print(f"\nreport written to {args.out / 'report.html'}", file=sys.stderr)
    failed = [r["method"] for r in rows if "error" in r]
    if failed:
        print(f"failed experiments: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
