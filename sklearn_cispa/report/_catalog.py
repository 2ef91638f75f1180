"""The list of report rows, read from the row modules' source without importing them.

``python -m sklearn_cispa --help`` and ``--only`` need the rows' names, titles and claims,
but importing a row imports its method field (and torch for the neural rows). The row
modules' ``@register_experiment(...)`` decorators hold those as literals, so they are read
with :mod:`ast`: one source of truth, nothing heavy imported.
"""

import ast
import dataclasses
from pathlib import Path

ROW_PREFIX = "_exp_"
PACKAGE = "sklearn_cispa.report"


@dataclasses.dataclass(frozen=True)
class RowInfo:
    """What a row module declares in its ``register_experiment`` call."""

    name: str
    title: str
    description: str = ""
    claim: str = ""
    module: str = ""
    cost: tuple | None = None


def _literal(node, where):
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise ValueError(
            f"{where}: the arguments of register_experiment must be literals "
            "(the report reads them without importing the module)."
        ) from exc


def _decorator_rows(tree, module, where):
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for deco in node.decorator_list:
            if not isinstance(deco, ast.Call):
                continue
            func = deco.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name != "register_experiment" or not deco.args:
                continue
            kwargs = {
                kw.arg: _literal(kw.value, where)
                for kw in deco.keywords
                if kw.arg in ("title", "description", "claim", "cost")
            }
            yield RowInfo(name=_literal(deco.args[0], where), module=module, **kwargs)


def list_rows(directory=None):
    """Every row declared in ``_exp_*.py`` of the report package, sorted by name.

    Parameters
    ----------
    directory : path-like, default=None
        Folder to scan; the installed ``sklearn_cispa/report/`` when None.

    Returns
    -------
    rows : dict of str to RowInfo
    """
    directory = Path(__file__).parent if directory is None else Path(directory)
    rows = {}
    for path in sorted(directory.glob(f"{ROW_PREFIX}*.py")):
        module = f"{PACKAGE}.{path.stem}"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for info in _decorator_rows(tree, module, path.name):
            if info.name in rows:
                raise ValueError(f"Experiment {info.name!r} is declared twice.")
            rows[info.name] = info
    return dict(sorted(rows.items()))


# --------------------------------------------------------------------------------------
# The summary table: the order of the rows, the verdict vocabulary, report.csv
# --------------------------------------------------------------------------------------

# The user guide's order (docs/user_guide/index.rst; a test checks that the two agree):
# (field title, user-guide page, the rows of that page in their order). A row that is in
# no page goes to the end, under "Other".
GUIDE = (
    ("Causal inference", "augmented_iv", ("augmented_iv",)),
    ("Causal inference", "causal_mixture", ("causal_mixture", "causal_mixture_sachs")),
    ("Certified robustness", "mibp", ("mibp",)),
    ("Conformal prediction", "rcp1", ("rcp1",)),
    ("Federated learning", "local_sgd", ("local_sgd",)),
    ("Language models", "language", ()),
    ("Memorisation", "neurons", ("neurons", "neurons_gpt2")),
    ("Neural training", "neural", ("maxsup", "nanoadam", "sign_in")),
    ("Privacy auditing", "lira", ("lira", "lira_lm")),
    ("Pruning", "graphon", ("graphon",)),
    ("Red-teaming search", "gasp", ("gasp",)),
    ("Rule lists", "neurules", ("neurules",)),
    ("Uncertainty", "mmi", ("mmi",)),
    ("Watermarks", "bitmark", ("bitmark",)),
    ("Scaling out", "parallel", ()),
    ("Reliability", "reliability", ()),
)
_POSITION = {row: (i, j) for i, (_, _, rows) in enumerate(GUIDE) for j, row in enumerate(rows)}
_FIELD = {row: field for field, _, rows in GUIDE for row in rows}

# The one vocabulary of the verdict column. A row says which with
# ``ExperimentResult(outcome=...)``; a row that does not is read from ``reproduced``
# (True, None, False), the flag that every row sets.
OUTCOMES = ("reproduced", "reproduced within noise", "not reproduced")
_FROM_REPRODUCED = {True: OUTCOMES[0], None: OUTCOMES[1], False: OUTCOMES[2]}
# lead words of the rows' verdict texts, dropped in the table (the outcome says it)
_LEAD_WORDS = ("reproduc", "resolv", "partly", "no peer")


def field_of(name):
    """The user guide's field of a report row (``"Other"`` for a row in no page)."""
    return _FIELD.get(name, "Other")


def order_rows(rows):
    """Report rows (dicts with ``name``) in the user guide's order, grouped by field."""
    return sorted(
        rows,
        key=lambda row: (*_POSITION.get(row.get("name"), (len(GUIDE), 0)), row.get("name", "")),
    )


def outcome_of(row):
    """The verdict of a row in the fixed vocabulary :data:`OUTCOMES`."""
    if "error" in row:
        return OUTCOMES[2]
    word = row.get("outcome") or ""
    if word:
        if word not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}; got {word!r}.")
        return word
    return _FROM_REPRODUCED.get(row.get("reproduced"), OUTCOMES[2])


def reason_of(row):
    """The reason behind the verdict: the row's verdict text without its lead words."""
    if "error" in row:
        return f"the row failed: {row.get('details', '')}".strip()
    text = (row.get("verdict") or "").strip()
    head, sep, rest = text.partition(":")
    if sep and len(head) <= 60 and any(w in head.lower() for w in _LEAD_WORDS):
        text = rest.strip()
        text = text[:1].upper() + text[1:]
    return text


# report.csv, one line per row; docs/report.rst documents each column
CSV_FIELDS = (
    "field",
    "name",
    "method",
    "claim",
    "target",
    "metric",
    "value",
    "value sd",
    "peer",
    "peer value",
    "peer sd",
    "runs",
    "outcome",
    "verdict",
    "settings",
    "details",
    "time (s)",
    "cpu (s)",
    "figures",
)


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "" if value != value or value in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, list | tuple):
        return ";".join(str(v) for v in value)
    return str(value)


def csv_records(rows):
    """The rows of ``report.csv`` as dicts of strings: no ``nan`` (empty instead).

    A standard deviation of one run, a peer value of a row without a peer and the values
    of a failed row are empty.
    """
    records = []
    for row in order_rows(rows):
        record = {
            **{key: row.get(key) for key in CSV_FIELDS},
            "field": field_of(row.get("name")),
            "outcome": outcome_of(row),
            "verdict": reason_of(row),
        }
        records.append({key: _csv_cell(record[key]) for key in CSV_FIELDS})
    return records


def write_csv(rows, path):
    """Write ``report.csv`` (columns :data:`CSV_FIELDS`, in the user guide's row order)."""
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(csv_records(rows))
