"""Static checks that keep the ASV CI smoke stage (``.ci/run``) fast.

The stage runs every benchmark once with ``SKLEARN_CISPA_BENCH_SMOKE=1``; its time goes
to interpreter start-ups and to problem sizes, so a benchmark module (a) keeps heavy
imports out of module level (ASV's benchmark discovery and ``asv check`` import every
module in fresh interpreters), (b) reads ``SMOKE`` (or says why it need not) when it
computes a ``setup_cache``, and (c) the ASV plugin that computes ``setup_cache`` in a
fork of the server agrees with its server-side hook. These checks parse the files; they
import neither ASV nor the benchmarks.
"""

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "asv_bench" / "benchmarks"
MODULES = sorted(BENCH.glob("bench_*.py"))

# imports allowed at module level of a benchmark module: numpy, the standard library and
# the shared helpers (relative imports); the package, scikit-learn, torch and the peers
# are imported inside the functions (discovery of all modules then takes 0.5 s instead
# of 2.2 s with scikit-learn and pandas, and it runs twice per CI: asv check, asv run)
CHEAP_TOP_LEVEL = ("numpy", "os", "sys", "time", "warnings", "importlib", "math",
                   "itertools", "functools")

# modules whose setup_cache needs no smoke size (each with the reason); every other
# module with a setup_cache reads SMOKE from _common
SETUP_CACHE_WITHOUT_SMOKE = {
    # CPU seconds of the setup_cache in the smoke run, measured on 2 shared cores
    "bench_graphon.py": "one NTK spectrum per mask on 128 digits (about 1 s of CPU)",
}


def _tree(path):
    return ast.parse(path.read_text(), filename=str(path))


def test_benchmark_modules_exist():
    assert MODULES


def test_no_heavy_imports_at_module_level():
    offenders = []
    for path in MODULES:
        for node in _tree(path).body:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] not in CHEAP_TOP_LEVEL:
                    offenders.append(f"{path.name}: import {name}")
    assert not offenders, offenders


def _has_setup_cache(tree):
    return any(
        isinstance(node, (ast.FunctionDef, ast.Assign))
        and (getattr(node, "name", None) == "setup_cache"
             or any(getattr(t, "id", None) == "setup_cache"
                    for t in getattr(node, "targets", [])))
        for node in ast.walk(tree)
    )


def _reads_smoke(tree):
    return any(isinstance(node, ast.Name) and node.id == "SMOKE" for node in ast.walk(tree))


def test_setup_cache_modules_read_smoke():
    missing = []
    for path in MODULES:
        tree = _tree(path)
        if _has_setup_cache(tree) and not _reads_smoke(tree):
            if path.name not in SETUP_CACHE_WITHOUT_SMOKE:
                missing.append(path.name)
    assert not missing, (
        f"{missing}: a setup_cache that takes seconds reads SMOKE from _common and "
        "runs a smoke size (or add the module with its reason to SETUP_CACHE_WITHOUT_SMOKE)"
    )
    stale = [
        name for name in SETUP_CACHE_WITHOUT_SMOKE
        if not (BENCH / name).exists() or _reads_smoke(_tree(BENCH / name))
    ]
    assert not stale, f"{stale}: gone or reading SMOKE now, remove the exemption"


def _string_constants(path):
    return {
        target.id: node.value.value
        for node in _tree(path).body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def test_setup_cache_plugin_matches_server_hook():
    conf = json.loads((ROOT / "asv_bench" / "asv.conf.json").read_text())
    assert conf["launch_method"] == "forkserver"
    assert ".asv_setup_cache_in_fork" in conf["plugins"]
    plugin = _string_constants(ROOT / "asv_bench" / "asv_setup_cache_in_fork.py")
    hook = _string_constants(BENCH / "_common.py")
    assert plugin["PREFIX"] == hook["_SETUP_CACHE_PREFIX"]
    assert plugin["MARKER"] == hook["_SETUP_CACHE_MARKER"]
