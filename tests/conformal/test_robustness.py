"""Extreme settings, calibration-conditional guarantees, scoring and units (issues 12, 13, 15).

Each test here failed (or hung) on the code before these changes.
"""

import math
import signal
import warnings
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta as beta_dist
from sklearn.datasets import load_diabetes, load_digits
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.conformal import (
    RCP1Conformal,
    SmoothedConformal,
    corrected_alpha,
    eot_pgd_l2_attack,
    robust_risk_control,
)
from sklearn_cispa.conformal._base import (
    _conditional_rank,
    _lower_rank,
    min_calibration_size,
)

SIGMA = 0.25


@contextmanager
def time_limit(seconds):
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""

    def handler(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    reg = Ridge().fit(X, X[:, 0])
    return X, y, clf, reg


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(y))
    tr, rest = perm[:718], perm[718:]
    model = RCP1Conformal(
        LogisticRegression(max_iter=1000), sigma=SIGMA, noise_augmentation=20, random_state=0
    ).fit(X[tr], y[tr]).estimator_
    return X, y, tr, rest, model


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    perm = np.random.default_rng(1).permutation(len(y))
    tr, rest = perm[:177], perm[177:]
    model = RCP1Conformal(Ridge(), sigma=SIGMA, noise_augmentation=20, random_state=0)
    return X, y, tr, rest, model.fit(X[tr], y[tr]).estimator_


# --------------------------------------------------------------------------------------
# issue 12 item 3: extreme but legal settings finish fast and are correct
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, unattainable",
    [
        ({"sigma": 0.25, "radius": 2.0}, False),  # radius / sigma = 8: alpha' ~ 8e-21
        ({"sigma": 0.25, "radius": 5.0}, False),  # radius / sigma = 20: alpha' ~ 1e-93
        ({"alpha": 1e-300}, False),
        ({"sigma": 0.25, "radius": 20.0}, True),  # alpha' underflows to 0
        ({"sigma": 1e-300, "radius": 1.0}, True),  # radius / sigma overflows
    ],
)
@pytest.mark.parametrize("kind", ["clf", "reg"])
def test_extreme_levels_finish_and_warn(toy, kwargs, unattainable, kind):
    X, y, clf, reg = toy
    est, yy = (clf, y) if kind == "clf" else (reg, X[:, 0])
    rcp = RCP1Conformal(est, prefit=True, random_state=0, **kwargs).fit(X, yy)
    match = "unattainable" if unattainable else "are too few"
    with time_limit(10), pytest.warns(UserWarning, match=match):
        rcp.calibrate(X[:50], yy[:50])
    assert rcp.alpha_corrected_ >= 0
    if kind == "clf":
        assert rcp.quantile_ == -np.inf and rcp.predict_set(X[:5]).all()
    else:
        assert rcp.quantile_ == np.inf and np.isinf(rcp.predict_interval(X[:5])).all()
    with time_limit(10), pytest.warns(UserWarning):
        rcp.set_params(delta=0.1).calibrate(X[:50], yy[:50])


def test_min_calibration_size_closed_form_extremes():
    with time_limit(5):
        level = corrected_alpha(0.1, 0.25, 2.0)
        n = min_calibration_size(level)
        assert n == pytest.approx(1 / level, rel=1e-9)
        assert min_calibration_size(1e-300) == pytest.approx(1e300, rel=1e-9)
        assert min_calibration_size(0.0) == math.inf
        assert min_calibration_size(0.0, delta=0.1) == math.inf
        # conditional: (1 - level)^n <= delta, i.e. n ~ log(1 / delta) / level
        assert min_calibration_size(1e-20, delta=0.1) == pytest.approx(
            math.log(10) * 1e20, rel=1e-6
        )


@settings(deadline=None, max_examples=200)
@given(log_level=st.floats(-12, -1e-3), delta=st.one_of(st.none(), st.floats(1e-6, 0.9)))
def test_min_calibration_size_is_the_smallest(log_level, delta):
    level = 10.0**log_level
    n = min_calibration_size(level, delta)
    if delta is None:
        assert _lower_rank(level, n) >= 1
        assert n == 0 or _lower_rank(level, n - 1) < 1
    else:
        assert n * math.log1p(-level) <= math.log(delta)
        assert (n - 1) * math.log1p(-level) > math.log(delta)
        if n < 5000:  # the binomial rank agrees with the closed form
            assert _conditional_rank(level, n, delta) >= 1
            assert _conditional_rank(level, n - 1, delta) == 0


@pytest.mark.parametrize("alpha", [1 - 1e-10, 1 - 1e-12, 0.9999])
@pytest.mark.parametrize("n", [1, 3, 10])
def test_alpha_near_one(toy, alpha, n):
    X, y, clf, reg = toy
    rcp = RCP1Conformal(clf, alpha=alpha, prefit=True, random_state=0).fit(X, y)
    rcp.calibrate(X[:n], y[:n])  # was: numpy "kth out of bounds"
    assert np.isfinite(rcp.quantile_)
    rcp = RCP1Conformal(reg, alpha=alpha, prefit=True, random_state=0).fit(X, X[:, 0])
    rcp.calibrate(X[:n], X[:n, 0])
    assert np.isfinite(rcp.quantile_) and rcp.quantile_ >= 0
    for method in ("bincp", "rscp"):
        sm = SmoothedConformal(clf, method=method, alpha=alpha, n_draws=3, prefit=True,
                               random_state=0).fit(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            sm.calibrate(X[:n], y[:n])
        assert sm.predict_set(X[:4]).shape == (4, 2)


def test_risk_control_underflow_and_large_ratio():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    lambdas = np.linspace(0, 1, 11)
    losses = (s[:, None] < 1 - lambdas).astype(float)
    for radius in (2.0, 20.0):  # alpha' ~ 8e-21 and alpha' = 0 (was: ZeroDivision/Overflow)
        for delta in (None, 0.1):
            with time_limit(5), pytest.warns(UserWarning, match="no lambda"):
                lam = robust_risk_control(losses, lambdas, 0.1, SIGMA, radius, delta=delta)
            assert lam == 1.0


# --------------------------------------------------------------------------------------
# issue 12 item 6: arguments of the public functions are validated by name
# --------------------------------------------------------------------------------------
def test_attack_rejects_nan_y_and_wrong_width(digits, diabetes):
    X, y, tr, rest, model = digits
    rows = rest[:20]
    with pytest.raises(ValueError, match="y contains NaN"):
        eot_pgd_l2_attack(diabetes[4], diabetes[0][:5], np.array([1.0, np.nan, 0, 0, 0]),
                          radius=0.1, sigma=0.1)
    with pytest.raises(ValueError, match="y contains NaN"):
        eot_pgd_l2_attack(model, X[rows], np.full(20, np.nan), radius=0.1, sigma=0.1)
    with pytest.raises(ValueError, match="X has 10 features, but LogisticRegression expects 64"):
        eot_pgd_l2_attack(model, X[rows, :10], y[rows], radius=0.1, sigma=0.1)
    with pytest.raises(ValueError, match="X has 3 features, but Ridge expects 10"):
        eot_pgd_l2_attack(diabetes[4], X[rows, :3], y[rows], radius=0.1, sigma=0.1)
    with pytest.raises(ValueError, match="'n_steps' parameter"):
        eot_pgd_l2_attack(model, X[rows], y[rows], radius=0.1, sigma=0.1, n_steps=0)
    with pytest.raises(ValueError, match="'radius' parameter"):
        eot_pgd_l2_attack(model, X[rows], y[rows], radius=np.inf, sigma=0.1)
    with pytest.raises(ValueError, match="'clip' parameter"):
        eot_pgd_l2_attack(model, X[rows], y[rows], radius=0.1, sigma=0.1, clip="box")


def test_attack_torch_wrong_width_and_labels(digits):
    torch = pytest.importorskip("torch")
    X, y, tr, rest, model = digits
    net = torch.nn.Linear(64, 10).double()
    with pytest.raises(ValueError, match="64 features|features"):
        eot_pgd_l2_attack(net, X[rest[:5], :20], y[rest[:5]], radius=0.1, sigma=0.1)
    with pytest.raises(ValueError, match="class indices outside 0..9"):
        eot_pgd_l2_attack(net, X[rest[:5]], np.array([0, 1, 2, 3, 12]), radius=0.1, sigma=0.1)


@pytest.mark.parametrize(
    "func, kwargs, name",
    [
        (corrected_alpha, {"alpha": np.nan, "sigma": 0.25, "radius": 0.1}, "alpha"),
        (corrected_alpha, {"alpha": 0.1, "sigma": np.inf, "radius": 0.1}, "sigma"),
        (corrected_alpha, {"alpha": 0.1, "sigma": 0.25, "radius": 0.1, "kind": "x"}, "kind"),
        (robust_risk_control, {"losses": np.zeros((3, 2)), "lambdas": [0, 1], "alpha": 0.1,
                               "sigma": 0.2, "radius": 0.1, "delta": 1.5}, "delta"),
        (robust_risk_control, {"losses": np.zeros((3, 2)), "lambdas": [0, 1], "alpha": 0.1,
                               "sigma": -0.2, "radius": 0.1}, "sigma"),
    ],
)
def test_public_functions_name_the_bad_parameter(func, kwargs, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        func(**kwargs)


def test_noise_overflow_is_an_error(toy):
    X, y, clf, reg = toy
    with pytest.raises(ValueError, match="not finite"):
        RCP1Conformal(LogisticRegression(), sigma=1e308, noise_augmentation=1).fit(X * 1e300, y)
    rcp = RCP1Conformal(clf, sigma=1e300, prefit=True, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="not finite"):
        rcp.calibrate(X.astype(np.float32), y)


# --------------------------------------------------------------------------------------
# issue 12 items 7 and the scale harness: units and offsets
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale, offset", [(1e-6, 0.0), (1e6, 0.0), (1.0, 1000.0),
                                           (1e3, -1e6)])
def test_sets_equivariant_under_rescaling_with_sigma(digits, scale, offset):
    X, y, tr, rest, _ = digits
    cal, te = rest[:400], rest[400:]

    def run(Xs, s):
        rcp = RCP1Conformal(make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
                            sigma=SIGMA * s, radius=0.12 * s, noise_augmentation=3,
                            random_state=0)
        rcp.fit(Xs[tr], y[tr]).calibrate(Xs[cal], y[cal])
        return rcp, rcp.predict_set(Xs[te])

    ref, sets_ref = run(X, 1.0)
    rcp, sets = run(X * scale + offset, scale)
    assert rcp.alpha_corrected_ == pytest.approx(ref.alpha_corrected_, rel=1e-12)
    assert np.mean(sets == sets_ref) >= 0.995
    assert rcp.quantile_ == pytest.approx(ref.quantile_, rel=1e-3)


@pytest.mark.parametrize("scale, offset", [(1e-6, 0.0), (1e6, 1e3)])
def test_intervals_equivariant_under_rescaling_with_sigma(diabetes, scale, offset):
    X, y, tr, rest, _ = diabetes
    cal, te = rest[:150], rest[150:]

    def run(Xs, s):
        rcp = RCP1Conformal(make_pipeline(StandardScaler(), Ridge()), sigma=SIGMA * s,
                            radius=0.12 * s, noise_augmentation=3, random_state=0)
        return rcp.fit(Xs[tr], y[tr]).calibrate(Xs[cal], y[cal]).predict_interval(Xs[te])

    np.testing.assert_allclose(run(X * scale + offset, scale), run(X, 1.0), rtol=1e-6)


# --------------------------------------------------------------------------------------
# issue 13: a real score method; default scoring in model selection
# --------------------------------------------------------------------------------------
def test_score_is_the_wrapped_estimators_score(digits, diabetes):
    X, y, tr, rest, _ = digits
    rcp = RCP1Conformal(LogisticRegression(max_iter=500), noise_augmentation=2, random_state=0)
    rcp.fit(X[tr], y[tr])
    assert rcp.score(X[rest], y[rest]) == rcp.estimator_.score(X[rest], y[rest])
    assert 0.85 < rcp.score(X[rest], y[rest]) <= 1.0
    Xd, yd, trd, restd, _ = diabetes
    sm = SmoothedConformal(Ridge(), n_draws=5, noise_augmentation=2, random_state=0)
    sm.fit(Xd[trd], yd[trd])
    assert sm.score(Xd[restd], yd[restd]) == sm.estimator_.score(Xd[restd], yd[restd])
    w = np.linspace(0.5, 1.5, len(restd))
    assert sm.score(Xd[restd], yd[restd], sample_weight=w) == pytest.approx(
        sm.estimator_.score(Xd[restd], yd[restd], sample_weight=w)
    )


@pytest.mark.parametrize("cls", [RCP1Conformal, SmoothedConformal])
def test_default_scoring_in_model_selection(digits, diabetes, cls):
    X, y, tr, rest, _ = digits
    extra = {"n_draws": 4} if cls is SmoothedConformal else {}
    est = cls(LogisticRegression(max_iter=300), noise_augmentation=2, random_state=0, **extra)
    scores = cross_val_score(est, X[tr], y[tr], cv=3)
    assert np.all(np.isfinite(scores)) and scores.mean() > 0.85
    # a tiny C is far worse: default scoring must see it (it used to pick the first)
    grid = GridSearchCV(est, {"estimator__C": [1e-5, 1.0]}, cv=3).fit(X[tr], y[tr])
    assert grid.best_params_ == {"estimator__C": 1.0}
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))
    Xd, yd, trd, _, _ = diabetes
    reg = cls(Ridge(), noise_augmentation=2, random_state=0, **extra)
    r2 = cross_val_score(reg, Xd[trd], yd[trd], cv=3)
    assert np.all(np.isfinite(r2)) and r2.mean() > 0.3
    grid = GridSearchCV(reg, {"estimator__alpha": [1e5, 1.0]}, cv=3).fit(Xd[trd], yd[trd])
    assert grid.best_params_ == {"estimator__alpha": 1.0}


# --------------------------------------------------------------------------------------
# issue 15: calibration-conditional guarantee (delta)
# --------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=100)
@given(n=st.integers(1, 3000), level=st.floats(1e-4, 0.999), delta=st.floats(1e-4, 0.999))
def test_conditional_rank_against_beta_oracle(n, level, delta):
    """k is the largest rank whose order statistic has P(U_(k) <= level) >= 1 - delta."""
    k = _conditional_rank(level, n, delta)
    assert 0 <= k <= n
    if k >= 1:
        assert beta_dist.cdf(level, k, n + 1 - k) >= 1 - delta - 1e-9
    if k < n:
        assert beta_dist.cdf(level, k + 1, n - k) < 1 - delta + 1e-9


@pytest.mark.parametrize("n, level, delta", [(25, 0.1, 0.1), (100, 0.039, 0.1),
                                             (400, 0.1, 0.05)])
def test_conditional_rank_simulated(n, level, delta):
    """Uniform scores: the conditional miscoverage of the k-th smallest is U_(k)."""
    rng = np.random.default_rng(n)
    U = np.sort(rng.uniform(size=(20000, n)), axis=1)
    k = _conditional_rank(level, n, delta)
    miss = U[:, k - 1] > level
    assert miss.mean() <= delta + 3 * math.sqrt(delta * (1 - delta) / 20000)
    k_marg = _lower_rank(level, n)
    assert k_marg > k
    assert (U[:, k_marg - 1] > level).mean() > 1.5 * delta  # the marginal rank is not enough


def _draw_coverages(rcp, X, y, pool, X_eval, n_cal, n_draws, regression=False, reps=4):
    """Coverage on the whole pool for calibration sets drawn from it with replacement.

    Calibration rows are i.i.d. from the pool's empirical distribution and the test
    point is a uniform pool row, so the guarantee holds exactly for the pool; each
    coverage averages ``reps`` prediction calls to shrink the noise's Monte-Carlo error.
    """
    rng = np.random.default_rng(123)
    out = []
    for _ in range(n_draws):
        cal = rng.choice(pool, size=n_cal, replace=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            rcp.calibrate(X[cal], y[cal])
        covs = []
        for _ in range(reps):
            if regression:
                iv = rcp.predict_interval(X_eval)
                covs.append(np.mean((iv[:, 0] <= y[pool]) & (y[pool] <= iv[:, 1])))
            else:
                covs.append(rcp.predict_set(X_eval)[np.arange(len(pool)), y[pool]].mean())
        out.append(np.mean(covs))
    return np.array(out)


def test_delta_classification_clean_and_attacked(digits):
    X, y, tr, pool, model = digits
    n_draws = 300
    se = 3 * math.sqrt(0.1 * 0.9 / n_draws)
    # clean, radius 0, n = 25: the marginal rank fails in about a quarter of the draws
    rcp = RCP1Conformal(model, prefit=True, random_state=0).fit(X[tr], y[tr])
    marg = _draw_coverages(rcp, X, y, pool, X[pool], 25, n_draws)
    cond = _draw_coverages(rcp.set_params(delta=0.1), X, y, pool, X[pool], 25, n_draws)
    assert np.mean(marg < 0.9) > 0.18
    assert np.mean(cond < 0.9) <= 0.1 + se
    # attacked, radius 0.12 (alpha' = 0.039), n = 100
    X_adv = eot_pgd_l2_attack(model, X[pool], y[pool], radius=0.12, sigma=SIGMA,
                              random_state=1)
    rcp = RCP1Conformal(model, radius=0.12, delta=0.1, prefit=True, random_state=1)
    rcp.fit(X[tr], y[tr])
    clean = _draw_coverages(rcp, X, y, pool, X[pool], 100, 150)
    att = _draw_coverages(rcp, X, y, pool, X_adv, 100, 150)
    assert np.mean(clean < 1 - rcp.alpha_corrected_) <= 0.1 + 3 * math.sqrt(0.09 / 150)
    assert np.mean(att < 0.9) <= 0.1 + 3 * math.sqrt(0.09 / 150)


def test_delta_regression(diabetes):
    X, y, tr, pool, model = diabetes
    n_draws = 300
    se = 3 * math.sqrt(0.1 * 0.9 / n_draws)
    rcp = RCP1Conformal(model, prefit=True, random_state=0).fit(X[tr], y[tr])
    marg = _draw_coverages(rcp, X, y, pool, X[pool], 25, n_draws, regression=True)
    cond = _draw_coverages(rcp.set_params(delta=0.1), X, y, pool, X[pool], 25, n_draws,
                           regression=True)
    assert np.mean(marg < 0.9) > 0.18
    assert np.mean(cond < 0.9) <= 0.1 + se
    X_adv = eot_pgd_l2_attack(model, X[pool], y[pool], radius=0.12, sigma=SIGMA)
    rcp = RCP1Conformal(model, radius=0.12, delta=0.1, prefit=True, random_state=1)
    att = _draw_coverages(rcp.fit(X[tr], y[tr]), X, y, pool, X_adv, 100, 150, regression=True)
    assert np.mean(att < 0.9) <= 0.1 + 3 * math.sqrt(0.09 / 150)


@pytest.mark.parametrize("radius, delta", [(0.0, 0.1), (0.12, 0.1), (0.12, 0.01)])
def test_risk_control_delta_reproduces_rcp1(digits, radius, delta):
    X, y, tr, rest, model = digits
    cal = rest[:400]
    rcp = RCP1Conformal(model, radius=radius, delta=delta, prefit=True, random_state=7)
    rcp.fit(X[tr], y[tr]).calibrate(X[cal], y[cal])
    root = np.random.SeedSequence(7)
    _, seedseq = root.spawn(2)
    cal_ss, _ = seedseq.spawn(2)
    rng = np.random.default_rng(cal_ss)
    Z = X[cal] + SIGMA * rng.standard_normal(X[cal].shape)
    s = model.predict_proba(Z)[np.arange(400), y[cal]]
    lambdas = np.unique(np.concatenate([1 - s, [1.0]]))
    losses = ((1 - s)[:, None] > lambdas[None, :]).astype(float)
    lam = robust_risk_control(losses, lambdas, 0.1, SIGMA, radius, delta=delta)
    assert 1 - lam == pytest.approx(rcp.quantile_, abs=1e-12)
    lam_marginal = robust_risk_control(losses, lambdas, 0.1, SIGMA, radius)
    assert lam > lam_marginal  # the conditional guarantee costs larger sets


def test_risk_control_delta_bounded_losses_simulated():
    """Non-binary losses: the true risk at lambda_hat exceeds alpha' in <= delta of draws."""
    rng = np.random.default_rng(0)
    lambdas = np.linspace(0, 1.5, 76)  # the loss is 0 from lambda = 1.25 on
    grid_v = np.linspace(0, 1, 20001)  # V ~ U(0, 1): loss clip(2 (V - lambda) + 0.5, 0, 1)

    def loss(v):
        return np.clip(2 * (v[:, None] - lambdas[None, :]) + 0.5, 0, 1)

    true_risk = loss(grid_v).mean(axis=0)
    level = corrected_alpha(0.1, SIGMA, 0.12, kind="risk")
    n, draws, delta = 200, 400, 0.1
    miss_cond, miss_marg = [], []
    for _ in range(draws):
        L = loss(rng.uniform(size=n))
        j = np.searchsorted(lambdas, robust_risk_control(L, lambdas, 0.1, SIGMA, 0.12,
                                                         delta=delta))
        miss_cond.append(true_risk[j] > level)
        j = np.searchsorted(lambdas, robust_risk_control(L, lambdas, 0.1, SIGMA, 0.12))
        miss_marg.append(true_risk[j] > level)
    assert np.mean(miss_cond) <= delta
    assert np.mean(miss_marg) > np.mean(miss_cond)


def test_smoothed_defaults_give_informative_sets(digits):
    """issue 13: the old defaults (p=0.6, confidence=0.999) gave full sets at r = 0.25."""
    X, y, tr, rest, model = digits
    cal, te = rest[:400], rest[400:]
    sizes = {}
    for name, kw in (("default", {}), ("old", {"p": 0.6, "confidence": 0.999})):
        sm = SmoothedConformal(model, radius=0.25, prefit=True, random_state=0, **kw)
        sets = sm.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_set(X[te])
        sizes[name] = sets.sum(1).mean()
        if name == "default":
            assert sets[np.arange(len(te)), y[te]].mean() >= 0.9
    assert sizes["default"] < 3.5, sizes
    assert sizes["old"] > 9.5, sizes


class _DivergedClassifier(LogisticRegression):
    """A fitted model whose probabilities are NaN, as after a diverged training run."""

    def predict_proba(self, X):
        return np.full((len(X), len(self.classes_)), np.nan)


class _DivergedRegressor(Ridge):
    def predict(self, X):
        return np.full(len(X), np.inf)


def test_diverged_model_outputs_raise(toy):
    X, y, _, _ = toy
    clf = _DivergedClassifier().fit(X, y)
    rcp = RCP1Conformal(clf, prefit=True, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="NaN or infinite"):
        rcp.calibrate(X[:50], y[:50])
    reg = _DivergedRegressor().fit(X, X[:, 0])
    for est in (RCP1Conformal(reg, prefit=True), SmoothedConformal(reg, n_draws=3, prefit=True)):
        with pytest.raises(ValueError, match="NaN or infinite"):
            est.fit(X, X[:, 0]).calibrate(X[:50], X[:50, 0])


def test_heavy_tailed_targets_keep_exact_coverage():
    """Cauchy noise on y and a feature in the 1e6 range: coverage stays 1 - k / (n + 1)."""
    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack([rng.normal(size=n), 1e6 + 1e5 * rng.normal(size=n)])
    y = 2 * X[:, 0] + 1e-5 * (X[:, 1] - 1e6) + rng.standard_cauchy(size=n)
    rcp = RCP1Conformal(make_pipeline(StandardScaler(), Ridge()), sigma=0.1, radius=0.05,
                        noise_augmentation=2, random_state=0).fit(X[:1000], y[:1000])
    covs = []
    for seed in range(40):
        p = np.random.default_rng(seed).permutation(np.arange(1000, n))
        cal, te = p[:200], p[200:]
        iv = rcp.calibrate(X[cal], y[cal]).predict_interval(X[te])
        assert np.all(np.isfinite(iv))
        covs.append(np.mean((iv[:, 0] <= y[te]) & (y[te] <= iv[:, 1])))
    k = math.floor(rcp.alpha_corrected_ * 201)
    # 40 splits: the standard error of the mean coverage is about 0.004
    assert abs(np.mean(covs) - (1 - k / 201)) < 0.015


@pytest.mark.parametrize("method", ["bincp", "rscp"])
def test_smoothed_reproducible_and_pickles(digits, method):
    import pickle

    X, y, tr, rest, model = digits
    cal, te = rest[:300], rest[300:400]

    def run():
        sm = SmoothedConformal(model, method=method, n_draws=20, radius=0.12, prefit=True,
                               random_state=3)
        sm.fit(X[tr], y[tr]).calibrate(X[cal], y[cal])
        return sm, sm.predict_set(X[te])

    (a, sa), (b, sb) = run(), run()
    np.testing.assert_array_equal(sa, sb)
    assert a.quantile_ == b.quantile_
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.predict_set(X[te]), a.predict_set(X[te]))
