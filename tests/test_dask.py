"""The shared joblib loop runs on a Dask cluster and matches the serial result."""

import numpy as np
import pytest

from sklearn_cispa.utils import parallel_map, spawn_seeds

distributed = pytest.importorskip("distributed")


def _noisy_norm(n, seed):
    rng = np.random.default_rng(seed)
    return float(np.linalg.norm(rng.normal(size=n)))


def _on_dask_worker(_):
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


@pytest.fixture(scope="module")
def dask_client():
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.slow
def test_parallel_map_on_dask_matches_serial(dask_client):
    from joblib import parallel_config

    tasks = [(10 + i, s) for i, s in enumerate(spawn_seeds(0, 12))]
    serial = parallel_map(_noisy_norm, tasks, n_jobs=1)
    with parallel_config(backend="dask"):
        on_dask = parallel_map(_noisy_norm, tasks)
    assert on_dask == serial
    # the tasks really ran on the cluster's worker, not in the calling thread
    with parallel_config(backend="dask"):
        assert all(parallel_map(_on_dask_worker, [(i,) for i in range(4)]))
    assert not any(parallel_map(_on_dask_worker, [(i,) for i in range(4)], n_jobs=1))
