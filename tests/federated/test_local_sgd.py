"""Local SGD (issue 18): closed forms, the spec's experiments at CI size, estimator use.

Experiments 1-5 of the spec (``shared/specs/local_sgd.md``, section 7) on quadratic
machines from ``make_heterogeneous_quadratics`` (M = 8, d = 10, no intercept). The bias
``F(x) - F*`` of a quadratic is computed exactly as ``1/2 (x - x*)^T A_bar (x - x*)``,
independently of the estimator's own loss curve.
"""

import socket
import time
import warnings

import numpy as np
import pytest
import sklearn
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.datasets import make_heterogeneous_quadratics
from sklearn_cispa.federated import LocalSGDClassifier, LocalSGDRegressor, heterogeneity

M, D = 8, 10


def _problem(tau, zeta, mu=0.1, seed=0, **kw):
    X, y, g, prob = make_heterogeneous_quadratics(
        n_machines=M, n_features=D, tau=tau, zeta=zeta, mu=mu, n_samples_per_machine=20,
        return_problem=True, random_state=seed, **kw,
    )
    return X, y, g, prob


def _zeta_for(target, tau, mu=0.1, seed=0):
    """The generator's zeta that gives zeta_star = target (zeta_star is linear in zeta)."""
    return target / _problem(tau, 1.0, mu=mu, seed=seed)[3].heterogeneity()["zeta_star"]


def _excess(prob, x):
    diff = x - prob.x_star_
    return 0.5 * float(diff @ prob.A_.mean(axis=0) @ diff)


def _local_gd(X, y, g, K, R, eta=0.5, **kw):
    return LocalSGDRegressor(
        local_steps=K, rounds=R, step_size=eta, fit_intercept=False, **kw
    ).fit(X, y, groups=g)


# -- experiment 1: tau = 0 means local GD is centralised GD ---------------------------
def test_tau_zero_is_centralised_gd():
    X, y, g, prob = _problem(tau=0.0, zeta=3.0)
    assert prob.heterogeneity()["zeta_star"] > 1.0
    K, R, eta = 7, 40, 0.5
    est = _local_gd(X, y, g, K, R, eta)
    x = np.zeros(D)
    for _ in range(K * R):
        x = x - eta * prob.grad(x)
    assert np.max(np.abs(est.coef_ - x)) < 1e-10
    # the machines drift apart within every round, yet the average is exact (experiment 5)
    assert np.all(est.consensus_error_[1:] > 1e-3)


@given(
    n_machines=st.integers(2, 5),
    n_features=st.integers(1, 4),
    K=st.integers(1, 6),
    seed=st.integers(0, 1000),
)
def test_tau_zero_any_shape_matches_gd(n_machines, n_features, K, seed):
    X, y, g, prob = make_heterogeneous_quadratics(
        n_machines=n_machines, n_features=n_features, tau=0.0, zeta=2.0, mu=0.2,
        n_samples_per_machine=max(n_features, 3), return_problem=True, random_state=seed,
    )
    R, eta = 5, 0.7
    est = _local_gd(X, y, g, K, R, eta, batch_size=None)
    x = np.zeros(n_features)
    for _ in range(K * R):
        x = x - eta * prob.grad(x)
    np.testing.assert_allclose(est.coef_, x, rtol=0, atol=1e-10)


# -- experiment 2: zeta_star = 0 means no bias for any tau ----------------------------
def test_zeta_zero_no_bias():
    X, y, g, prob = _problem(tau=0.09, zeta=0.0)
    est = _local_gd(X, y, g, K=20, R=300)
    assert _excess(prob, est.coef_) < 1e-20


# -- experiment 3: the fixed-point bias scales with (tau zeta_star)^2 and grows with K
def _bias_table():
    table = {}
    for tau in (0.0, 0.03, 0.09):
        for target in (0.28, 1.13):
            X, y, g, prob = _problem(tau=tau, zeta=_zeta_for(target, tau))
            zs = prob.heterogeneity()["zeta_star"]
            for K in (1, 10, 50):
                est = _local_gd(X, y, g, K=K, R=2000)
                table[tau, target, K] = (_excess(prob, est.coef_), tau * zs)
    return table


@pytest.mark.slow
def test_bias_table():
    table = _bias_table()
    for (tau, target, K), (bias, tz) in table.items():
        if tau == 0.0 or K == 1:
            assert bias < 1e-20, (tau, target, K, bias)
    for K in (10, 50):
        c = np.array([b / tz**2 for (tau, _, k), (b, tz) in table.items() if k == K and tau])
        mid = np.median(c)
        assert np.all((c > mid / 2) & (c < mid * 2)), (K, c)
    for tau in (0.03, 0.09):
        for target in (0.28, 1.13):
            biases = [table[tau, target, K][0] for K in (1, 10, 50)]
            assert biases[0] < biases[1] < biases[2], biases
    # tripling tau and quadrupling zeta_star: about 9 and 16 (spec: 8.7 and 16.5)
    r_tau = table[0.09, 1.13, 50][0] / table[0.03, 1.13, 50][0]
    r_zeta = table[0.09, 1.13, 50][0] / table[0.09, 0.28, 50][0]
    assert 6 < r_tau < 12 and 11 < r_zeta < 22, (r_tau, r_zeta)


# -- experiment 4: local beats minibatch at low tau zeta_star, loses at high ----------
# The spec's grid (12 steps in [1e-3, 1]) stopped at minibatch SGD's best step (1.32 on
# this problem is better still), which flattered local SGD (issue 34). This grid reaches
# past the stability edge of every algorithm (minibatch diverges above about 2), and the
# test checks that each algorithm's best step has a tried neighbour on both sides.
ETA_GRID = np.geomspace(1e-3, 4.0, 16)
ALGORITHMS = ("local", "minibatch", "accelerated_minibatch")


def _best_excess(prob, X, y, g, algorithm, seeds, sigma=0.1, K=20, R=20):
    """Per-seed excess loss at the step of ETA_GRID with the least mean, and whether that
    step is interior to the grid."""
    table = []
    for eta in ETA_GRID:
        vals = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for seed in seeds:
                est = LocalSGDRegressor(
                    algorithm=algorithm, local_steps=K, rounds=R, step_size=eta,
                    gradient_noise=sigma, fit_intercept=False, random_state=seed,
                ).fit(X, y, groups=g)
                vals.append(_excess(prob, est.coef_) if np.isfinite(est.loss_curve_[-1])
                            else np.inf)
        table.append(vals)
    means = [np.mean(v) for v in table]
    best = int(np.argmin(means))
    return np.array(table[best]), 0 < best < len(ETA_GRID) - 1


@pytest.mark.slow
def test_local_vs_minibatch_crossover():
    """Local SGD wins at small tau * zeta_star and loses at large (paper's message), with
    every algorithm tuned on a grid whose best point is inside it.

    Measured here (mu = 0.1, sigma = 0.1, R = K = 20, best of 16 steps in [1e-3, 4] per
    algorithm, 3 seeds; best steps local 0.083, minibatch 1.32, accelerated 0.76-1.32, all
    interior): local/minibatch = 0.71 at tau zeta* = 0 and 0.72 at 0.0097, 5.1 at 0.39 and
    15.1 at 0.9; local/accelerated minibatch 0.39, 0.40, 3.1 and 13.5. At low
    heterogeneity local SGD had the lower excess loss on each of 10 seeds (paired ratios
    0.50-0.90).

    What changed under fair tuning: the spec's grid stopped at 1, below minibatch SGD's
    best step, and gave local/minibatch 0.30 at low heterogeneity, where the old test
    asserted < 0.7. Tuned fairly, local SGD's advantage there is smaller (0.71-0.72) but
    it holds on every seed, which is what is asserted, with a margin (< 0.8, a
    regression guard from the measurement above); the loss at high heterogeneity is
    larger than the old test asked (> 1.2) and is asserted at > 3, against accelerated
    minibatch SGD too (the min-max optimal baseline) at > 2.
    """
    seeds = range(3)
    ratios = {}
    for tau, target in ((0.0, 1.08), (0.009, 1.08), (0.09, 4.3), (0.09, 10.0)):
        X, y, g, prob = _problem(tau=tau, zeta=_zeta_for(target, tau))
        tz = round(tau * prob.heterogeneity()["zeta_star"], 4)
        res = {a: _best_excess(prob, X, y, g, a, seeds) for a in ALGORITHMS}
        assert all(interior for _, interior in res.values()), (tz, res)
        local, mini, acc = (res[a][0] for a in ALGORITHMS)
        ratios[tz] = (local.mean() / mini.mean(), local.mean() / acc.mean())
        if tz <= 0.01:
            assert np.all(local < mini), (tz, local, mini)
            assert np.all(local < acc), (tz, local, acc)
    for tz, (to_mini, to_acc) in ratios.items():
        if tz <= 0.01:
            assert to_mini < 0.8 and to_acc < 0.8, ratios
        else:
            assert tz > 0.3 and to_mini > 3 and to_acc > 2, ratios


# -- experiment 5: estimator behaviour ------------------------------------------------
def test_one_local_step_equals_minibatch():
    X, y, g, _ = _problem(tau=0.05, zeta=1.0)
    kw = dict(local_steps=1, rounds=30, step_size=0.3, batch_size=5, gradient_noise=0.2,
              fit_intercept=False, random_state=3)
    a = LocalSGDRegressor(algorithm="local", **kw).fit(X, y, groups=g)
    b = LocalSGDRegressor(algorithm="minibatch", **kw).fit(X, y, groups=g)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-12)
    assert np.all(b.consensus_error_ == 0)


def test_random_state_reproduces_and_streams_are_per_machine():
    X, y, g, _ = _problem(tau=0.05, zeta=1.0)
    kw = dict(local_steps=3, rounds=10, batch_size=4, gradient_noise=0.1, random_state=7)
    a = LocalSGDRegressor(**kw).fit(X, y, groups=g)
    b = LocalSGDRegressor(**kw).fit(X, y, groups=g)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = LocalSGDRegressor(**{**kw, "random_state": 8}).fit(X, y, groups=g)
    assert not np.array_equal(a.coef_, c.coef_)
    # machines with identical data but their own streams drift apart: independent draws
    Xd = np.tile(X[:20], (2, 1))
    yd = np.tile(y[:20], 2)
    gd = np.repeat([0, 1], 20)
    d = LocalSGDRegressor(local_steps=5, rounds=3, batch_size=2, random_state=0)
    assert np.all(d.fit(Xd, yd, groups=gd).consensus_error_ > 0)
    # ... and without noise or sampling they never do
    e = LocalSGDRegressor(local_steps=5, rounds=3).fit(Xd, yd, groups=gd)
    assert np.all(e.consensus_error_ < 1e-25)


def test_heterogeneity_on_generator_data():
    X, y, g, prob = _problem(tau=0.07, zeta=1.5)
    h = heterogeneity(X, y, g, fit_intercept=False)
    assert abs(h["tau"] - 0.07) < 1e-10
    assert h["Q"] == 0.0
    exact = prob.heterogeneity()
    for key in ("zeta_star", "tau", "tau_mean", "H", "mu"):
        assert abs(h[key] - exact[key]) < 1e-9, key
    # equal shards: the uniform optimum is the pooled least squares (section 6, step 3)
    ridge = Ridge(alpha=0.0, fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(h["theta_star"], ridge.coef_, atol=1e-10)
    assert h["averaging"] == "uniform"
    np.testing.assert_allclose(h["zeta_star"] ** 2, h["zeta_star_sq"])
    # gradients at the optimum of the mean loss average to zero
    assert np.abs(prob.grad(h["theta_star"])).max() < 1e-10


def test_generator_realises_the_quadratics():
    X, y, g, prob = make_heterogeneous_quadratics(
        n_machines=3, n_features=4, tau=0.05, zeta=2.0, mu=0.1, noise=0.3,
        n_samples_per_machine=30, return_problem=True, random_state=1,
    )
    for m in range(3):
        Xm, ym = X[g == m], y[g == m]
        np.testing.assert_allclose(Xm.T @ Xm / 30, prob.A_[m], atol=1e-12)
        np.testing.assert_allclose(np.linalg.lstsq(Xm, ym, rcond=None)[0], prob.b_[m],
                                   atol=1e-10)
        x = np.arange(4.0)
        ls = 0.5 * np.mean((Xm @ x - ym) ** 2)
        diff = x - prob.b_[m]
        assert abs(ls - (0.5 * diff @ prob.A_[m] @ diff + prob.const_[m])) < 1e-10
    assert np.all(np.linalg.eigvalsh(prob.A_.mean(axis=0)) > 0.1 - 1e-12)
    with pytest.raises(ValueError, match="indefinite"):
        make_heterogeneous_quadratics(tau=0.5, mu=0.01, random_state=0)
    with pytest.raises(ValueError, match="n_samples_per_machine"):
        make_heterogeneous_quadratics(n_features=10, n_samples_per_machine=5)


def test_zeta_star_proportional_to_zeta():
    z1 = _problem(tau=0.05, zeta=1.0)[3].heterogeneity()["zeta_star"]
    z3 = _problem(tau=0.05, zeta=3.0)[3].heterogeneity()["zeta_star"]
    assert abs(z3 / z1 - 3.0) < 1e-9


def test_averaging_objectives_with_unequal_shards():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(90, 3))
    g = np.repeat([0, 1, 2], [10, 30, 50])
    y = X @ np.array([1.0, -2.0, 0.5]) + np.array([3.0, -1.0, 0.0])[g] + 0.1 * rng.normal(size=90)
    pooled = LinearRegression().fit(X, y)
    h_s = heterogeneity(X, y, g, averaging="samples")
    h_u = heterogeneity(X, y, g, averaging="uniform")
    np.testing.assert_allclose(h_s["theta_star"][:3], pooled.coef_, atol=1e-10)
    np.testing.assert_allclose(h_s["theta_star"][3], pooled.intercept_, atol=1e-10)
    assert abs(h_u["theta_star"][3] - pooled.intercept_) > 0.1  # a different objective
    for averaging, h in (("samples", h_s), ("uniform", h_u)):
        est = LocalSGDRegressor(local_steps=1, rounds=3000, averaging=averaging)
        est.fit(X, y, groups=g)  # K = 1 is unbiased: it reaches the objective's optimum
        np.testing.assert_allclose(est.coef_, h["theta_star"][:3], atol=1e-8)
        assert abs(est.intercept_ - h["theta_star"][3]) < 1e-8


def test_ridge_penalty_matches_closed_form():
    X, y, g, _ = _problem(tau=0.0, zeta=1.0)
    alpha = 0.3
    est = LocalSGDRegressor(local_steps=5, rounds=500, alpha=alpha, fit_intercept=False)
    est.fit(X, y, groups=g)
    ridge = Ridge(alpha=alpha * len(X), fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(est.coef_, ridge.coef_, atol=1e-8)
    h = heterogeneity(X, y, g, fit_intercept=False, alpha=alpha)
    np.testing.assert_allclose(h["theta_star"], ridge.coef_, atol=1e-10)


def test_invariances_stated_in_the_robustness_table():
    X, y, g, _ = _problem(tau=0.05, zeta=1.0)
    base = LocalSGDRegressor(local_steps=3, rounds=20, fit_intercept=False).fit(X, y, groups=g)
    for factor in (1e-6, 1e6):  # no intercept and step_size="auto": unit-free
        est = LocalSGDRegressor(local_steps=3, rounds=20, fit_intercept=False)
        est.fit(X * factor, y, groups=g)
        np.testing.assert_allclose(est.predict(X * factor), base.predict(X), rtol=1e-8)
    perm = np.random.RandomState(0).permutation(len(X))
    est = LocalSGDRegressor(local_steps=3, rounds=20, fit_intercept=False)
    est.fit(X[perm], y[perm], groups=g[perm])  # machines given: row order is irrelevant
    np.testing.assert_allclose(est.coef_, base.coef_, rtol=1e-10)


def test_warm_start_continues():
    X, y, g, _ = _problem(tau=0.05, zeta=1.0)
    one = LocalSGDRegressor(local_steps=4, rounds=60, fit_intercept=True).fit(X, y, groups=g)
    two = LocalSGDRegressor(local_steps=4, rounds=30, warm_start=True)
    two.fit(X, y, groups=g).fit(X, y, groups=g)
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(two.loss_curve_, one.loss_curve_[30:], rtol=1e-12)


def test_fitted_attributes():
    X, y, g, _ = _problem(tau=0.05, zeta=1.0)
    est = LocalSGDRegressor(local_steps=3, rounds=7).fit(X, y, groups=g + 10)
    np.testing.assert_array_equal(est.machines_, np.arange(10, 18))
    assert est.n_machines_ == 8 and est.n_iter_ == 7
    assert est.n_gradients_ == 7 * 3 * 8
    assert est.loss_curve_.shape == est.consensus_error_.shape == (7,)
    assert est.coef_.shape == (D,) and isinstance(est.intercept_, float)
    assert est.step_size_ == pytest.approx(1 / np.max(
        [np.linalg.eigvalsh(np.c_[X[g == m], np.ones(20)].T @ np.c_[X[g == m], np.ones(20)]
                            / 20)[-1] for m in range(M)]))
    assert np.all(np.diff(est.loss_curve_) <= 1e-12)  # auto step: local GD descends here


# -- bad input ------------------------------------------------------------------------
def test_bad_input_errors():
    X, y, g, _ = _problem(tau=0.0, zeta=1.0)
    with pytest.raises(ValueError, match="at least 2 machines"):
        LocalSGDRegressor().fit(X, y, groups=np.zeros(len(X)))
    with pytest.raises(ValueError, match="groups has 3 entries"):
        LocalSGDRegressor().fit(X, y, groups=[0, 1, 0])
    with pytest.raises(ValueError, match="no rows"):
        LocalSGDRegressor(n_machines=5).fit(X[:3], y[:3])
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="step_size"):
            LocalSGDRegressor(step_size=bad).fit(X, y)
    with pytest.raises(ValueError, match="n_machines"):
        LocalSGDRegressor(n_machines=1).fit(X, y)
    with pytest.raises(ValueError, match="process group"):
        LocalSGDRegressor(backend="torch").fit(X, y)
    with pytest.raises(ValueError, match="2 classes"):
        LocalSGDClassifier().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="machine label"):
        heterogeneity(X, y, np.zeros(len(X)))


def test_divergence_warns_and_keeps_a_finite_model():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 2)) * 1e3  # unscaled features with a fixed step
    y = X @ np.array([1.0, 2.0])
    est = LocalSGDRegressor(step_size=0.1, rounds=50)
    with pytest.warns(ConvergenceWarning, match="diverged in round"):
        est.fit(X, y)
    assert np.all(np.isfinite(est.coef_)) and np.isnan(est.loss_curve_[-1])
    with warnings.catch_warnings():  # step_size="auto" does not diverge
        warnings.simplefilter("error", ConvergenceWarning)
        LocalSGDRegressor(rounds=50).fit(X, y)


# -- scikit-learn workflows -----------------------------------------------------------
def test_pipeline_with_groups():
    X, y, g, _ = _problem(tau=0.05, zeta=1.0)
    pipe = make_pipeline(StandardScaler(), LocalSGDRegressor(rounds=50))
    pipe.fit(X * 1e4 + 5.0, y, localsgdregressor__groups=g)
    assert pipe[-1].n_machines_ == M
    assert pipe.score(X * 1e4 + 5.0, y) > 0.8


def test_grid_search_routes_groups_and_holds_out_machines():
    X, y, g, _ = _problem(tau=0.05, zeta=1.0)
    seen = []

    class Recording(LocalSGDRegressor):
        def fit(self, X, y, groups=None):
            seen.append(None if groups is None else np.unique(groups))
            return super().fit(X, y, groups=groups)

    with sklearn.config_context(enable_metadata_routing=True):
        est = Recording(rounds=30).set_fit_request(groups=True)
        search = GridSearchCV(est, {"local_steps": [1, 5], "step_size": ["auto", 0.5]},
                              cv=GroupKFold(n_splits=4))
        search.fit(X, y, groups=g)
    assert search.best_estimator_.n_machines_ == M  # the refit saw all 8 machines
    assert all(s is not None for s in seen)
    assert sorted(len(s) for s in seen[:-1]) == [6] * 16  # 2 machines held out per fold
    assert np.isfinite(search.best_score_)


# -- classifier -----------------------------------------------------------------------
def _classification(n_classes, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(240, 3))
    g = np.repeat(np.arange(4), 60)
    X += 0.5 * g[:, None]  # machines differ in their feature distribution
    W = rng.normal(size=(3, n_classes)) * 2
    logits = X @ W + rng.gumbel(size=(240, n_classes))
    return X, np.array(list("abcde"))[np.argmax(logits, axis=1)], g


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_reaches_pooled_logistic_optimum(n_classes):
    X, y, g = _classification(n_classes)
    alpha = 0.05
    h = heterogeneity(X, y, g, alpha=alpha, loss="logistic")
    lr = LogisticRegression(C=1.0 / (alpha * len(X)), tol=1e-12, max_iter=10000).fit(X, y)
    theta = np.asarray(h["theta_star"])
    if n_classes == 2:
        np.testing.assert_allclose(theta[:3], lr.coef_[0], atol=1e-5)
        np.testing.assert_allclose(theta[3], lr.intercept_[0], atol=1e-5)
    else:  # softmax parameters are defined up to a shift per feature: compare centred
        cen = theta - theta.mean(axis=1, keepdims=True)
        np.testing.assert_allclose(cen[:3].T, lr.coef_ - lr.coef_.mean(0), atol=1e-5)
    assert h["Q"] > 0 and h["tau"] > 0 and h["zeta_star"] > 0
    clf = LocalSGDClassifier(local_steps=1, rounds=4000, alpha=alpha).fit(X, y, groups=g)
    np.testing.assert_allclose(clf.predict_proba(X), lr.predict_proba(X), atol=1e-4)
    assert clf.coef_.shape == ((1, 3) if n_classes == 2 else (3, 3))
    assert set(clf.predict(X)) <= set(clf.classes_)
    # local steps under heterogeneity move the fixed point away from the optimum
    biased = LocalSGDClassifier(local_steps=30, rounds=400, alpha=alpha).fit(X, y, groups=g)
    gap_local = np.abs(biased.predict_proba(X) - lr.predict_proba(X)).max()
    assert gap_local > 1e-4


def test_logistic_heterogeneity_warns_without_a_minimiser():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(100, 2))
    y = (X[:, 0] > 0).astype(int)  # separable: the loss has no minimiser at alpha = 0
    g = np.arange(100) % 4
    with pytest.warns(ConvergenceWarning, match="separable"):
        heterogeneity(X, y, g, loss="logistic")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        h = heterogeneity(X, y, g, loss="logistic", alpha=0.01)
    assert np.all(np.isfinite(h["theta_star"])) and h["Q"] > 0


def test_classifier_class_missing_on_a_machine():
    X, y, g = _classification(3)
    y = y.copy()
    y[(g == 0) & (y == "a")] = "b"
    clf = LocalSGDClassifier(rounds=40).fit(X, y, groups=g)
    assert list(clf.classes_) == ["a", "b", "c"]
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)


# -- torch.distributed: a real 2-process gloo group on 127.0.0.1 ----------------------
def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_gloo(tmp_path, datasets, configs, timeout=150):
    """Fit every (dataset index, params) of ``configs`` on a 2-rank gloo group."""
    import torch.multiprocessing as mp
    from _gloo_worker import run_rank

    files = []
    for i, (X, y, g) in enumerate(datasets):
        files.append(str(tmp_path / f"data{i}.npz"))
        np.savez(files[-1], X=X, y=y, groups=g)
    jobs = [(files[i], params) for i, params in configs]
    ctx = mp.start_processes(
        run_rank, args=(2, _free_port(), jobs, str(tmp_path)), nprocs=2, join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + timeout
    try:
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                pytest.fail(f"the 2-process gloo run did not finish within {timeout} s")
    finally:
        for proc in ctx.processes:
            if proc.is_alive():
                proc.terminate()
    return [[np.load(tmp_path / f"rank{r}_job{j}.npz") for r in range(2)]
            for j in range(len(jobs))]


@pytest.mark.slow
def test_torch_backend_matches_simulate(tmp_path):
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is not available")
    X, y, g = make_heterogeneous_quadratics(
        n_machines=2, n_features=4, tau=0.05, zeta=1.0, mu=0.1, n_samples_per_machine=25,
        random_state=0,
    )
    X, y, g = X[5:], y[5:], g[5:]  # unequal shards: 20 and 25 rows
    # the classifier too, with a class present on one machine only
    Xc, yc, gc = _classification(3)
    Xc, yc, gc = Xc[gc < 2], np.searchsorted(np.unique(yc), yc)[gc < 2], gc[gc < 2]
    configs = [
        (0, dict(local_steps=5, rounds=30, averaging="samples")),
        (0, dict(local_steps=3, rounds=10, batch_size=4, gradient_noise=0.1, random_state=3)),
        (0, dict(algorithm="minibatch", local_steps=2, rounds=10, batch_size=3,
                 random_state=1)),
        (1, dict(local_steps=3, rounds=10, classifier=True)),
    ]
    outputs = _run_gloo(tmp_path, [(X, y, g), (Xc, yc, gc)], configs)
    for (data, params), ranks in zip(configs, outputs):
        params = dict(params)
        cls = LocalSGDClassifier if params.pop("classifier", False) else LocalSGDRegressor
        Xd, yd, gd = [(X, y, g), (Xc, yc, gc)][data]
        ref = cls(**params).fit(Xd, yd, groups=gd)
        for out in ranks:
            np.testing.assert_allclose(out["coef"], ref.coef_, rtol=0, atol=1e-10)
            np.testing.assert_allclose(out["intercept"], ref.intercept_, rtol=0, atol=1e-10)
            np.testing.assert_allclose(out["loss"], ref.loss_curve_, rtol=1e-10)
            np.testing.assert_allclose(out["consensus"], ref.consensus_error_, rtol=1e-8,
                                       atol=1e-14)
            np.testing.assert_array_equal(out["machines"], [0, 1])
