"""Scale-out of the shared joblib loop (issue 16): loky and Dask give the serial results.

Three workloads large enough to matter: the local scores of a 20-node causal-mixture
search (public API), 32 LiRA-style reference fits of a classifier on random halves of
shared data, and the members of an MMI credal ensemble. Each runs serially, with loky
on 2 jobs, and on a 2-worker Dask ``LocalCluster``; the results must be identical. The
speed-ups are ASV tracks (``asv_bench/benchmarks/bench_scale_out.py``), not assertions
here: the CI machine is shared.

The Dask checks also count the tasks the scheduler ran: small tasks are grouped into
batches, and the members' own loops (random-forest trees) stay inside their task.
"""

import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from sklearn_cispa.causal import CausalMixtureDiscoverer
from sklearn_cispa.uncertainty import MMIUncertainty
from sklearn_cispa.utils import _parallel, parallel_map, spawn_seeds

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dask_client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def _chain_data(n=200, n_nodes=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_nodes))
    for j in range(1, n_nodes):
        X[:, j] += 0.8 * X[:, j - 1]
    X[: n // 2, 5] += 2.0 * X[: n // 2, 4]  # one mixed mechanism
    return X


def _reference_fit(X, y, seed):
    """One LiRA-style reference model: fit on a random half of the shared data."""
    rows = np.random.default_rng(seed).permutation(len(y))[: len(y) // 2]
    model = LogisticRegression(max_iter=200).fit(X[rows], y[rows])
    return model.coef_.copy()


def _n_tasks_run(client, run):
    with distributed.get_task_stream(client) as stream:
        out = run()
    return out, len(stream.data)


def test_causal_mixture_local_scores_loky_and_dask_match_serial(dask_client):
    X = _chain_data()
    params = dict(max_components=2, n_init=1, max_iter=20, random_state=0)
    serial = CausalMixtureDiscoverer(**params).fit(X)
    loky = CausalMixtureDiscoverer(**params, n_jobs=2).fit(X)
    with parallel_config(backend="dask"):
        dask = CausalMixtureDiscoverer(**params).fit(X)
    for other in (loky, dask):
        assert_array_equal(other.adjacency_, serial.adjacency_)
        assert_array_equal(other.scores_, serial.scores_)
        assert_array_equal(other.labels_, serial.labels_)
        assert other.mixing_sets_ == serial.mixing_sets_


def test_reference_fits_send_data_once_and_group_tasks(dask_client):
    X, y = load_digits(return_X_y=True)
    X = np.tile(X, (2, 1)) / 16.0  # 3594 x 64: about 1.8 MB, shared by every task
    y = np.tile(y, 2)
    tasks = [(X, y, s) for s in spawn_seeds(0, 32)]
    serial = parallel_map(_reference_fit, tasks, n_jobs=1)
    loky = parallel_map(_reference_fit, tasks, n_jobs=2)
    with parallel_config(backend="dask"):
        dask, n_tasks = _n_tasks_run(dask_client, lambda: parallel_map(_reference_fit, tasks))
        # a second round reuses the scattered copy of X (no new scatter)
        cache = _parallel._SCATTERED[id(dask_client)]
        future = cache[id(X)][1]
        again = parallel_map(_reference_fit, tasks)
        assert cache[id(X)][1] is future
    for other in (loky, dask, again):
        assert len(other) == 32
        for a, b in zip(serial, other):
            assert_array_equal(a, b)
    # 32 tasks grouped into about 4 batches per worker, not 32 scheduler tasks
    assert n_tasks <= 4 * 2 + 2, n_tasks


def test_mmi_members_loky_and_dask_match_serial_without_nested_tasks(dask_client):
    X, y = load_digits(return_X_y=True)
    serial = MMIUncertainty(n_members=8, random_state=0).fit(X, y)
    loky = MMIUncertainty(n_members=8, random_state=0, n_jobs=2).fit(X, y)
    with parallel_config(backend="dask"):
        dask, n_tasks = _n_tasks_run(
            dask_client, lambda: MMIUncertainty(n_members=8, random_state=0).fit(X, y)
        )
    expected = serial.transform(X)
    assert_array_equal(loky.transform(X), expected)
    assert_array_equal(dask.transform(X), expected)
    assert all(est.n_jobs == 1 for est in dask.estimators_)
    # one task per batch of members, not one per tree (the issue measured 160-190)
    assert n_tasks <= 8 + 2, n_tasks


def _sklearn_assume_finite(_):
    import sklearn

    return sklearn.get_config()["assume_finite"]


def test_dask_path_runs_one_task_in_place_and_carries_the_sklearn_config(dask_client):
    import sklearn

    with parallel_config(backend="dask"):
        # a single task gains nothing from the cluster: no scheduler task at all
        out, n_tasks = _n_tasks_run(dask_client, lambda: parallel_map(abs, [(-3,)]))
        assert out == [3] and n_tasks == 0
        # the batches go to the client directly, with the caller's configuration
        with sklearn.config_context(assume_finite=True):
            flags = parallel_map(_sklearn_assume_finite, [(i,) for i in range(6)])
    assert flags == [True] * 6


def test_causal_mixture_small_steps_in_place_large_steps_two_tasks_per_worker(dask_client):
    X = _chain_data()
    params = dict(max_components=2, n_init=1, max_iter=20, random_state=0)
    serial = CausalMixtureDiscoverer(**params).fit(X)
    with parallel_config(backend="dask"):
        dask, n_tasks = _n_tasks_run(
            dask_client, lambda: CausalMixtureDiscoverer(**params).fit(X)
        )
    assert_array_equal(dask.adjacency_, serial.adjacency_)
    assert_array_equal(dask.scores_, serial.scores_)
    # 20 nodes: one parallel step per search round at most (the first rounds score
    # hundreds of parent sets; the backward and pruning steps, a handful each, run in
    # place), each dealt into 2 tasks per worker: at most 20 * 4 scheduler tasks, where
    # chunks of 16 scores for every step gave about 116
    assert 0 < n_tasks <= 20 * 4, n_tasks


def test_mmi_largest_members_first_keeps_the_member_order(dask_client):
    X, y = load_digits(return_X_y=True)
    serial = MMIUncertainty(n_members=6, random_state=1).fit(X, y)
    loky = MMIUncertainty(n_members=6, random_state=1, n_jobs=2).fit(X, y)
    assert loky.member_params_ == serial.member_params_
    for a, b in zip(loky.estimators_, serial.estimators_):
        assert a.n_estimators == b.n_estimators
        assert a.random_state == b.random_state
    assert_array_equal(loky.predict_proba(X), serial.predict_proba(X))
