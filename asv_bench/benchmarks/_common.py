"""Helpers shared by the benchmark modules.

Conventions:

- ``time_*`` and ``peakmem_*`` time fit / predict; ``track_*`` record a quality metric of
  the method beside the same metric of a peer library on the same data (set ``unit``).
- Data generation goes in ``setup`` (ASV times only the method body). Imports of the
  package and its dependencies are paid once: ASV runs with ``launch_method`` =
  ``"forkserver"`` (``asv.conf.json``), so the benchmark modules are imported once by a
  server process and every benchmark runs in a fork of it, and this module imports the
  package's fields, torch and the installed peers up front in that server process
  (:func:`_preimport`). A
  ``from ... import`` inside ``setup`` then costs nothing. With the default ``spawn``
  method every parameter combination started a fresh interpreter and paid the imports
  again (171 start-ups for the quick run).
- A peer that is not installed skips its benchmark through :func:`require` (ASV treats
  ``NotImplementedError`` raised in ``setup`` as "skipped"), so the quick CI run only
  needs the ``bench`` extra for peers, never for our own code.
"""

import importlib
import os
import sys

# one thread per process, as in the test suite: timings on 2-core machines are otherwise noise
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

SEED = 0
# the CI smoke run (``.ci/run``): problem sizes that only check that a benchmark works,
# where a module says so; ratios and timings are recorded without it
SMOKE = os.environ.get("SKLEARN_CISPA_BENCH_SMOKE", "") == "1"

# imported once in the forkserver (see the module docstring); peers are optional
_PREIMPORT = (
    "sklearn_cispa.causal",
    "sklearn_cispa.certification",
    "sklearn_cispa.conformal",
    "sklearn_cispa.datasets",
    "sklearn_cispa.federated",
    "sklearn_cispa.memorization",
    "sklearn_cispa.neural",
    "sklearn_cispa.privacy",
    "sklearn_cispa.pruning",
    "sklearn_cispa.rules",
    "sklearn_cispa.uncertainty",
    "sklearn_cispa.watermark",
    "sklearn.datasets",
    "sklearn.ensemble",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "sklearn.tree",
)
_PREIMPORT_PEERS = (
    "causallearn", "imodels", "wittgenstein", "mapie", "linearmodels", "imwatermark"
)


def _preimport():
    """Import the package's fields and the installed peers once, before ASV forks."""
    for name in _PREIMPORT:
        importlib.import_module(name)
    for name in _PREIMPORT_PEERS:
        try:
            importlib.import_module(name)
        except Exception:  # a missing or broken peer skips its own benchmark later
            pass


# only in ASV's forkserver process (``benchmark.py run_server ...``): benchmark discovery,
# ``asv check`` and spawned runs import just what they use
if sys.argv[1:2] == ["run_server"]:
    _preimport()


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
