"""The reproduction report: ``python -m sklearn_cispa`` / ``sklearn-cispa``.

Each method registers one small experiment with :func:`register_experiment` in a module
named ``_exp_<method>.py`` inside ``sklearn_cispa/report/``; the report discovers those modules,
runs each experiment on bundled or generated data and prints one table row per method:
the method's headline metric, a peer's metric on the same data, and the wall time.
Figures go to the output folder.
"""

import argparse
import csv
import dataclasses
import importlib
import math
import pkgutil
import sys
import time
import traceback
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class ExperimentResult:
    """One row of the report.

    Parameters
    ----------
    metric : str
        Name of the headline metric, for example ``"edge F1"``.
    value : float
        The method's value of that metric.
    peer : str
        The peer method (or baseline) it is compared with on the same data.
    peer_value : float
        The peer's value of the same metric.
    details : str, default=""
        A short free-text addition (other metrics, sizes).
    figures : tuple of str, default=()
        Paths of the figures written.
    """

    metric: str
    value: float
    peer: str
    peer_value: float
    details: str = ""
    figures: tuple = ()


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    func: object
    description: str = ""


_REGISTRY = {}


def register_experiment(name, *, title, description=""):
    """Register ``func(*, quick, out_dir, random_state) -> ExperimentResult`` as a report row.

    Parameters
    ----------
    name : str
        Short name used by ``--only``.
    title : str
        The method's column in the table (usually the estimator's name).
    description : str, default=""
        One line shown by ``--help``.

    Returns
    -------
    decorator : callable
    """

    def decorator(func):
        if name in _REGISTRY and _REGISTRY[name].func is not func:
            raise ValueError(f"Experiment {name!r} is registered twice.")
        _REGISTRY[name] = Experiment(name, title, func, description)
        return func

    return decorator


def discover_experiments():
    """Import every ``sklearn_cispa.report._exp_*`` module and return the registry.

    Returns
    -------
    experiments : dict of str to Experiment
        Sorted by name.
    """
    package = importlib.import_module("sklearn_cispa.report")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_exp_"):
            importlib.import_module(f"sklearn_cispa.report.{info.name}")
    return dict(sorted(_REGISTRY.items()))


def get_pyplot():
    """Return ``matplotlib.pyplot`` on the non-interactive Agg backend, or None.

    Experiments draw their figures only when matplotlib is installed
    (``pip install 'sklearn-cispa[plot]'``).
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


COLUMNS = ("method", "metric", "value", "peer", "peer value", "time (s)", "details")


def format_table(rows):
    """Format report rows (dicts) as an aligned plain-text table."""
    columns = COLUMNS
    cells = [[_fmt(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join([line, sep, *body])


def run_experiment(experiment, *, quick, out_dir, random_state):
    """Run one experiment and return its report row as a dict (``error`` set on failure)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        result = experiment.func(quick=quick, out_dir=out_dir, random_state=random_state)
    except Exception as exc:  # a failing experiment must not hide the others
        return {
            "method": experiment.title,
            "metric": "ERROR",
            "value": float("nan"),
            "peer": "",
            "peer value": float("nan"),
            "time (s)": time.perf_counter() - start,
            "details": f"{type(exc).__name__}: {exc}",
            "error": traceback.format_exc(),
        }
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"Experiment {experiment.name!r} must return an ExperimentResult.")
    return {
        "method": experiment.title,
        "metric": result.metric,
        "value": float(result.value),
        "peer": result.peer,
        "peer value": float(result.peer_value),
        "time (s)": time.perf_counter() - start,
        "details": result.details,
        "figures": list(result.figures),
    }


def _parser(experiments):
    listing = "\n".join(
        f"  {e.name:<16} {e.title}" + (f": {e.description}" if e.description else "")
        for e in experiments.values()
    )
    return argparse.ArgumentParser(
        prog="python -m sklearn_cispa",
        description=(
            "Reproduction report of sklearn-cispa: runs each method's small experiment on "
            "bundled or generated data and prints one row per method beside a peer."
        ),
        epilog="experiments:\n" + (listing or "  (none registered)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def main(argv=None):
    """Entry point of ``python -m sklearn_cispa`` and of the ``sklearn-cispa`` script."""
    experiments = discover_experiments()
    parser = _parser(experiments)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (minutes in all)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        choices=sorted(experiments),
        help="run only this experiment (repeatable)",
    )
    parser.add_argument(
        "--out",
        default="sklearn_cispa_report",
        type=Path,
        help="folder for figures and report.csv (default: ./sklearn_cispa_report/)",
    )
    parser.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    args = parser.parse_args(argv)

    selected = [experiments[n] for n in (args.only or experiments)]
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for exp in selected:
        print(f"running {exp.name} ...", file=sys.stderr, flush=True)
        row = run_experiment(
            exp, quick=args.quick, out_dir=args.out / exp.name, random_state=args.random_state
        )
        rows.append(row)
        if "error" in row:
            print(row["error"], file=sys.stderr)
    table = format_table(rows)
    print(table)
    (args.out / "report.txt").write_text(table + "\n")
    with open(args.out / "report.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(COLUMNS)
        writer.writerows([row[c] for c in COLUMNS] for row in rows)
    failed = [r["method"] for r in rows if "error" in r]
    if failed:
        print(f"failed experiments: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
