"""The reproduction report (``python -m sklearn_cispa``) and its evaluation helpers.

This layer sits above the method fields: it imports their public API, and no field
imports it. Each method's report row is one module ``sklearn_cispa/report/_exp_<method>.py``
holding a function decorated with :func:`register_experiment`.
"""

from sklearn_cispa.report._runner import (
    ExperimentResult,
    discover_experiments,
    get_pyplot,
    main,
    register_experiment,
    save_figure,
)

__all__ = [
    "ExperimentResult",
    "discover_experiments",
    "get_pyplot",
    "main",
    "register_experiment",
    "save_figure",
]
