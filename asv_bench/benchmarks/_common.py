"""Helpers shared by the benchmark modules.

Conventions:

- ``time_*`` and ``peakmem_*`` time fit / predict; ``track_*`` record a quality metric of
  the method beside the same metric of a peer library on the same data (set ``unit``).
- Heavy imports and data generation go in ``setup`` (ASV times only the method body).
- A peer that is not installed skips its benchmark through :func:`require` (ASV treats
  ``NotImplementedError`` raised in ``setup`` as "skipped"), so the quick CI run only
  needs the ``bench`` extra for peers, never for our own code.
"""

import importlib
import os

# one thread per process, as in the test suite: timings on 2-core machines are otherwise noise
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

SEED = 0


def require(module):
    """Import ``module`` or skip the benchmark (``NotImplementedError``) when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise NotImplementedError(f"{module} is not installed") from exc


def limit_torch_threads(n=1):
    """Use ``n`` torch threads (call from ``setup`` of torch benchmarks)."""
    import torch

    torch.set_num_threads(n)
