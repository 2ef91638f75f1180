"""Test-suite configuration: hypothesis profiles and the ``gpu`` marker.

Thread limits (one BLAS and one torch thread) are set in the repository's root
``conftest.py`` so that they also apply to the doctests of the package.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

# The built-in "ci" profile (derandomised, no deadline, no database) loads by itself when
# CI=true. Locally, "dev" keeps examples few and drops the deadline (fits are slow).
settings.register_profile(
    "dev",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
if os.environ.get("CI", "").lower() != "true":
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def _cuda_available():
    try:
        import torch
    except ImportError:  # pragma: no cover
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device; torch sees none")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
