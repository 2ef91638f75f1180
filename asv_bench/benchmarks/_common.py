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
  again (171 start-ups for the quick run). ``setup_cache`` runs in a fork of the same
  server too (:func:`_install_setup_cache_hook` and the ASV plugin
  ``asv_bench/asv_setup_cache_in_fork.py``; ASV alone starts a fresh interpreter for
  each), so a ``setup_cache`` costs no start-up and is the place for data that several
  benchmarks or parameter combinations share.
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

# imported once in the forkserver (see the module docstring): every subpackage of the
# package (``sklearn_cispa._SUBPACKAGES``, so a new field is included), these modules,
# and the installed peers (optional)
_PREIMPORT = (
    "sklearn.datasets",
    "sklearn.ensemble",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "sklearn.tree",
)
# Not imodels (91 MB with numba and llvmlite, 0.9 s) nor imwatermark (27 MB with OpenCV):
# each is used in one or a few forks, and every fork of a larger server costs more (a
# fork that does nothing: 26-32 ms at 518 MB, 37 ms at 612 MB, 2 cores).
_PREIMPORT_PEERS = (
    "causallearn", "wittgenstein", "mapie", "linearmodels", "skopt",
    # imported lazily by the first torch optimizer step or torch.func call (with sympy,
    # torch.distributed and torch.onnx: about 1.2 s of CPU), which every fork that trains
    # a torch model would otherwise pay again; networkx by the causal-mixture and
    # scale-out benchmarks' graph helpers (about 0.4 s per fork)
    "torch._dynamo", "networkx",
    # causal-learn's searches (with statsmodels, patsy): about 1.2 s, in 15 forks
    "causallearn.search.ScoreBased.GES", "causallearn.search.ConstraintBased.PC",
    "causallearn.search.FCMBased.lingam",
    # the scale-out benchmark's Dask cluster (about 0.5 s per fork); importing starts no
    # thread in the server
    "distributed",
)


def _preimport():
    """Import the package's fields and the installed peers once, before ASV forks."""
    import sklearn_cispa

    for name in sklearn_cispa._SUBPACKAGES:
        importlib.import_module(f"sklearn_cispa.{name}")
    for name in _PREIMPORT:
        importlib.import_module(name)
    for name in _PREIMPORT_PEERS:
        try:
            importlib.import_module(name)
        except Exception:  # a missing or broken peer skips its own benchmark later
            pass


# ``setup_cache`` in a fork of the server (the ASV plugin ``asv_setup_cache_in_fork.py``
# sends these requests; the strings are repeated there)
_SETUP_CACHE_PREFIX = "sklearn-cispa-setup-cache:"
_SETUP_CACHE_MARKER = ".setup_cache_in_fork"


def _install_setup_cache_hook():
    """Let the fork server compute a ``setup_cache`` in a fork of itself.

    ASV's server forks and calls ``asv_runner.server._run`` for every request; a request
    whose benchmark id starts with :data:`_SETUP_CACHE_PREFIX` runs ASV's own
    ``setup_cache`` entry point instead (which writes ``cache.pickle`` into the working
    directory, the cache directory), after leaving :data:`_SETUP_CACHE_MARKER` there so
    that the plugin can tell a failing ``setup_cache`` from a server without this hook.
    Any other request runs as before.
    """
    try:
        from asv_runner import server
        from asv_runner.setup_cache import _setup_cache
    except ImportError:  # another ASV: the plugin falls back to fresh interpreters
        return
    run = getattr(server, "_run", None)
    if run is None or getattr(run, "_sklearn_cispa_hook", False):
        return

    def _run(args):
        benchmark_dir, benchmark_id, params_str = args[:3]
        if not benchmark_id.startswith(_SETUP_CACHE_PREFIX):
            return run(args)
        open(_SETUP_CACHE_MARKER, "w").close()
        return _setup_cache(
            (benchmark_dir, benchmark_id[len(_SETUP_CACHE_PREFIX):], params_str)
        )

    _run._sklearn_cispa_hook = True
    server._run = _run


def _prepare_forks():
    """Make the forks of the server cheap.

    - ``gc.freeze()``: the objects of the imports above move to the permanent generation.
      A full collection in a fork otherwise visits (and so copies, page by page) every
      object the server imported: 380 ms per fork that collects, against 30 ms frozen
      (a fork of this server that calls ``gc.collect()``, 2 cores).
    - The smoke run only (:data:`SMOKE`): joblib's default backend becomes ``threading``,
      so ``n_jobs=2`` runs on two threads of the fork instead of starting two loky worker
      interpreters (about 3 s per benchmark that asks for them: the LiRA and scale-out
      benchmarks). A backend a benchmark sets itself (the scale-out benchmark's Dask
      column) still applies. The recorded runs keep the loky processes.
    """
    import gc

    gc.collect()
    gc.freeze()
    if SMOKE:
        import joblib

        joblib.parallel_config(backend="threading")


# only in ASV's forkserver process (``benchmark.py run_server ...``): benchmark discovery,
# ``asv check`` and spawned runs import just what they use
if sys.argv[1:2] == ["run_server"]:
    _preimport()
    _install_setup_cache_hook()
    _prepare_forks()


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
