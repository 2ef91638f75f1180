"""sklearn-cispa: scikit-learn compatible estimators for NeurIPS 2025 research methods.

Fifteen methods, in one subpackage per field: causal mixture discovery and
augmentation-based instrumental variables (``sklearn_cispa.causal``), NEURULES rule lists
(``sklearn_cispa.rules``), robust conformal prediction (``sklearn_cispa.conformal``), MMI
credal uncertainty (``sklearn_cispa.uncertainty``), MIBP poisoning certificates
(``sklearn_cispa.certification``), MaxSup, NanoAdam and Sign-In sparse training
(``sklearn_cispa.neural``), pruning at initialisation and the graphon of pruning masks
(``sklearn_cispa.pruning``), local SGD (``sklearn_cispa.federated``), LiRA membership
inference (``sklearn_cispa.privacy``), the BitMark watermark (``sklearn_cispa.watermark``),
critical neurons of memorised text (``sklearn_cispa.memorization``) and suffix search for
red-teaming evaluations (``sklearn_cispa.redteam``); cross-field metrics live in
``sklearn_cispa.metrics``. Importing the top-level package is cheap: subpackages are
imported on first attribute access, and torch only when a method needs it.
``sklearn_cispa.show_versions()`` prints the environment for bug reports.
"""

import importlib

from sklearn_cispa._show_versions import show_versions

__version__ = "0.1.0.dev0"

# the field subpackages (utils.discovery reads this tuple too)
_FIELD_SUBPACKAGES = (
    "causal",
    "certification",
    "conformal",
    "datasets",
    "federated",
    "language",
    "memorization",
    "metrics",
    "neural",
    "privacy",
    "pruning",
    "redteam",
    "rules",
    "uncertainty",
    "watermark",
)
_SUBPACKAGES = (*_FIELD_SUBPACKAGES, "report", "utils")

__all__ = ["__version__", "show_versions", *_SUBPACKAGES]


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBPACKAGES))
