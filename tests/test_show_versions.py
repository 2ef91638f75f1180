"""sklearn_cispa.show_versions and the cost of ``import sklearn_cispa``."""

import subprocess
import sys

import sklearn

import sklearn_cispa
from sklearn_cispa._show_versions import _DEPENDENCIES, _OPTIONAL, _deps_info


def test_show_versions_prints_every_section_and_package(capsys):
    sklearn_cispa.show_versions()
    out = capsys.readouterr().out
    for title in ("System:", "Python dependencies:", "Optional dependencies:", "Torch:"):
        assert title in out
    for name in ("sklearn-cispa", *_DEPENDENCIES, *_OPTIONAL, "python", "cuda available"):
        assert f"{name}: " in out, name
    assert f"sklearn-cispa: {sklearn_cispa.__version__}" in out
    assert f"scikit-learn: {sklearn.__version__}" in out


def test_show_versions_reports_blas_and_openmp(capsys):
    from threadpoolctl import threadpool_info

    sklearn_cispa.show_versions()
    out = capsys.readouterr().out
    section = out.split("Threadpoolctl info:", 1)[1]
    # the libraries threadpoolctl sees after numpy and scikit-learn are loaded: a BLAS
    # (numpy's) and scikit-learn's OpenMP, each with its path and thread count
    apis = {lib["user_api"] for lib in threadpool_info()}
    assert {"blas", "openmp"} <= apis
    for lib in threadpool_info():
        assert f"filepath: {lib['filepath']}" in section
    assert "user_api: blas" in section and "user_api: openmp" in section
    assert section.count("num_threads: ") == len(threadpool_info())


def test_missing_package_reports_none():
    assert _deps_info(["surely-not-an-installed-distribution"]) == {
        "surely-not-an-installed-distribution": None
    }


def test_show_versions_is_exported_at_top_level():
    assert "show_versions" in sklearn_cispa.__all__
    assert "show_versions" in dir(sklearn_cispa)


def test_top_level_import_does_not_import_torch():
    code = "import sys, sklearn_cispa; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
