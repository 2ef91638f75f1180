"""``show_versions``: the environment, for bug reports (as ``sklearn.show_versions``).

Only the standard library is imported at module level, so that ``import sklearn_cispa``
stays cheap; torch is imported inside :func:`show_versions` to report CUDA.
"""

import importlib.metadata
import platform
import sys

# distribution names, in the order printed
_DEPENDENCIES = (
    "scikit-learn",
    "numpy",
    "scipy",
    "pandas",
    "networkx",
    "joblib",
    "threadpoolctl",
    "torch",
    "skorch",
    "cvxpy",
    "pyscipopt",
)
# the optional packages of the extras: plots, report and test peers, benchmarks, Dask
_OPTIONAL = (
    "matplotlib",
    "causal-learn",
    "ivmodels",
    "linearmodels",
    "mapie",
    "imodels",
    "wittgenstein",
    "lingam",
    "dask",
    "distributed",
    "pytest",
    "hypothesis",
    "asv",
)


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sys_info():
    return {
        "python": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "machine": platform.platform(),
    }


def _deps_info(names):
    return {name: _version(name) for name in names}


def _torch_info():
    try:
        import torch
    except ImportError:
        return {"cuda available": None}
    info = {"cuda available": bool(torch.cuda.is_available())}
    info["cuda version"] = torch.version.cuda
    if info["cuda available"]:
        info["devices"] = ", ".join(
            torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())
        )
    info["threads"] = torch.get_num_threads()
    return info


def _threadpool_info():
    """threadpoolctl's report of the BLAS and OpenMP libraries loaded (as scikit-learn's
    ``show_versions`` prints it), after importing the packages that load them."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    import numpy  # noqa: F401  (numpy's BLAS)
    import scipy.linalg  # noqa: F401  (scipy's BLAS)
    import sklearn.utils._openmp_helpers  # noqa: F401  (scikit-learn's OpenMP)

    try:
        import torch  # noqa: F401  (torch's OpenMP)
    except ImportError:
        pass
    return threadpool_info()


_THREADPOOL_KEYS = (
    "user_api",
    "internal_api",
    "num_threads",
    "prefix",
    "filepath",
    "version",
    "threading_layer",
    "architecture",
)


def show_versions():
    """Print the versions of Python, sklearn-cispa, its dependencies and optional peers.

    Paste the output into bug reports. Besides the packages it reports the platform,
    whether torch sees a CUDA device, and threadpoolctl's list of the BLAS and OpenMP
    libraries loaded (library, version, number of threads, threading layer), as
    scikit-learn's ``show_versions`` does: two BLAS or two OpenMP runtimes in one
    process, or more threads than cores, explain many slow or hanging fits. Packages
    that are not installed show ``None``.

    Returns
    -------
    None
        The information is printed.

    See Also
    --------
    sklearn.show_versions : The same for scikit-learn.

    Examples
    --------
    >>> import sklearn_cispa
    >>> sklearn_cispa.show_versions()  # doctest: +SKIP
    <BLANKLINE>
    System:
        python: 3.11...
    ...
    """
    from sklearn_cispa import __version__

    sections = {
        "System": _sys_info(),
        "Python dependencies": {"sklearn-cispa": __version__, **_deps_info(_DEPENDENCIES)},
        "Optional dependencies": _deps_info(_OPTIONAL),
        "Torch": _torch_info(),
    }
    for title, info in sections.items():
        print(f"\n{title}:")
        width = max(len(key) for key in info)
        for key, value in info.items():
            print(f"{key:>{width + 4}}: {value}")
    libraries = _threadpool_info()
    print("\nThreadpoolctl info:")
    if not libraries:
        print("    (threadpoolctl is not installed or sees no BLAS/OpenMP library)")
    for library in libraries:
        width = max(len(key) for key in _THREADPOOL_KEYS)
        for key in _THREADPOOL_KEYS:
            if key in library:
                print(f"{key:>{width + 4}}: {library[key]}")
        print()
