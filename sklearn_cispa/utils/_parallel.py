"""The one joblib loop of the package.

Every embarrassingly parallel loop goes through :func:`parallel_map`, which uses
``sklearn.utils.parallel`` so that scikit-learn's configuration reaches the workers and
``joblib.parallel_config(backend="dask")`` sends the tasks to a Dask cluster.

Three things make the loop scale out rather than drown in overhead:

- **large inputs are sent once**: an argument shared by several tasks (the same object,
  for example the data matrix) is passed to each batch as one top-level argument, so
  loky memory-maps it once per call and Dask scatters it once; under Dask the scattered
  copy is also kept for later calls (search rounds) while the caller's object lives;
- **small tasks are grouped**: the tasks are cut into about four batches per worker, in
  order, instead of one scheduler round trip per task; a single task runs in place;
- **batches go to the Dask client directly** (``client.submit``), at about a third of
  the per-call cost of joblib's Dask backend, which a search pays once per round; one
  batch per worker thread, then the next, in order, to the first worker that finishes
  (as loky does), so that batches of unequal cost keep both workers busy;
- **no nested parallelism**: inside an outer parallel loop every task runs with joblib's
  sequential backend, so members that open their own loops (random forests with
  ``n_jobs``) do not multiply the workers or flood a Dask scheduler with tiny tasks.
  :func:`pin_n_jobs` also sets the ``n_jobs`` parameters of an estimator to 1.
"""

import numbers
import threading
import weakref
from collections.abc import Iterable

import numpy as np
from joblib import effective_n_jobs, parallel_config
from joblib.parallel import get_active_backend
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions, validate_params
from sklearn.utils.parallel import Parallel, delayed

# an argument shared by several tasks is sent once when it is at least this large
_SHARE_MIN_BYTES = 100_000
# batches per worker when tasks are grouped
_BATCHES_PER_WORKER = 4

_N_JOBS = [
    Interval(numbers.Integral, None, -1, closed="right"),
    Interval(numbers.Integral, 1, None, closed="left"),
    None,
]

# Dask futures of arguments already scattered, per client: id(obj) -> (weakref, future)
_SCATTERED = {}
_SCATTER_LOCK = threading.Lock()
# worker-thread slots per Dask client: id(client) -> (weakref, time asked, addresses)
_N_WORKERS = {}
_N_WORKERS_TTL = 1.0  # seconds


@validate_params(
    {"random_state": ["random_state"], "n": [Interval(numbers.Integral, 0, None, closed="left")]},
    prefer_skip_nested_validation=True,
)
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


@validate_params(
    {"estimator": [HasMethods(["get_params", "set_params"])]}, prefer_skip_nested_validation=True
)
def pin_n_jobs(estimator):
    """Set every ``n_jobs`` parameter of ``estimator`` (nested ones too) to 1, in place.

    Use it on the members of an outer parallel loop: their own parallelism would only
    oversubscribe the workers.

    Parameters
    ----------
    estimator : estimator object
        Anything with ``get_params`` and ``set_params``.

    Returns
    -------
    estimator : estimator object
        The same object.

    Examples
    --------
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from sklearn_cispa.utils import pin_n_jobs
    >>> pin_n_jobs(RandomForestClassifier(n_jobs=-1)).n_jobs
    1
    """
    names = [
        name
        for name in estimator.get_params(deep=True)
        if name == "n_jobs" or name.endswith("__n_jobs")
    ]
    if names:
        estimator.set_params(**dict.fromkeys(names, 1))
    return estimator


@validate_params({"n_jobs": _N_JOBS}, prefer_skip_nested_validation=True)
def outer_n_jobs(n_jobs=None):
    """Number of workers a :func:`parallel_map` call with ``n_jobs`` would use.

    Respects an enclosing ``joblib.parallel_config`` (a Dask backend reports its
    worker threads).

    Parameters
    ----------
    n_jobs : int or None, default=None
        The ``n_jobs`` given to the loop.

    Returns
    -------
    n_workers : int

    Examples
    --------
    >>> from sklearn_cispa.utils import outer_n_jobs
    >>> outer_n_jobs(1), outer_n_jobs(None)
    (1, 1)
    """
    return int(effective_n_jobs(n_jobs))


class _Shared:
    """Placeholder for the ``index``-th shared argument inside a stripped task."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _run_batch(func, batch, pin, *shared):
    """Run ``func`` on every task of a batch, shared arguments substituted back in."""

    def run():
        out = []
        for args in batch:
            full = [shared[a.index] if isinstance(a, _Shared) else a for a in args]
            out.append(func(*full))
        return out

    if pin:
        with parallel_config(backend="sequential"):
            return run()
    return run()


def _run_batch_with_config(config, payload, *shared):
    """:func:`_run_batch` (pinned) under the caller's scikit-learn configuration: the
    task of the direct Dask path, which does not go through ``sklearn.utils.parallel``.

    ``payload`` is ``(func, batch)`` pickled with cloudpickle, as joblib ships its tasks:
    Dask pickles a function by reference when it can, which fails on a worker that
    cannot import its module (a script, or one registered for pickling by value)."""
    import cloudpickle
    from sklearn import config_context

    func, batch = cloudpickle.loads(payload)
    with config_context(**config):
        return _run_batch(func, batch, True, *shared)


def _nbytes(obj):
    nbytes = getattr(obj, "nbytes", None)
    return int(nbytes) if isinstance(nbytes, numbers.Integral) else 0


def _split_shared(tasks):
    """Replace large arguments shared by several tasks by placeholders."""
    counts, objects = {}, {}
    for args in tasks:
        for a in args:
            if _nbytes(a) >= _SHARE_MIN_BYTES:
                counts[id(a)] = counts.get(id(a), 0) + 1
                objects[id(a)] = a
    shared_ids = [i for i, c in counts.items() if c > 1]
    index = {i: k for k, i in enumerate(shared_ids)}
    stripped = [
        tuple(_Shared(index[id(a)]) if id(a) in index else a for a in args) for args in tasks
    ]
    return stripped, [objects[i] for i in shared_ids]


def _scattered_futures(client, shared):
    """Dask futures of the shared arguments, scattered to every worker once.

    Arguments scattered by an earlier call (same object, still alive) are reused, so a
    loop of search rounds sends the data to the cluster once.
    """
    cache = _SCATTERED.setdefault(id(client), {})
    with _SCATTER_LOCK:
        for key, (ref, fut) in list(cache.items()):
            # drop entries whose object died (its id may be reused) or whose data is gone
            if ref() is None or fut.client is not client or fut.status != "finished":
                del cache[key]
        missing = [obj for obj in shared if id(obj) not in cache]
        if missing:
            scattered = client.scatter(missing, broadcast=True, hash=False)
            for obj, fut in zip(missing, scattered):
                cache[id(obj)] = (weakref.ref(obj), fut)
        return [cache[id(obj)][1] for obj in shared]


def _dask_slots(backend):
    """Worker-thread slots of the Dask client of ``backend``, asked at most once a second.

    A list with one worker address per worker thread, the workers taken in turn (so
    that the first batches of a call go to different workers). joblib's Dask backend
    asks the scheduler for the thread count (``client.ncores()``, a round trip) before
    every call; a search that calls the loop once per step paid it every step. The
    slots only shape the batches and where they run, never the results, so a list up to
    a second old (a cluster that scales) is harmless: a batch placed on a worker that
    has left runs on another.
    """
    import time

    client = backend.client
    now = time.monotonic()
    with _SCATTER_LOCK:
        entry = _N_WORKERS.get(id(client))
        if entry is not None and entry[0]() is client and now - entry[1] < _N_WORKERS_TTL:
            return entry[2]
    nthreads = client.ncores()
    if not nthreads:  # none yet: joblib's backend waits for them (or raises)
        backend.effective_n_jobs(None)
        nthreads = client.ncores()
    slots = [
        address
        for k in range(max(nthreads.values(), default=0))
        for address in sorted(nthreads)
        if nthreads[address] > k
    ]
    if slots:
        with _SCATTER_LOCK:
            _N_WORKERS[id(client)] = (weakref.ref(client), now, slots)
    return slots


def _dask_map(backend, func, batches, shared, slots):
    """Run the batches on the Dask client of ``backend`` directly.

    joblib's Dask backend costs about three times a plain ``client.submit`` per call (a
    result-collection loop polled every 10 ms, a new backend per call to add the
    scattered data); a search that calls the loop once per round pays that every round.
    The scikit-learn configuration travels with each batch, as
    ``sklearn.utils.parallel`` would carry it.

    The batches are handed out as loky hands them out: one per worker thread (``slots``,
    one worker address per thread), then the next batch, in order, to the worker whose
    batch finished first. Each batch is placed on its worker explicitly (a loose
    restriction: another worker takes it if that one has left). Left to itself, the
    scheduler put both batches of a first wave on one worker now and then (the data
    they share was on that worker only: the active memory manager drops the copies of
    a broadcast that no task waits for), and the other worker idled until work stealing
    moved one, a second later, or for the whole call without work stealing (the MMI
    members: 8 s of 12). Submitted all at once, the batches were placed by the
    scheduler's estimate of their cost (the same for every batch of a call), so a worker
    could also wait on a queue of large batches.

    The results finished together are fetched with one ``client.gather``, after their
    replacements are sent, so that the workers are busy while the results travel and
    are unpickled here (fitted forests). The client's own ``direct_to_workers`` decides
    whether they come straight from the workers or through the scheduler.
    """
    import cloudpickle
    from distributed import as_completed
    from sklearn import get_config

    client = backend.client
    futures_shared = _scattered_futures(client, shared) if shared else []
    config = get_config()
    kwargs = {"pure": False, **getattr(backend, "submit_kwargs", {})}
    placed = "workers" not in kwargs  # a caller's own restriction wins
    where = {}

    def submit(index, address):
        to = {}
        if placed and address is not None:
            to = {"workers": [address], "allow_other_workers": True}
        future = client.submit(
            _run_batch_with_config,
            config,
            cloudpickle.dumps((func, batches[index])),
            *futures_shared,
            **kwargs,
            **to,
        )
        where[future.key] = (index, address)
        return future

    first = min(len(batches), len(slots))
    running = as_completed([submit(i, slots[i]) for i in range(first)])
    following = iter(range(first, len(batches)))
    out = [None] * len(batches)
    while not running.is_empty():
        done = running.next_batch(block=True)
        # the next batches first, each to the worker that finished one, so that the
        # workers are busy while the results travel
        for future, index in zip(done, following):
            running.add(submit(index, where[future.key][1]))
        for future, result in zip(done, client.gather(done)):
            out[where.pop(future.key)[0]] = result
    return out


@validate_params(
    {
        "func": [callable],
        "tasks": [Iterable],
        "n_jobs": _N_JOBS,
        "verbose": ["verbose"],
        "prefer": [StrOptions({"processes", "threads"}), None],
        "require": [StrOptions({"sharedmem"}), None],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
    },
    prefer_skip_nested_validation=True,
)
def parallel_map(
    func, tasks, *, n_jobs=None, verbose=0, prefer=None, require=None, batch_size="auto"
):
    """Run ``func(*args)`` for every ``args`` tuple of ``tasks`` with joblib.

    ``func`` must be a module-level function and every argument picklable (no lambdas
    or closures), so that process-based and distributed backends can ship the tasks.

    When more than one worker is used:

    - an argument at least 100 kB large that several tasks share (the same object) is
      sent once per call rather than once per task; under
      ``joblib.parallel_config(backend="dask")`` it is scattered to every worker and the
      scattered copy is reused by later calls while the object is alive;
    - the tasks are grouped, in order, into about four batches per worker
      (``batch_size="auto"``) or into batches of ``batch_size`` tasks; under Dask the
      batches are submitted to the client of the active backend directly, with the
      caller's scikit-learn configuration, one per worker thread and then, in order,
      the next to the first worker that finishes;
    - every task runs inside ``joblib.parallel_config(backend="sequential")``, so its
      own joblib loops (for example a random forest's ``n_jobs``) run in one job.

    A single task always runs in the calling process.

    The results do not depend on the backend or on ``n_jobs`` as long as ``func`` is
    deterministic given its arguments (draw seeds up front with :func:`spawn_seeds`).

    Parameters
    ----------
    func : callable
        Module-level function.
    tasks : iterable of tuple
        Positional arguments, one tuple per call.
    n_jobs : int, default=None
        Number of jobs; ``None`` means 1 unless inside a ``joblib.parallel_config``
        context, ``-1`` means all processors. 0 is refused.
    verbose : int, default=0
        joblib verbosity.
    prefer : {"processes", "threads"}, default=None
        Soft hint for the default backend.
    require : {"sharedmem"}, default=None
        Hard constraint for the backend.
    batch_size : int or "auto", default="auto"
        Tasks per batch when running in parallel; "auto" makes about four batches per
        worker.

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
    tasks = [tuple(args) for args in tasks]
    if not tasks:
        return []
    backend, _ = get_active_backend()
    on_dask = type(backend).__name__ == "DaskDistributedBackend" and require is None
    slots = _dask_slots(backend) if on_dask and n_jobs != 1 else None
    n_workers = len(slots) if slots else outer_n_jobs(n_jobs)
    # one task gains nothing from a pool: it runs here, without the round trip
    if len(tasks) == 1 or (n_workers == 1 and not on_dask):
        return [func(*args) for args in tasks]

    stripped, shared = _split_shared(tasks)
    if batch_size == "auto":
        size = max(1, -(-len(tasks) // (_BATCHES_PER_WORKER * n_workers)))
    else:
        size = int(batch_size)
    batches = [stripped[i : i + size] for i in range(0, len(stripped), size)]

    if on_dask:
        out = _dask_map(backend, func, batches, shared, slots or [None] * n_workers)
    else:
        parallel = Parallel(n_jobs=n_jobs, verbose=verbose, prefer=prefer, require=require)
        out = parallel(delayed(_run_batch)(func, batch, True, *shared) for batch in batches)
    return [result for batch in out for result in batch]
