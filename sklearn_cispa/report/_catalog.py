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
