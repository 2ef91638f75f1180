"""Shared helpers: validation, torch device and seeding, parallel loops, optional imports.

Every estimator of the package uses these helpers instead of its own copy, so that a
behaviour (how a seed is drawn, how a device is resolved, how a loop is parallelised)
is defined in one place.
"""

from sklearn_cispa.utils._optional import is_available, optional_import
from sklearn_cispa.utils._parallel import outer_n_jobs, parallel_map, pin_n_jobs, spawn_seeds
from sklearn_cispa.utils._torch import (
    eval_mode,
    resolve_device,
    torch_generator,
    torch_rng_context,
)
from sklearn_cispa.utils._validation import (
    check_min_samples,
    check_probabilities,
    check_random_generator,
)
from sklearn_cispa.utils.discovery import all_estimators, all_functions

__all__ = [
    "all_estimators",
    "all_functions",
    "check_min_samples",
    "check_probabilities",
    "check_random_generator",
    "eval_mode",
    "is_available",
    "optional_import",
    "outer_n_jobs",
    "parallel_map",
    "pin_n_jobs",
    "resolve_device",
    "spawn_seeds",
    "torch_generator",
    "torch_rng_context",
]
