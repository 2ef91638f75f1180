"""Optional imports with an install hint."""

import importlib
import importlib.util

# import name -> (pip name, extra of sklearn-cispa that brings it)
_KNOWN = {
    "matplotlib": ("matplotlib", "plot"),
    "dask": ("dask[distributed]", "dask"),
    "distributed": ("dask[distributed]", "dask"),
    "causallearn": ("causal-learn", "report"),
    "lingam": ("lingam", "bench"),
    "imodels": ("imodels", "bench"),
    "wittgenstein": ("wittgenstein", "bench"),
    "mapie": ("mapie", "test"),
    "skopt": ("scikit-optimize", "redteam"),
    "ivmodels": ("ivmodels", "test"),
    "linearmodels": ("linearmodels", "test"),
    "imwatermark": ("invisible-watermark", "bench"),
    "transformers": ("transformers", "lm"),
}


def is_available(module):
    """Return whether ``module`` can be imported, without importing it.

    Parameters
    ----------
    module : str
        Dotted import name, for example ``"matplotlib"``.

    Returns
    -------
    available : bool
        True when the module is installed.

    Examples
    --------
    >>> from sklearn_cispa.utils import is_available
    >>> is_available("numpy")
    True
    >>> is_available("surely_not_a_module_name")
    False
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def optional_import(module, *, purpose=None):
    """Import an optional dependency or raise an ``ImportError`` that says how to install it.

    Parameters
    ----------
    module : str
        Dotted import name.
    purpose : str, default=None
        What needs the module, used in the error message.

    Returns
    -------
    module : module
        The imported module.

    Raises
    ------
    ImportError
        When the module is not installed; the message names the pip package and the
        sklearn-cispa extra that brings it.

    Examples
    --------
    >>> from sklearn_cispa.utils import optional_import
    >>> np = optional_import("numpy")
    >>> np.__name__
    'numpy'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        pip_name, extra = _KNOWN.get(top, (top, None))
        what = f"{purpose} requires" if purpose else "This feature requires"
        hint = f"pip install {pip_name}"
        if extra is not None:
            hint += f"  (or pip install 'sklearn-cispa[{extra}]')"
        raise ImportError(f"{what} the optional package {pip_name!r}: {hint}") from exc
