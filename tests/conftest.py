"""Test-suite configuration: hypothesis profiles, the ``gpu`` marker, required peers.

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


# The external oracles that tests cross-check against. They are in the ``test`` extra, so
# under CI (CI=true) a test that skips because one of them cannot be imported fails: an
# oracle test that silently skips checks nothing.
REQUIRED_PEERS_IN_CI = ("causallearn", "distributed", "ivmodels", "linearmodels", "mapie")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("CI", "").lower() != "true":
        return
    message = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    for peer in REQUIRED_PEERS_IN_CI:
        if f"could not import '{peer}" in message:
            report.outcome = "failed"
            report.longrepr = (
                f"{peer} is in the test extra (pyproject.toml) but could not be imported, "
                f"so this cross-check would be skipped in CI: {message}"
            )


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
