"""Root pytest configuration: applies to the tests and to the package's doctests.

Thread pools are limited to one thread: on CI's 2 cores, BLAS or torch
oversubscription under pytest-xdist made experiments many times slower.
"""

import os

for _var in (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
):
    os.environ.setdefault(_var, "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")


def pytest_configure(config):
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a runtime dependency
        return
    torch.set_num_threads(1)


# the language-model extra (transformers) is optional: without it, the doctests of the
# modules that need it are not collected (their tests skip with the reason)
import importlib.util  # noqa: E402

collect_ignore = []
if importlib.util.find_spec("transformers") is None:
    collect_ignore.append("sklearn_cispa/language/_transformer.py")
