"""Issue 33: the speed-ups of the causal mixture search change no result.

Every check is bitwise: batched EM runs against runs fitted one at a time, memoised
per-k fits against refitting, and repeated fits with a fixed ``random_state``.
"""

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.causal import CausalMixtureDiscoverer
from sklearn_cispa.causal._causal_mixture import _mixing_evidence, _ScoreCache
from sklearn_cispa.causal._mixture_regression import (
    VAR_FLOOR,
    _compact,
    _compaction,
    _e_step,
    _em_many,
    _scale_columns,
    _solve,
    _starts,
    fit_mixture_bic_many,
    with_intercept,
)
from sklearn_cispa.datasets import make_causal_mixture
from sklearn_cispa.utils import spawn_seeds

FIT_ATTRS = (
    "adjacency_",
    "causal_order_",
    "scores_",
    "n_components_",
    "labels_",
    "mixing_evidence_",
)


def _mixed_problem(rng, n, p, k):
    x = rng.normal(size=(n, p))
    z = rng.integers(k, size=n)
    y = x.sum(axis=1) * (z - 1.0) + 3.0 * z + 0.4 * rng.normal(size=n)
    x = (x - x.mean(axis=0)) / x.std(axis=0) if p else x
    return with_intercept(x), (y - y.mean()) / y.std()


def _assert_same_run(a, b):
    assert a["ll"] == b["ll"]
    assert a["n_iter"] == b["n_iter"]
    for key in ("B", "s2", "pi"):
        assert a[key].tobytes() == b[key].tobytes()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_em_runs_equal_runs_fitted_alone(seed):
    """One :func:`_em_many` call over several problems, each with runs of different k
    (2 to 5) and several starts, gives every run bitwise the run it gets alone."""
    rng = np.random.default_rng(seed)
    n, p = 300, int(rng.integers(0, 3))
    problems = []
    for t in range(3):
        Z, y = _mixed_problem(rng, n, p, int(rng.integers(2, 4)))
        ks = sorted(rng.choice([2, 3, 4, 5], size=2, replace=False).tolist())
        starts, n_comp = _starts(Z, y, ks, 2, (seed, t))
        problems.append((Z, y, starts, n_comp))
    batched = _em_many(problems, 200, VAR_FLOOR)
    for (Z, y, starts, n_comp), runs in zip(problems, batched):
        for part, k, run in zip(starts, n_comp, runs):
            ((alone,),) = _em_many([(Z, y, [part], [k])], 200, VAR_FLOOR)
            _assert_same_run(run, alone)


@pytest.mark.parametrize("seed", range(6))
def test_compaction_moves_only_the_runs_it_must(seed):
    """:func:`_compaction` keeps exactly the runs not done, the first slots in place
    (only runs from beyond the new end move into the slots of runs that left), and
    :func:`_compact` in place gives ``A[order]``."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 12))
    done = rng.random(m) < 0.4
    A = rng.normal(size=(m, 3, 5))
    order, holes = _compaction(done)
    assert sorted(order.tolist()) == np.flatnonzero(~done).tolist()
    keep = len(order)
    stay_in_place = np.flatnonzero(~done[:keep])
    np.testing.assert_array_equal(order[stay_in_place], stay_in_place)
    expected = A[order]
    np.testing.assert_array_equal(holes, np.flatnonzero(done[:keep]))
    np.testing.assert_array_equal(_compact(A.copy(), order, holes), expected)


@pytest.mark.parametrize("K", [1, 2, 3, 5])
def test_e_step_blocks_change_no_bit(K, monkeypatch):
    """The E-step's passes over blocks of runs (``E_BLOCK`` entries) give bitwise the
    responsibilities and log-likelihoods of one pass over the whole batch, a dropped
    component included, whatever the block size."""
    import sklearn_cispa.causal._mixture_regression as mr

    rng = np.random.default_rng(K)
    m, n, d = 13, 200, 3
    B = 0.5 * rng.normal(size=(m, K, d))
    s2 = rng.uniform(0.2, 1.0, size=(m, K))
    pi = rng.dirichlet(np.ones(K), size=m)
    active = np.ones((m, K), dtype=bool)
    if K > 1:
        active[0, 0], pi[0, 0], s2[0, 0] = False, 0.0, 1.0
        pi[0] /= pi[0].sum()
    ZY = rng.normal(size=(m, d + 1, n))
    theta = (B, s2, pi, active)
    with np.errstate(divide="ignore"):
        monkeypatch.setattr(mr, "E_BLOCK", m * K * n)  # one block
        R1, ll1 = _e_step(theta, ZY)
        for block in (1, K * n, 3 * K * n + 7):
            monkeypatch.setattr(mr, "E_BLOCK", block)
            R2, ll2 = _e_step(theta, ZY)
            assert R2.tobytes() == R1.tobytes()
            assert ll2.tobytes() == ll1.tobytes()


def test_solve_is_numpy_solve():
    """:func:`_solve` (numpy's LAPACK kernel called directly) gives bitwise
    ``numpy.linalg.solve``, and raises as it does on a singular system."""
    rng = np.random.default_rng(0)
    for s, d in [(1, 1), (6, 3), (40, 6)]:
        A = rng.normal(size=(s, d, d)) + 2.0 * np.eye(d)
        b = rng.normal(size=(s, d, 1))
        assert _solve(A, b).tobytes() == np.linalg.solve(A, b).tobytes()
    with pytest.raises(np.linalg.LinAlgError):
        _solve(np.zeros((2, 2, 2)), np.ones((2, 2, 1)))


def test_solve_falls_back_without_the_private_kernel(monkeypatch):
    """Where numpy's private kernel module is missing or differs, :func:`_solve` is
    ``numpy.linalg.solve`` (the fast path is optional)."""
    from sklearn_cispa.causal import _mixture_regression as mr

    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 3, 3)) + 2.0 * np.eye(3)
    b = rng.normal(size=(5, 3, 1))
    monkeypatch.setattr(mr, "_LINALG_KERNELS", None)
    assert _solve(A, b).tobytes() == np.linalg.solve(A, b).tobytes()
    with pytest.raises(np.linalg.LinAlgError):
        _solve(np.zeros((2, 2, 2)), np.ones((2, 2, 1)))
    import numpy.linalg

    monkeypatch.delattr(numpy.linalg, "_umath_linalg", raising=False)
    monkeypatch.setitem(__import__("sys").modules, "numpy.linalg._umath_linalg", None)
    assert mr._linalg_kernels() is None


def test_known_fits_give_the_fits_of_refitting():
    """``known`` per-k fits (from an earlier sweep of the same problem, as
    :func:`_mixing_evidence` takes them from the search) give bitwise the result of
    refitting, the BICs of the k the sweep visits only, and are taken, not refitted."""
    rng = np.random.default_rng(4)
    problems = []
    for t, (n, p) in enumerate([(400, 1), (400, 0), (300, 2)]):
        x = rng.normal(size=(n, p))
        z = rng.integers(2, size=n)
        y = x.sum(axis=1) * (z - 0.5) + 3.0 * z + 0.5 * rng.normal(size=n)
        problems.append((x, y, range(1, 6), (t,)))
    kw = {"n_init": 2, "max_iter": 200, "patience": 2, "min_separation": 0.5}
    search = fit_mixture_bic_many(problems, heavy_tails=True, return_fits=True, **kw)
    known = [f for _, _, f in search]
    # the evidence's two sweeps: k = 1 alone, and k >= 2 (which may need a k the
    # search's sweep did not fit)
    for sub in ([1], range(2, 6)):
        probs = [(x, y, sub, e) for x, y, _, e in problems]
        fresh = fit_mixture_bic_many(probs, heavy_tails=True, **kw)
        memo = fit_mixture_bic_many(probs, heavy_tails=True, known=known, **kw)
        for (fa, ba), (fb, bb) in zip(fresh, memo):
            assert ba.tobytes() == bb.tobytes()
            assert fa["bic"] == fb["bic"] and fa["k"] == fb["k"]
            assert fa["B"].tobytes() == fb["B"].tobytes()
            assert fa["s2"].tobytes() == fb["s2"].tobytes()
    # a known fit is used as it is (a marked copy comes back)
    marked = [{k: {**f, "marker": k} for k, f in fits.items()} for fits in known]
    probs = [(x, y, [1], e) for x, y, _, e in problems]
    for fit, _ in fit_mixture_bic_many(probs, heavy_tails=True, known=marked, **kw):
        assert fit["marker"] == 1


def _fitted(seed, **params):
    X, _, _, _ = make_causal_mixture(
        n_samples=300, n_nodes=5, mixed_fraction=0.5, n_mixing=2, random_state=seed
    )
    X = StandardScaler().fit_transform(X)
    return X, CausalMixtureDiscoverer(max_components=4, n_init=2, random_state=seed, **params)


def _evidence_memoised_and_refitted(X, est):
    """The mixing evidence of fitted ``est``'s graph computed twice with its settings:
    from a search cache's memoised per-k fits, and with that memo emptied (refitted)."""
    Xs, _, _ = _scale_columns(X)  # as the fit does
    (seed,) = spawn_seeds(est.random_state, 1)
    parents = {j: np.flatnonzero(est.adjacency_[:, j]).tolist() for j in range(X.shape[1])}

    def cache():
        return _ScoreCache(
            Xs,
            max_components=est.max_components,
            n_init=est.n_init,
            max_iter=est.max_iter,
            seed=seed,
            n_jobs=None,
            init_iter=est.init_iter,
        )

    memo = cache()
    memo.ensure([(j, parents[j]) for j in parents])
    fits = [memo.fit(j, parents[j]) for j in parents]
    assert memo.em_fits
    with_memo = _mixing_evidence(memo, parents, fits)
    empty = cache()
    empty.cache = memo.cache
    assert not empty.em_fits
    return with_memo, _mixing_evidence(empty, parents, fits)


def test_memoised_mixing_evidence_equals_refitted():
    """``mixing_evidence_`` from the search's memoised per-k fits equals the evidence
    refitted from scratch (the memo emptied), bitwise."""
    X, est = _fitted(1)
    est.fit(X)
    with_memo, refitted = _evidence_memoised_and_refitted(X, est)
    assert with_memo.tobytes() == refitted.tobytes()
    assert with_memo.tobytes() == est.mixing_evidence_.tobytes()


@pytest.mark.parametrize("seed", [0, 3])
def test_fixed_random_state_reproduces_bitwise(seed):
    X, est = _fitted(seed)
    a = est.fit(X)
    first = {attr: getattr(a, attr).copy() for attr in FIT_ATTRS}
    sets = list(a.mixing_sets_)
    b = est.fit(X)
    for attr in FIT_ATTRS:
        assert getattr(b, attr).tobytes() == first[attr].tobytes(), attr
    assert list(b.mixing_sets_) == sets


@pytest.mark.parametrize("seed", [0, 1])
def test_short_run_em_continues_only_the_leader(seed):
    """``init_iter`` (short-run EM over the restarts): after ``init_iter`` iterations
    every run but the leader of its (problem, k) stops there; the leader is bitwise the
    run it is without the short-run selection, so the kept best run of every k is
    bitwise the full runs' best whenever the leader then was also the best at the end,
    and the batch makes fewer E-steps."""
    rng = np.random.default_rng(seed)
    n, init_iter = 300, 4
    problems = []
    for t in range(3):
        Z, y = _mixed_problem(rng, n, 1, 3)
        starts, n_comp = _starts(Z, y, [2, 3], 3, (seed, t))
        problems.append((Z, y, starts, n_comp))
    full = _em_many(problems, 200, VAR_FLOOR)
    short = _em_many(problems, 200, VAR_FLOOR, init_iter=init_iter)
    capped = _em_many(problems, init_iter, VAR_FLOOR)  # every run's iterate at init_iter
    n_stopped = 0
    for (_, _, _, n_comp), runs_f, runs_s, runs_c in zip(problems, full, short, capped):
        for k in (2, 3):
            idx = [i for i, kk in enumerate(n_comp) if kk == k]
            # the group's leader at init_iter (or earlier: runs that converged)
            lls = [runs_c[i]["ll"] for i in idx]
            leader = idx[int(np.argmax(lls))]
            _assert_same_run(runs_s[leader], runs_f[leader])
            for i in idx:
                if i == leader:
                    continue
                if runs_f[i]["n_iter"] <= init_iter:  # converged before the selection
                    _assert_same_run(runs_s[i], runs_f[i])
                else:  # stopped at init_iter, at the plain iterate, below the leader
                    _assert_same_run(runs_s[i], runs_c[i])
                    assert runs_s[i]["ll"] < runs_s[leader]["ll"]
                    n_stopped += 1
    assert n_stopped > 0
    iters = [sum(r["n_iter"] for runs in out for r in runs) for out in (full, short)]
    assert iters[1] < iters[0]


def test_short_run_em_discoverer_is_valid_and_memoised():
    """The discoverer with ``init_iter`` gives a DAG, reproduces bitwise under a fixed
    ``random_state``, and its ``mixing_evidence_`` from the memoised fits equals the
    evidence refitted with the same setting."""
    X, est = _fitted(2, init_iter=5)
    a = est.fit(X)
    adj = a.adjacency_.copy()
    order = a.causal_order_
    pos = np.empty_like(order)
    pos[order] = np.arange(len(order))
    src, dst = np.nonzero(adj)
    assert np.all(pos[src] < pos[dst])  # edges follow the causal order: a DAG
    evidence = a.mixing_evidence_.copy()
    _, refitted = _evidence_memoised_and_refitted(X, a)
    assert refitted.tobytes() == evidence.tobytes()
    b = est.fit(X)
    for attr in FIT_ATTRS:
        assert getattr(b, attr).tobytes() == getattr(a, attr).tobytes(), attr


def _student_t_reference(Z, y, var_floor):
    """The Student-t IRLS of ``_student_t_fit_many`` written with fresh arrays (the
    form before the in-place buffers): the same arithmetic, one expression a step."""
    from scipy.special import gammaln

    from sklearn_cispa.causal._mixture_regression import T_DOFS, T_ITER

    P, n, d = Z.shape
    m = len(T_DOFS)
    ZZ = (Z[:, :, :, None] * Z[:, :, None, :]).reshape(P, n, d * d)
    Zy = Z * y[:, :, None]

    def wls(w):
        wt = w.transpose(0, 2, 1)
        G = np.matmul(wt, ZZ).reshape(P, m, d, d)
        b = np.matmul(wt, Zy)
        scale = np.trace(G, axis1=2, axis2=3) / d
        G = G + (1e-10 * scale + 1e-300)[:, :, None, None] * np.eye(d)
        return np.linalg.solve(G, b[..., None])[..., 0]

    B = wls(np.ones((P, n, m)))
    res = y[:, :, None] - np.matmul(Z, B.transpose(0, 2, 1))
    s2 = np.maximum(np.mean(res**2, axis=1), var_floor)
    for _ in range(T_ITER):
        w = (T_DOFS + 1.0) / (T_DOFS + res**2 / s2[:, None, :])
        B = wls(w)
        res = y[:, :, None] - np.matmul(Z, B.transpose(0, 2, 1))
        s2 = np.maximum(np.mean(w * res**2, axis=1), var_floor)
    nu = T_DOFS
    ll = n * (
        gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi * s2)
    ) - 0.5 * (nu + 1) * np.log1p(res**2 / (nu * s2[:, None, :])).sum(axis=1)
    return ll, B, s2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_student_t_fits_in_place_equal_the_plain_expressions(seed):
    """Issue 33: the Student-t single mechanisms updated in place are bitwise the fits
    of the plain expressions (every degrees of freedom's log-likelihood, slopes and
    scale; the kept one)."""
    from sklearn_cispa.causal._mixture_regression import T_DOFS, _student_t_fit_many

    rng = np.random.default_rng(seed)
    for P, n, p in [(1, 300, 0), (7, 1000, 2), (4, 500, 5)]:
        Z = with_intercept(rng.normal(size=(P * n, p))).reshape(P, n, p + 1)
        y = Z @ rng.normal(size=p + 1) + rng.standard_t(2 + seed, size=(P, n))
        y = (y - y.mean(axis=1, keepdims=True)) / y.std(axis=1, keepdims=True)
        ll, B, s2 = _student_t_reference(Z, y, VAR_FLOOR)
        for q, fit in enumerate(_student_t_fit_many(Z, y, VAR_FLOOR)):
            best = int(np.argmax(ll[q]))
            assert fit["nu"] == T_DOFS[best]
            assert fit["ll"] == ll[q, best]
            assert fit["B"].tobytes() == B[q, best : best + 1].tobytes()
            assert fit["s2"].tobytes() == s2[q, best : best + 1].tobytes()
