"""The one joblib loop of the package.

Every embarrassingly parallel loop goes through :func:`parallel_map`, which uses
``sklearn.utils.parallel`` so that scikit-learn's configuration reaches the workers and
``joblib.parallel_config(backend="dask")`` sends the tasks to a Dask cluster.
"""

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.parallel import Parallel, delayed


def spawn_seeds(random_state, n):
    """Draw ``n`` independent integer seeds up front from ``random_state``.

    Drawing the seeds before the loop makes the result independent of the order in
    which workers run the tasks, and of the backend.

    Parameters
    ----------
    random_state : int, RandomState instance or None
        Source of randomness.
    n : int
        Number of seeds.

    Returns
    -------
    seeds : list of int
        ``n`` integers in ``[0, 2**31 - 1)``.

    Examples
    --------
    >>> from sklearn_cispa.utils import spawn_seeds
    >>> spawn_seeds(0, 3) == spawn_seeds(0, 3)
    True
    >>> len(spawn_seeds(0, 5))
    5
    """
    rng = check_random_state(random_state)
    return [int(s) for s in rng.randint(0, np.iinfo(np.int32).max, size=int(n))]


def parallel_map(func, tasks, *, n_jobs=None, verbose=0, prefer=None, require=None):
    """Run ``func(*args)`` for every ``args`` tuple of ``tasks`` with joblib.

    ``func`` must be a module-level function and every argument picklable (no lambdas
    or closures), so that process-based and distributed backends can ship the tasks.

    Parameters
    ----------
    func : callable
        Module-level function.
    tasks : iterable of tuple
        Positional arguments, one tuple per call.
    n_jobs : int, default=None
        Number of jobs; ``None`` means 1 unless inside a ``joblib.parallel_config``
        context, ``-1`` means all processors.
    verbose : int, default=0
        joblib verbosity.
    prefer : {"processes", "threads"}, default=None
        Soft hint for the default backend.
    require : {"sharedmem"}, default=None
        Hard constraint for the backend.

    Returns
    -------
    results : list
        ``func``'s return values, in the order of ``tasks``.

    Examples
    --------
    >>> from operator import add
    >>> from sklearn_cispa.utils import parallel_map
    >>> parallel_map(add, [(1, 2), (3, 4)], n_jobs=1)
    [3, 7]
    """
    parallel = Parallel(n_jobs=n_jobs, verbose=verbose, prefer=prefer, require=require)
    return list(parallel(delayed(func)(*args) for args in tasks))
