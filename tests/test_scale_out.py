"""Scale-out of the shared joblib loop (issue 16): loky and Dask give the serial results.

Three workloads large enough to matter: the local scores of a 20-node causal-mixture
search (public API), 32 LiRA-style reference fits of a classifier on random halves of
shared data, and the members of an MMI credal ensemble; and LiRA's references when they
are language models (small, since only the equality is checked). Each runs serially, with loky
on 2 jobs, and on a 2-worker Dask ``LocalCluster``; the results must be identical. The
speed-ups are ASV tracks (``asv_bench/benchmarks/bench_scale_out.py``), not assertions
here: the CI machine is shared.

The Dask checks also count the tasks the scheduler ran: small tasks are grouped into
batches, and the members' own loops (random-forest trees) stay inside their task.
"""

import warnings
from itertools import combinations

import numpy as np
import pytest
from joblib import parallel_config
from numpy.testing import assert_array_equal
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

from sklearn_cispa.causal import CausalMixtureDiscoverer, _causal_mixture
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


def _count_steps(monkeypatch):
    """Count the search steps that score something (top-level ``ensure`` batches)."""
    steps = []
    ensure = _causal_mixture._ScoreCache.ensure

    def counting(self, keys):
        before = len(self.cache)
        ensure(self, keys)
        if len(self.cache) > before:
            steps.append(len(self.cache) - before)

    monkeypatch.setattr(_causal_mixture._ScoreCache, "ensure", counting)
    return steps


def test_causal_mixture_backward_and_pruning_join_the_next_round(dask_client, monkeypatch):
    X = _chain_data()
    params = dict(max_components=2, n_init=1, max_iter=20, random_state=0)
    serial = CausalMixtureDiscoverer(**params).fit(X)
    steps = _count_steps(monkeypatch)
    with parallel_config(backend="dask"):
        dask, n_tasks = _n_tasks_run(
            dask_client, lambda: CausalMixtureDiscoverer(**params).fit(X)
        )
    assert_array_equal(dask.adjacency_, serial.adjacency_)
    assert_array_equal(dask.scores_, serial.scores_)
    # 20 nodes: the backward step of round r is scored with round r + 1's forward keys
    # and the prunings with later rounds or with each other, so the search makes at
    # most one step per round plus one per pruning level (largest parent set) instead
    # of a step per backward removal and per pruning level (70 steps here before)
    max_parents = int(serial.adjacency_.sum(axis=0).max())
    assert len(steps) <= 20 + max_parents + 3, steps
    # each step of at least 8 scores is one task per worker (two for a large step);
    # smaller ones run in place
    parallel = [n for n in steps if n >= _causal_mixture.PARALLEL_MIN_SCORES]
    assert 0 < n_tasks <= 2 * 2 * len(parallel), (n_tasks, steps)


def _sequential_search(cache, n_nodes, prune_alpha):
    """Oracle: the search in its plain sequential order (forward round, then the backward
    step on the new source, one removal at a time; the pruning after the last round,
    node by node and level by level), as the reference code runs it."""
    cand, order = list(range(n_nodes)), []
    pa = {j: [] for j in range(n_nodes)}
    while cand:
        cache.ensure([(e, pa[e]) for e in cand])
        cache.ensure([(e, pa[e] + [c]) for c in cand for e in cand if c != e])
        m = len(cand)
        gain = np.zeros((m, m))
        for a, c in enumerate(cand):
            for b, e in enumerate(cand):
                if c != e:
                    gain[a, b] = cache.score(e, pa[e] + [c]) - cache.score(e, pa[e])
        delta = gain - gain.T
        np.fill_diagonal(delta, -np.inf)
        worst = delta.max(axis=1)
        scale = max(1.0, max(abs(cache.score(e, pa[e])) for e in cand))
        tol = _causal_mixture.TIE_RTOL * scale
        src = cand[int(np.flatnonzero(worst <= worst.min() + tol)[0])]
        cand.remove(src)
        order.append(src)
        for e in cand:
            if cache.score(e, pa[e]) - cache.score(e, pa[e] + [src]) > 0:
                pa[e] = pa[e] + [src]
        parents, n_removed = list(pa[src]), 0
        while n_removed < len(parents) and len(parents) >= 2:
            cache.ensure([(src, [q for q in parents if q != r]) for r in parents])
            old = cache.score(src, parents)
            diffs = [old - cache.score(src, [r for r in parents if r != q]) for q in parents]
            positive = [(d, i) for i, d in enumerate(diffs) if d > 0]
            if not positive:
                break
            parents.pop(min(positive)[1])
            n_removed += 1
        pa[src] = parents
    threshold = np.log2(1.0 / prune_alpha)
    for j in pa:
        full = cache.score(j, pa[j])
        for size in range(len(pa[j])):
            level = list(combinations(pa[j], size))
            cache.ensure([(j, s) for s in level])  # one batch per level, as the reference
            passing = [s for s in level if abs(full - cache.score(j, s)) < threshold]
            if passing:
                pa[j] = list(passing[0])
                break
    return pa, order


@pytest.mark.parametrize(
    "n, n_nodes, seed, share, prune_alpha",
    [(200, 20, 0, False, 0.05), (300, 12, 1, True, 0.01), (150, 8, 2, False, 0.5)],
)
def test_pipelined_search_equals_the_sequential_order(n, n_nodes, seed, share, prune_alpha):
    rng = np.random.default_rng(seed)
    X = _chain_data(n, n_nodes, seed)
    X[:, 2:] += 0.5 * X[:, :-2] * rng.choice([0.0, 1.0], size=n_nodes - 2)  # some 2-hop edges
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    kwargs = dict(max_components=2, n_init=1, max_iter=20, seed=seed, n_jobs=None, share=share)
    oracle_cache = _causal_mixture._ScoreCache(X, **kwargs)
    expected = _sequential_search(oracle_cache, n_nodes, prune_alpha)
    cache = _causal_mixture._ScoreCache(X, **kwargs)
    assert _causal_mixture._topological_search(cache, n_nodes, prune_alpha) == expected
    # the same local scores, no speculative extra ones: the serial cost is unchanged
    assert cache.cache.keys() == oracle_cache.cache.keys()
    assert sum(len(p) for p in expected[0].values()) > n_nodes // 2  # a non-trivial graph


def test_small_search_steps_go_out_when_their_scores_are_slow():
    X = _chain_data(100, 8, 0)
    cache = _causal_mixture._ScoreCache(
        X, max_components=2, n_init=1, max_iter=20, seed=0, n_jobs=2
    )
    assert cache.n_workers == 2
    assert not cache._in_parallel(3)  # nothing measured yet: small steps stay here
    assert cache._in_parallel(_causal_mixture.PARALLEL_MIN_SCORES)
    cache._seconds, cache._scored = 0.2, 10  # 20 ms a score: 3 scores are worth it
    assert cache._in_parallel(3) and not cache._in_parallel(1)
    cache._seconds = 0.01  # 1 ms a score: the round trip costs more
    assert not cache._in_parallel(3)


def test_parallel_small_steps_and_evidence_leave_the_fit_unchanged():
    # with the defaults every score is slow enough that the backward and pruning steps
    # and the mixing-evidence fits run on the workers too; the fit is the serial one
    X = _chain_data(300, 7, 3)  # node 5 mixed
    serial = CausalMixtureDiscoverer(random_state=0).fit(X)
    loky = CausalMixtureDiscoverer(random_state=0, n_jobs=2).fit(X)
    for attr in ("adjacency_", "scores_", "labels_", "mixing_evidence_", "n_components_"):
        assert_array_equal(getattr(loky, attr), getattr(serial, attr))


def _sleep_where(seconds):
    import time

    time.sleep(seconds)
    return distributed.get_worker().address


def test_dask_batches_go_to_the_first_free_worker(dask_client):
    # one long batch and three short ones on 2 workers: handed out in order to the
    # worker that is free, the short ones all run beside the long one (2 s in all);
    # placed up front by the scheduler, one short batch could queue behind the long one
    with parallel_config(backend="dask"):
        where = parallel_map(_sleep_where, [(2.0,), (0.3,), (0.3,), (0.3,)], batch_size=1)
    assert where[0] not in where[1:]
    assert len(set(where[1:])) == 1


def test_mmi_largest_members_first_keeps_the_member_order(dask_client):
    X, y = load_digits(return_X_y=True)
    serial = MMIUncertainty(n_members=6, random_state=1).fit(X, y)
    loky = MMIUncertainty(n_members=6, random_state=1, n_jobs=2).fit(X, y)
    assert loky.member_params_ == serial.member_params_
    for a, b in zip(loky.estimators_, serial.estimators_):
        assert a.n_estimators == b.n_estimators
        assert a.random_state == b.random_state
    assert_array_equal(loky.predict_proba(X), serial.predict_proba(X))


def test_dask_path_places_each_batch_and_asks_the_workers_once(dask_client, monkeypatch):
    # the first batches go one to each worker, each next one to the worker that finished
    # one (placed explicitly, loosely: the scheduler left alone put both batches of a
    # first wave on one worker now and then); the workers are asked once, not before
    # every call (a scheduler round trip that a search paid once per step)
    placed, ncores_calls = [], []
    client_submit, client_ncores = dask_client.submit, dask_client.ncores
    workers = sorted(client_ncores())

    def recording_submit(func, *args, **kwargs):
        placed.append((kwargs.get("workers"), kwargs.get("allow_other_workers")))
        return client_submit(func, *args, **kwargs)

    def counting_ncores(*args, **kwargs):
        ncores_calls.append(1)
        return client_ncores(*args, **kwargs)

    monkeypatch.setattr(dask_client, "submit", recording_submit)
    monkeypatch.setattr(dask_client, "ncores", counting_ncores)
    monkeypatch.setattr(_parallel, "_N_WORKERS_TTL", 1e9)
    _parallel._N_WORKERS.clear()
    with parallel_config(backend="dask"):
        for _ in range(3):
            placed.clear()
            assert parallel_map(_sleep_where, [(0.2,), (0.2,)], batch_size=1) == workers
            assert placed == [([w], True) for w in workers]
        placed.clear()
        where = parallel_map(_sleep_where, [(0.6,), (0.1,), (0.1,), (0.1,)], batch_size=1)
    # the long batch on the first worker, the short ones where they were sent
    assert where == [workers[0]] + [workers[1]] * 3
    assert [w for w, _ in placed] == [[workers[0]]] + [[workers[1]]] * 3
    assert len(ncores_calls) == 1
    # slots older than their time to live are asked again
    monkeypatch.setattr(_parallel, "_N_WORKERS_TTL", 0.0)
    with parallel_config(backend="dask"):
        assert parallel_map(abs, [(-1,), (-2,)]) == [1, 2]
    assert len(ncores_calls) == 2


def test_dask_path_raises_the_task_error(dask_client):
    with parallel_config(backend="dask"), pytest.raises(ValueError, match="invalid literal"):
        parallel_map(int, [("1",), ("x",), ("3",)], batch_size=1)


def test_lira_on_a_language_model_loky_and_dask_match_serial(dask_client):
    # issue 33: LiRA's references on Dask give the serial fit's statistics exactly
    pytest.importorskip("transformers")
    from sklearn_cispa.privacy import LiRAMembershipInference
    from sklearn_cispa.report import lm_pool, lm_reference_model

    pool, tokenizer = lm_pool(0, 16)
    est = lm_reference_model(tokenizer, n_layer=1, n_embd=16, max_steps=5, block_size=32)
    params = dict(n_reference=4, n_targets=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # five training steps: ConvergenceWarning
        serial = LiRAMembershipInference(est, **params).fit(pool)
        loky = LiRAMembershipInference(est, **params, n_jobs=2).fit(pool)
        with parallel_config(backend="dask"):
            dask = LiRAMembershipInference(est, **params).fit(pool)
    expected = serial.score_samples(pool, target=serial.targets_[0])
    for other in (loky, dask):
        assert_array_equal(other.keep_, serial.keep_)
        assert_array_equal(other.ref_stats_, serial.ref_stats_)
        assert_array_equal(other.target_stats_, serial.target_stats_)
        assert_array_equal(other.score_samples(pool, target=other.targets_[0]), expected)
