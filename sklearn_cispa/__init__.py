"""sklearn-cispa: scikit-learn compatible estimators for NeurIPS 2025 research methods.

The methods live in one subpackage per field (``sklearn_cispa.causal``,
``sklearn_cispa.rules``, ``sklearn_cispa.conformal``, ...). Importing the top-level
package is cheap: subpackages are imported on first attribute access.
"""

import importlib

__version__ = "0.1.0.dev0"

# the field subpackages (utils.discovery reads this tuple too)
_FIELD_SUBPACKAGES = (
    "causal",
    "certification",
    "conformal",
    "datasets",
    "neural",
    "pruning",
    "rules",
    "uncertainty",
)
_SUBPACKAGES = (*_FIELD_SUBPACKAGES, "report", "utils")

__all__ = ["__version__", *_SUBPACKAGES]


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
