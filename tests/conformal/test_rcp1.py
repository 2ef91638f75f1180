"""Tests of RCP1Conformal, SmoothedConformal, robust_risk_control and eot_pgd_l2_attack."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_diabetes, load_digits, load_iris, make_multilabel_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.multioutput import MultiOutputClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklearn_cispa.conformal import (
    RCP1Conformal,
    SmoothedConformal,
    corrected_alpha,
    eot_pgd_l2_attack,
    robust_risk_control,
)
from sklearn_cispa.conformal._attacks import _eot_pgd, _linear_classifier_grad, _linear_parts
from sklearn_cispa.conformal._base import _all_conformity, _lower_rank, min_calibration_size

ALPHA, SIGMA = 0.1, 0.25


# --------------------------------------------------------------------------------------
# helpers and fixtures
# --------------------------------------------------------------------------------------
class CountingClassifier(ClassifierMixin, BaseEstimator):
    """Wraps a fitted classifier and records every batch it is asked to score."""

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y):
        self.estimator_ = clone(self.estimator).fit(X, y)
        self.classes_ = self.estimator_.classes_
        self.n_features_in_ = X.shape[1]
        self.calls_ = []
        return self

    def predict_proba(self, X):
        self.calls_.append(("predict_proba", np.array(X, copy=True)))
        return self.estimator_.predict_proba(X)

    def predict(self, X):
        self.calls_.append(("predict", np.array(X, copy=True)))
        return self.estimator_.predict(X)


def _coverage_sets(sets, classes, y):
    idx = np.searchsorted(classes, y)
    return float(sets[np.arange(len(y)), idx].mean())


def _coverage_intervals(iv, y):
    return float(((iv[:, 0] <= y) & (y <= iv[:, 1])).mean())


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(y))
    tr, rest = perm[:718], perm[718:]
    return X, y, tr, rest


@pytest.fixture(scope="module")
def digits_model(digits):
    """A LogisticRegression trained on 20 noisy copies (the spec's setup)."""
    X, y, tr, _ = digits
    rcp = RCP1Conformal(
        LogisticRegression(max_iter=1000), sigma=SIGMA, noise_augmentation=20, random_state=0
    ).fit(X[tr], y[tr])
    return rcp.estimator_


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    perm = np.random.default_rng(1).permutation(len(y))
    tr, rest = perm[:177], perm[177:]
    model = RCP1Conformal(Ridge(), sigma=SIGMA, noise_augmentation=20, random_state=0)
    model = model.fit(X[tr], y[tr]).estimator_
    return X, y, tr, rest, model


def _split(rest, seed, n_cal):
    p = np.random.default_rng(seed).permutation(rest)
    return p[:n_cal], p[n_cal:]


# --------------------------------------------------------------------------------------
# 1. corrected alpha
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "sigma, radius, expected",
    [
        (0.25, 0.12, 0.960927),
        (0.25, 0.25, 0.988742),
        (0.25, 0.5, 0.999484),
        (0.5, 0.25, 0.962589),
        (0.12, 0.12, 0.988742),
    ],
)
def test_corrected_alpha_table(sigma, radius, expected):
    assert 1 - corrected_alpha(0.1, sigma, radius) == pytest.approx(expected, abs=1e-6)


def test_corrected_alpha_properties():
    assert corrected_alpha(0.1, 0.25, 0.0) == 0.1
    values = [corrected_alpha(0.1, 0.25, r) for r in np.linspace(0, 1, 21)]
    assert np.all(np.diff(values) < 0)
    assert corrected_alpha(0.1, 0.25, 0.25) == pytest.approx(corrected_alpha(0.1, 0.12, 0.12))
    for r in (0.0, 0.12, 0.3):
        assert corrected_alpha(0.1, 0.25, r, kind="risk") == pytest.approx(
            corrected_alpha(0.1, 0.25, r)
        )
    # B = 2: alpha' = B * Phi(Phi^-1(alpha / B) - r / sigma)
    expected = 2 * norm.cdf(norm.ppf(0.3 / 2) - 0.5)
    assert corrected_alpha(0.3, 0.5, 0.25, kind="risk", bound=2.0) == pytest.approx(expected)
    # tiny alpha' keeps precision (no 1 - (1 - x) cancellation)
    assert 0 < corrected_alpha(0.1, 0.1, 1.0) < 1e-12


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"alpha": 0.0}, ValueError),
        ({"alpha": 1.0}, ValueError),
        ({"sigma": 0.0}, ValueError),
        ({"radius": -0.1}, ValueError),
        ({"kind": "other"}, ValueError),
        ({"alpha": "0.1"}, TypeError),
    ],
)
def test_corrected_alpha_bad_input(kwargs, err):
    args = {"alpha": 0.1, "sigma": 0.25, "radius": 0.1, **kwargs}
    with pytest.raises(err):
        corrected_alpha(**args)


@settings(deadline=None, max_examples=50)
@given(level=st.floats(1e-4, 0.999), n=st.integers(0, 20000))
def test_min_calibration_size_matches_rank(level, n):
    n_min = min_calibration_size(level)
    assert (_lower_rank(level, n) >= 1) == (n >= n_min)


# --------------------------------------------------------------------------------------
# 2. triviality rule
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=4000) > 0).astype(int)
    clf = LogisticRegression().fit(X[:200], y[:200])
    reg = Ridge().fit(X[:200], X[:200, 0])
    return X, y, clf, reg


@pytest.mark.parametrize("radius, n_min", [(0.12, 25), (0.25, 88), (0.5, 1937)])
def test_triviality_rule(toy, radius, n_min):
    X, y, clf, reg = toy
    assert min_calibration_size(corrected_alpha(ALPHA, SIGMA, radius)) == n_min
    for est, yy in ((clf, y), (reg, X[:, 0])):
        rcp = RCP1Conformal(est, radius=radius, prefit=True, random_state=0).fit(X, yy)
        with pytest.warns(UserWarning, match=f"at least {n_min} are needed"):
            rcp.calibrate(X[: n_min - 1], yy[: n_min - 1])
        assert np.isinf(rcp.quantile_)
        if est is clf:
            assert rcp.quantile_ < 0 and rcp.predict_set(X[:5]).all()
        else:
            assert rcp.quantile_ > 0 and np.isinf(rcp.predict_interval(X[:5])).all()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rcp.calibrate(X[:n_min], yy[:n_min])
        assert np.isfinite(rcp.quantile_)


# --------------------------------------------------------------------------------------
# 3. exact clean validity over many seeds
# --------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("radius, n_seeds", [(0.0, 600), (0.12, 1000), (0.25, 400)])
def test_exact_clean_validity_digits(digits, digits_model, radius, n_seeds):
    X, y, tr, rest = digits
    rcp = RCP1Conformal(digits_model, radius=radius, prefit=True, random_state=int(100 * radius))
    rcp.fit(X[tr], y[tr])
    covs = []
    for seed in range(n_seeds):
        cal, te = _split(rest, seed, 400)
        rcp.calibrate(X[cal], y[cal])
        covs.append(_coverage_sets(rcp.predict_set(X[te]), rcp.classes_, y[te]))
    level = corrected_alpha(ALPHA, SIGMA, radius)
    expected = 1 - np.floor(level * 401) / 401
    assert expected == pytest.approx({0.0: 0.9002, 0.12: 0.9626, 0.25: 0.9900}[radius], abs=1e-4)
    assert abs(np.mean(covs) - expected) <= 0.003


@pytest.mark.slow
@pytest.mark.parametrize("radius, expected", [(0.0, 0.9007), (0.12, 0.9669)])
def test_exact_clean_validity_diabetes(diabetes, radius, expected):
    X, y, tr, rest, model = diabetes
    rcp = RCP1Conformal(model, radius=radius, prefit=True, random_state=3).fit(X[tr], y[tr])
    covs = []
    for seed in range(1000):
        cal, te = _split(rest, seed, 150)
        rcp.calibrate(X[cal], y[cal])
        covs.append(_coverage_intervals(rcp.predict_interval(X[te]), y[te]))
    level = corrected_alpha(ALPHA, SIGMA, radius)
    assert 1 - np.floor(level * 151) / 151 == pytest.approx(expected, abs=1e-4)
    assert abs(np.mean(covs) - expected) <= 0.004


# --------------------------------------------------------------------------------------
# 4. one forward pass per point
# --------------------------------------------------------------------------------------
def test_forward_passes_counted(digits):
    X, y, tr, rest = digits
    counting = CountingClassifier(LogisticRegression(max_iter=300)).fit(X[tr], y[tr])
    cal, te = rest[:300], rest[300:420]
    rcp = RCP1Conformal(counting, radius=0.12, prefit=True, random_state=0).fit(X[tr], y[tr])
    assert counting.calls_ == []  # prefit: fit does not call the model
    rcp.calibrate(X[cal], y[cal])
    assert [(m, z.shape[0]) for m, z in counting.calls_] == [("predict_proba", 300)]
    counting.calls_.clear()
    rcp.predict_set(X[te])
    assert [(m, z.shape[0]) for m, z in counting.calls_] == [("predict_proba", 120)]
    counting.calls_.clear()
    rcp.predict(X[te])
    assert [(m, z.shape[0]) for m, z in counting.calls_] == [("predict", 120)]
    np.testing.assert_array_equal(counting.calls_[0][1], X[te])  # clean input

    counting.calls_.clear()
    sm = SmoothedConformal(counting, n_draws=7, radius=0.12, prefit=True, random_state=0)
    sm.fit(X[tr], y[tr]).calibrate(X[cal], y[cal])
    assert sum(z.shape[0] for _, z in counting.calls_) == 7 * 300
    counting.calls_.clear()
    sm.predict_set(X[te])
    assert sum(z.shape[0] for _, z in counting.calls_) == 7 * 120
    assert {m for m, _ in counting.calls_} == {"predict_proba"}


def test_forward_passes_regression(diabetes):
    X, y, tr, rest, model = diabetes
    calls = []

    class CountingRegressor(Ridge):
        def predict(self, X):
            calls.append(len(X))
            return super().predict(X)

    reg = CountingRegressor().fit(X[tr], y[tr])
    rcp = RCP1Conformal(reg, prefit=True, random_state=0).fit(X[tr], y[tr])
    rcp.calibrate(X[rest[:150]], y[rest[:150]])
    rcp.predict_interval(X[rest[150:]])
    assert calls == [150, len(rest) - 150]


def test_calibration_and_prediction_noise_differ(digits):
    X, y, tr, rest = digits
    counting = CountingClassifier(LogisticRegression(max_iter=300)).fit(X[tr], y[tr])
    rcp = RCP1Conformal(counting, prefit=True, random_state=0).fit(X[tr], y[tr])
    rows = rest[:200]
    rcp.calibrate(X[rows], y[rows])
    rcp.predict_set(X[rows])
    rcp.predict_set(X[rows])
    noises = [z - X[rows] for _, z in counting.calls_]
    assert len(noises) == 3
    for i in range(3):
        assert np.std(noises[i]) == pytest.approx(SIGMA, rel=0.05)
        for j in range(i):
            assert not np.allclose(noises[i], noises[j])
    # training noise differs from calibration noise too
    seen = []

    class Recording(LogisticRegression):
        def fit(self, X, y):
            seen.append(np.array(X, copy=True))
            return super().fit(X, y)

        def predict_proba(self, X):
            seen.append(np.array(X, copy=True))
            return super().predict_proba(X)

    rcp = RCP1Conformal(Recording(max_iter=200), noise_augmentation=1, random_state=0)
    rcp.fit(X[rows], y[rows]).calibrate(X[rows], y[rows])
    assert not np.allclose(seen[0], seen[1])


# --------------------------------------------------------------------------------------
# 5./6. robustness under attack
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits_attacked(digits, digits_model):
    """Per radius and split: RCP1 and vanilla (clean split CP) attacked coverage / size."""
    X, y, tr, rest = digits
    out = {}
    for radius in (0.12, 0.25):
        rows = []
        for seed in range(5):
            cal, te = _split(rest, 100 + seed, 400)
            X_adv = eot_pgd_l2_attack(
                digits_model, X[te], y[te], radius=radius, sigma=SIGMA, random_state=seed
            )
            rcp = RCP1Conformal(digits_model, radius=radius, prefit=True, random_state=seed)
            sets = rcp.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_set(X_adv)
            # vanilla split CP on clean inputs (tps), attacked by plain PGD (sigma=0)
            p_cal = digits_model.predict_proba(X[cal])[np.arange(400), y[cal]]
            q = np.sort(p_cal)[int(np.floor(ALPHA * 401)) - 1]
            X_adv0 = eot_pgd_l2_attack(
                digits_model, X[te], y[te], radius=radius, sigma=0.0, random_state=seed
            )
            vsets = digits_model.predict_proba(X_adv0) >= q
            rows.append(
                (
                    _coverage_sets(sets, rcp.classes_, y[te]),
                    sets.sum(1).mean(),
                    _coverage_sets(vsets, rcp.classes_, y[te]),
                )
            )
        out[radius] = np.array(rows)
    return out


def test_rcp1_attacked_coverage_digits(digits_attacked):
    for radius in (0.12, 0.25):
        cov, size, vanilla = digits_attacked[radius].mean(axis=0)
        assert cov >= 1 - ALPHA - 0.01, (radius, cov)
        assert vanilla < {0.12: 0.87, 0.25: 0.76}[radius], (radius, vanilla)
    assert digits_attacked[0.12][:, 1].mean() == pytest.approx(1.5, abs=0.2)


def test_rcp1_attacked_coverage_diabetes(diabetes):
    X, y, tr, rest, model = diabetes
    for radius in (0.12, 0.25):
        covs, widths = [], []
        for seed in range(30):
            cal, te = _split(rest, seed, 150)
            X_adv = eot_pgd_l2_attack(model, X[te], y[te], radius=radius, sigma=SIGMA)
            rcp = RCP1Conformal(model, radius=radius, prefit=True, random_state=seed)
            iv = rcp.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_interval(X_adv)
            covs.append(_coverage_intervals(iv, y[te]))
            widths.append(np.mean(iv[:, 1] - iv[:, 0]))
        assert np.mean(covs) >= 0.90, (radius, np.mean(covs))
        assert np.all(np.isfinite(widths))


# --------------------------------------------------------------------------------------
# 7. smoothed baselines
# --------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("method", ["bincp", "rscp"])
def test_smoothed_attacked_coverage_digits(digits, digits_model, method):
    X, y, tr, rest = digits
    for radius in (0.12, 0.25):
        covs = []
        for seed in range(3):
            cal, te = _split(rest, 200 + seed, 400)
            X_adv = eot_pgd_l2_attack(
                digits_model, X[te], y[te], radius=radius, sigma=SIGMA, random_state=seed
            )
            sm = SmoothedConformal(
                digits_model, method=method, n_draws=100, radius=radius, prefit=True,
                random_state=seed,
            )
            sets = sm.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_set(X_adv)
            covs.append(_coverage_sets(sets, sm.classes_, y[te]))
        assert np.mean(covs) >= 0.89, (method, radius, np.mean(covs))


@pytest.mark.parametrize("method", ["bincp", "rscp"])
@pytest.mark.parametrize("score", ["tps", "aps"])
def test_smoothed_correction_contains_uncorrected(digits, digits_model, method, score):
    X, y, tr, rest = digits
    cal, te = rest[:300], rest[300:500]
    kw = dict(method=method, n_draws=20, radius=0.12, conformity_score=score, prefit=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = SmoothedConformal(digits_model, random_state=5, **kw).fit(X[tr], y[tr])
        b = SmoothedConformal(digits_model, random_state=5, confidence=None, **kw)
        b.fit(X[tr], y[tr])
        sa = a.calibrate(X[cal], y[cal]).predict_set(X[te])
        sb = b.calibrate(X[cal], y[cal]).predict_set(X[te])
    assert np.all(sa >= sb)
    assert sa.sum() > sb.sum()


def test_bincp_values(digits, digits_model):
    """p_low of the spec's example: N=100, p=0.6, n=400, K=10, eta=0.001 -> 0.370."""
    X, y, tr, rest = digits
    sm = SmoothedConformal(digits_model, n_draws=100, p=0.6, confidence=0.999, prefit=True,
                           random_state=0)
    sm.fit(X[tr], y[tr]).calibrate(X[rest[:400]], y[rest[:400]])
    assert sm.p_low_ == pytest.approx(0.370, abs=5e-4)
    assert sm.certified_threshold_ == pytest.approx(sm.p_low_)  # radius 0
    # alpha_corrected_ is the level of the conformal quantile, as in RCP1Conformal
    assert sm.alpha_corrected_ == pytest.approx(0.1 - 0.001)
    sm.set_params(method="rscp").calibrate(X[rest[:400]], y[rest[:400]])
    assert sm.margin_ == pytest.approx(0.186, abs=1e-3)
    assert sm.alpha_corrected_ == pytest.approx(0.1 - 2 * 0.001)
    assert not hasattr(sm, "certified_threshold_")


@pytest.mark.slow
def test_bincp_regression_hull_diabetes(diabetes):
    X, y, tr, rest, model = diabetes
    covs = []
    for seed in range(8):
        cal, te = _split(rest, seed, 150)
        X_adv = eot_pgd_l2_attack(model, X[te], y[te], radius=0.12, sigma=SIGMA)
        sm = SmoothedConformal(model, n_draws=100, radius=0.12, prefit=True, random_state=seed)
        iv = sm.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_interval(X_adv)
        assert np.all(iv[:, 0] <= iv[:, 1])
        covs.append(_coverage_intervals(iv, y[te]))
    assert np.mean(covs) >= 0.89


def test_bincp_regression_trivial_and_window(diabetes):
    X, y, tr, rest, model = diabetes
    with pytest.warns(UserWarning, match="infinite"):
        sm = SmoothedConformal(model, n_draws=10, prefit=True, random_state=0).fit(X, y)
        sm.calibrate(X[rest[:5]], y[rest[:5]])
    assert np.isinf(sm.predict_interval(X[:3])).all()
    with pytest.raises(ValueError, match="rscp"):
        SmoothedConformal(model, method="rscp", prefit=True).fit(X, y)


# --------------------------------------------------------------------------------------
# 8. risk control
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("radius", [0.0, 0.12, 0.25])
def test_risk_control_reproduces_rcp1(digits, digits_model, radius):
    X, y, tr, rest = digits
    cal = rest[:400]
    rcp = RCP1Conformal(digits_model, radius=radius, prefit=True, random_state=7)
    rcp.fit(X[tr], y[tr]).calibrate(X[cal], y[cal])
    # the same noisy calibration scores, recomputed from the same seed streams
    root = np.random.SeedSequence(7)
    _, seedseq = root.spawn(2)
    cal_ss, _ = seedseq.spawn(2)
    rng = np.random.default_rng(cal_ss)
    Z = X[cal] + SIGMA * rng.standard_normal(X[cal].shape)
    s = digits_model.predict_proba(Z)[np.arange(400), y[cal]]
    lambdas = np.unique(np.concatenate([1 - s, [1.0]]))
    losses = ((1 - s)[:, None] > lambdas[None, :]).astype(float)  # miscoverage of {p >= 1-lam}
    lam = robust_risk_control(losses, lambdas, ALPHA, SIGMA, radius)
    assert 1 - lam == pytest.approx(rcp.quantile_, abs=1e-12)


def test_risk_control_input_checks():
    L = np.array([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0]])
    lam = np.array([0.0, 0.5, 1.0])
    L_copy = L.copy()
    with pytest.warns(UserWarning, match="no lambda"):
        assert robust_risk_control(L, lam, 0.1, 0.25, 0.0) == 1.0
    np.testing.assert_array_equal(L, L_copy)
    with pytest.raises(ValueError, match="non-increasing"):
        robust_risk_control(L[:, ::-1], lam, 0.1, 0.25, 0.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        robust_risk_control(L, lam[::-1], 0.1, 0.25, 0.0)
    with pytest.raises(ValueError, match=r"\[0, bound"):
        robust_risk_control(L * 2, lam, 0.1, 0.25, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        robust_risk_control(L, lam, 1.5, 0.25, 0.0)
    with pytest.raises(ValueError, match="lambdas"):
        robust_risk_control(L, lam[:2], 0.1, 0.25, 0.0)
    # bound B: losses in [0, 2] at alpha=0.2 behave like losses/2 at alpha=0.1, r = 0
    rng = np.random.default_rng(0)
    s = rng.uniform(size=300)
    grid = np.linspace(0, 1, 51)
    base = (s[:, None] < 1 - grid).astype(float)
    assert robust_risk_control(2 * base, grid, 0.2, 0.25, 0.1, bound=2.0) == pytest.approx(
        robust_risk_control(base, grid, 0.1, 0.25, 0.1)
    )


@pytest.mark.slow
def test_risk_control_multilabel_fnr_under_attack():
    """Robust CRC of the FNR on multilabel data at r / sigma = 0.5 (spec 7.8)."""
    sigma, radius, alpha = 0.5, 0.25, 0.1
    X, Y = make_multilabel_classification(
        n_samples=3000, n_features=10, n_classes=5, n_labels=2, random_state=0
    )
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    tr = np.arange(1000)
    Xn = np.concatenate([X[tr] + sigma * rng.standard_normal(X[tr].shape) for _ in range(5)])
    clf = MultiOutputClassifier(LogisticRegression(max_iter=500)).fit(Xn, np.tile(Y[tr], (5, 1)))
    W = np.array([e.coef_[0] for e in clf.estimators_])
    b = np.array([e.intercept_[0] for e in clf.estimators_])
    lambdas = np.linspace(0, 1, 201)

    def probs(Z):
        return 1 / (1 + np.exp(-(Z @ W.T + b)))

    def fnr(P, Yt):  # (n, K) probs -> (n, n_lambdas) FNR of {k : p_k >= 1 - lambda}
        missed = (P[:, :, None] < 1 - lambdas[None, None, :]) & (Yt[:, :, None] == 1)
        return missed.sum(1) / np.maximum(Yt.sum(1), 1)[:, None]

    risks = []
    rest = np.arange(1000, 3000)
    for seed in range(10):
        perm = np.random.default_rng(seed).permutation(rest)
        cal, te = perm[:1000], perm[1000:]
        Zc = X[cal] + sigma * rng.standard_normal(X[cal].shape)
        lam = robust_risk_control(fnr(probs(Zc), Y[cal]), lambdas, alpha, sigma, radius)
        Yt = Y[te]

        def grad(Z, Yt=Yt):  # ascend -sum_{true k} p_k
            P = probs(Z)
            return -((Yt * P * (1 - P)) @ W).mean(axis=0)

        X_adv = _eot_pgd(grad, X[te], radius, sigma, 30, 8, None, None, rng)
        P_adv = probs(X_adv + sigma * rng.standard_normal(X_adv.shape))
        j = np.searchsorted(lambdas, lam)
        risks.append(fnr(P_adv, Yt)[:, j].mean())
    assert np.mean(risks) <= alpha + 0.01


# --------------------------------------------------------------------------------------
# 9. attack
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y, LogisticRegression(max_iter=1000).fit(X, y)


@pytest.mark.parametrize("sigma", [0.0, 0.3])
@pytest.mark.parametrize("radius", [0.0, 0.2, 1.0])
def test_attack_norm_bound(iris, sigma, radius):
    X, y, clf = iris
    X_copy = X.copy()
    X_adv = eot_pgd_l2_attack(clf, X, y, radius=radius, sigma=sigma, n_steps=10, random_state=0)
    np.testing.assert_array_equal(X, X_copy)
    assert np.all(np.linalg.norm(X_adv - X, axis=1) <= radius + 1e-9)
    if radius == 0:
        np.testing.assert_array_equal(X_adv, X)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("objective", ["prob", "ce"])
@pytest.mark.parametrize("scaled", [False, True])
def test_attack_linear_gradient_finite_differences(iris, binary, objective, scaled):
    X, y, _ = iris
    if binary:
        y = (y == 2).astype(int)
    model = LogisticRegression(max_iter=1000)
    model = make_pipeline(StandardScaler(), model) if scaled else model
    model.fit(X, y)
    final, W, b = _linear_parts(model)
    rows = np.arange(0, 150, 15)
    grad = _linear_classifier_grad(final, W, b, y[rows], objective)
    g = grad(X[rows][None])
    h = 1e-6
    fd = np.empty_like(g)
    for j in range(X.shape[1]):
        e = np.zeros(X.shape[1])
        e[j] = h
        p_plus = model.predict_proba(X[rows] + e)[np.arange(len(rows)), y[rows]]
        p_minus = model.predict_proba(X[rows] - e)[np.arange(len(rows)), y[rows]]
        if objective == "prob":
            fd[:, j] = -(p_plus - p_minus) / (2 * h)
        else:
            fd[:, j] = -(np.log(p_plus) - np.log(p_minus)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("objective", ["prob", "ce"])
def test_attack_torch_linear_matches_analytic(iris, objective):
    torch = pytest.importorskip("torch")
    X, y, clf = iris
    lin = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        lin.weight.copy_(torch.as_tensor(clf.coef_))
        lin.bias.copy_(torch.as_tensor(clf.intercept_))
    lin.train()
    kw = dict(radius=0.4, sigma=0.3, n_steps=15, objective=objective, random_state=3)
    a = eot_pgd_l2_attack(clf, X, y, **kw)
    b = eot_pgd_l2_attack(lin, X, y, output="logits", **kw)
    np.testing.assert_allclose(a, b, atol=1e-5)
    assert lin.training  # mode restored

    class FakeSkorch:
        module_ = torch.nn.Sequential(lin, torch.nn.Softmax(dim=-1))

    c = eot_pgd_l2_attack(FakeSkorch(), X, y, output="proba", **kw)
    np.testing.assert_allclose(a, c, atol=1e-5)


def test_attack_torch_regression_matches_exact(diabetes):
    torch = pytest.importorskip("torch")
    X, y, tr, rest, model = diabetes
    lin = torch.nn.Linear(X.shape[1], 1).double()
    with torch.no_grad():
        lin.weight.copy_(torch.as_tensor(model.coef_[None, :]))
        lin.bias.fill_(float(model.intercept_))
    rows = rest[:40]
    exact = eot_pgd_l2_attack(model, X[rows], y[rows], radius=0.3, sigma=0.25)
    pgd = eot_pgd_l2_attack(
        lin, X[rows], y[rows], radius=0.3, sigma=0.25, output="regression", random_state=0
    )
    # the sign s = sign(E f(x + eps) - y) is estimated from noise draws: compare clear rows
    clear = np.abs(model.predict(X[rows]) - y[rows]) > 5
    assert clear.mean() > 0.8
    np.testing.assert_allclose(pgd[clear], exact[clear], atol=1e-6)
    f0, f1 = model.predict(X[rows]), model.predict(exact)
    gain = np.abs(f1 - y[rows]) - np.abs(f0 - y[rows])
    np.testing.assert_allclose(gain, 0.3 * np.linalg.norm(model.coef_))


def test_attack_beats_random_direction(digits, digits_model):
    X, y, tr, rest = digits
    rows = rest[:200]
    rng = np.random.default_rng(0)
    X_adv = eot_pgd_l2_attack(digits_model, X[rows], y[rows], radius=0.25, sigma=SIGMA,
                              random_state=1)
    d = rng.normal(size=X[rows].shape)
    X_rand = X[rows] + 0.25 * d / np.linalg.norm(d, axis=1, keepdims=True)

    def expected_py(Xa):
        Z = Xa[None] + SIGMA * rng.standard_normal((16, *Xa.shape))
        P = digits_model.predict_proba(Z.reshape(-1, Xa.shape[1])).reshape(16, len(rows), -1)
        return P[:, np.arange(len(rows)), y[rows]].mean()

    clean, adv, rand = expected_py(X[rows]), expected_py(X_adv), expected_py(X_rand)
    assert adv < rand - 0.05
    assert rand < clean + 0.02


def test_attack_clip_and_wrappers(digits, digits_model):
    X, y, tr, rest = digits
    rows = rest[:50]
    X_adv = eot_pgd_l2_attack(digits_model, X[rows], y[rows], radius=0.5, sigma=0.25,
                              clip=(0.0, 1.0), n_steps=5, random_state=0)
    assert X_adv.min() >= 0 and X_adv.max() <= 1
    assert np.all(np.linalg.norm(X_adv - X[rows], axis=1) <= 0.5 + 1e-9)
    rcp = RCP1Conformal(digits_model, prefit=True).fit(X[tr], y[tr])
    a = eot_pgd_l2_attack(rcp, X[rows], y[rows], radius=0.2, sigma=0.25, random_state=0)
    b = eot_pgd_l2_attack(digits_model, X[rows], y[rows], radius=0.2, sigma=0.25,
                          random_state=0)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "model, kwargs, err",
    [
        (make_pipeline(StandardScaler(), StandardScaler(), LogisticRegression()), {}, TypeError),
        (LinearSVC(), {}, TypeError),
        (None, {"radius": -1.0}, ValueError),
        (None, {"n_steps": 0}, ValueError),
        (None, {"objective": "hinge"}, ValueError),
        (None, {"output": "scores"}, ValueError),
        (None, {"clip": (1.0, 0.0)}, ValueError),
    ],
)
def test_attack_bad_input(iris, model, kwargs, err):
    X, y, clf = iris
    model = clf if model is None else model.fit(X, y)
    args = {"radius": 0.1, "sigma": 0.1, **kwargs}
    with pytest.raises(err):
        eot_pgd_l2_attack(model, X, y, **args)


# --------------------------------------------------------------------------------------
# 10. randomness, API, validation
# --------------------------------------------------------------------------------------
def test_reproducible_and_fresh_noise(digits):
    X, y, tr, rest = digits
    cal, te = rest[:300], rest[300:600]

    def run(seed):
        rcp = RCP1Conformal(LogisticRegression(max_iter=300), radius=0.12, noise_augmentation=2,
                            random_state=seed)
        rcp.fit(X[tr], y[tr]).calibrate(X[cal], y[cal])
        return rcp, rcp.predict_set(X[te]), rcp.predict_set(X[te])

    r1, a1, b1 = run(11)
    r2, a2, b2 = run(11)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert r1.quantile_ == r2.quantile_
    assert (a1 != b1).any(axis=1).mean() > 0.01  # successive calls draw fresh noise
    _, a3, _ = run(12)
    assert not np.array_equal(a1, a3)
    # a numpy Generator is accepted
    RCP1Conformal(LogisticRegression(max_iter=300), noise_augmentation=1,
                  random_state=np.random.default_rng(0)).fit(X[tr], y[tr])


def test_pickle_after_calibrate(digits, digits_model):
    X, y, tr, rest = digits
    rcp = RCP1Conformal(digits_model, radius=0.12, prefit=True, random_state=0)
    rcp.fit(X[tr], y[tr]).calibrate(X[rest[:300]], y[rest[:300]])
    clone_ = pickle.loads(pickle.dumps(rcp))
    assert clone_.quantile_ == rcp.quantile_
    np.testing.assert_array_equal(clone_.predict_set(X[rest[300:]]), rcp.predict_set(X[rest[300:]]))


@settings(deadline=None, max_examples=15)
@given(r1=st.floats(0, 0.3), r2=st.floats(0, 0.3), seed=st.integers(0, 2**16))
def test_sets_nested_in_radius(r1, r2, seed):
    X, y = load_iris(return_X_y=True)
    clf = LogisticRegression(max_iter=500).fit(X[::2], y[::2])
    lo, hi = sorted((r1, r2))
    sets = []
    for r in (lo, hi):
        rcp = RCP1Conformal(clf, radius=r, sigma=0.3, prefit=True, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            rcp.fit(X, y).calibrate(X[1::2], y[1::2])
        sets.append(rcp.predict_set(X))
    assert np.all(sets[1] >= sets[0])


@settings(deadline=None, max_examples=30)
@given(
    P=st.integers(2, 6).flatmap(
        lambda k: st.lists(
            st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k), min_size=1, max_size=8
        )
    ),
    seed=st.integers(0, 100),
)
def test_aps_sets_nested_in_rank_order(P, seed):
    P = np.array(P)
    P = P / P.sum(axis=1, keepdims=True)
    u = np.random.default_rng(seed).uniform(size=len(P))
    S = _all_conformity(P, u, "aps")
    for i in range(len(P)):
        order = np.argsort(-P[i], kind="stable")
        assert np.all(np.diff(S[i, order]) <= 1e-12)


def test_aps_and_tps_scores_valid(digits, digits_model):
    X, y, tr, rest = digits
    for score in ("tps", "aps"):
        rcp = RCP1Conformal(digits_model, conformity_score=score, prefit=True, random_state=0)
        rcp.fit(X[tr], y[tr]).calibrate(X[rest[:400]], y[rest[:400]])
        sets = rcp.predict_set(X[rest[400:]])
        cov = _coverage_sets(sets, rcp.classes_, y[rest[400:]])
        assert 0.85 < cov < 0.97
        assert sets.sum(1).mean() < 2.5


def test_string_labels_and_pipeline(digits):
    X, y, tr, rest = digits
    labels = np.array(list("abcdefghij"))[y]
    rcp = RCP1Conformal(make_pipeline(StandardScaler(), LogisticRegression(max_iter=300)),
                        noise_augmentation=2, random_state=0)
    rcp.fit(X[tr], labels[tr]).calibrate(X[rest[:300]], labels[rest[:300]])
    assert list(rcp.classes_) == list("abcdefghij")
    sets = rcp.predict_set(X[rest[300:]])
    assert _coverage_sets(sets, rcp.classes_, labels[rest[300:]]) > 0.8
    assert set(rcp.predict(X[rest[:5]])) <= set("abcdefghij")
    with pytest.raises(ValueError, match="not seen in fit"):
        rcp.calibrate(X[:3], np.array(["a", "b", "z"]))
    X_adv = eot_pgd_l2_attack(rcp, X[rest[:20]], labels[rest[:20]], radius=0.2, sigma=0.25,
                              random_state=0)
    assert X_adv.shape == (20, 64)


def test_float32_and_inputs_not_modified(digits):
    X, y, tr, rest = digits
    X32 = X.astype(np.float32)
    X_copy, y_copy = X32.copy(), y.copy()
    seen = []

    class Rec(LogisticRegression):
        def predict_proba(self, X):
            seen.append(X.dtype)
            return super().predict_proba(X)

    rcp = RCP1Conformal(Rec(max_iter=300), noise_augmentation=2, random_state=0)
    rcp.fit(X32[tr], y[tr]).calibrate(X32[rest[:200]], y[rest[:200]])
    rcp.predict_set(X32[rest[200:300]])
    assert seen == [np.float32, np.float32]
    np.testing.assert_array_equal(X32, X_copy)
    np.testing.assert_array_equal(y, y_copy)


def test_bad_input_errors(digits):
    X, y, tr, rest = digits
    Xs, ys = X[tr], y[tr]
    for kwargs in ({"alpha": 0.0}, {"alpha": 1.2}, {"sigma": 0.0}, {"sigma": -1.0},
                   {"radius": -0.1}, {"conformity_score": "lac"}, {"noise_augmentation": -1},
                   {"delta": 0.0}, {"delta": 1.0}):
        with pytest.raises(ValueError):
            RCP1Conformal(LogisticRegression(), **kwargs).fit(Xs, ys)
    with pytest.raises(TypeError, match="CalibratedClassifierCV"):
        RCP1Conformal(LinearSVC()).fit(Xs, ys)
    with pytest.raises(ValueError, match="regressor"):
        RCP1Conformal(Ridge(), conformity_score="tps").fit(Xs, ys.astype(float))
    with pytest.raises(NotFittedError):
        RCP1Conformal(LogisticRegression()).calibrate(Xs, ys)
    rcp = RCP1Conformal(LogisticRegression(max_iter=200), noise_augmentation=1).fit(Xs, ys)
    with pytest.raises(NotFittedError, match="calibrate"):
        rcp.predict_set(Xs)
    with pytest.raises(NotFittedError):
        RCP1Conformal(LogisticRegression(), prefit=True).fit(Xs, ys)
    with pytest.raises(ValueError, match="features"):
        rcp.calibrate(Xs[:, :10], ys)
    with pytest.raises(ValueError):
        rcp.set_params(alpha=2.0).calibrate(Xs, ys)  # calibrate re-validates parameters
    rcp.set_params(alpha=0.1).calibrate(X[rest[:200]], y[rest[:200]])
    assert hasattr(rcp, "quantile_")
    rcp.fit(Xs, ys)  # refitting clears the calibration
    assert not hasattr(rcp, "quantile_")
    with pytest.raises(NotFittedError):
        rcp.predict_set(Xs)
    assert not hasattr(RCP1Conformal(Ridge()), "predict_set")
    assert not hasattr(RCP1Conformal(LogisticRegression()), "predict_interval")
    with pytest.raises(ValueError):
        SmoothedConformal(LogisticRegression(), confidence=1.0).fit(Xs, ys)


def _coverage_scorer(estimator, X, y):
    """Coverage-aware score: minus mean set size, penalised below 1 - alpha coverage."""
    half = len(y) // 2
    est = clone(estimator).set_params(prefit=True, estimator=estimator.estimator_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        est.fit(X[:half], y[:half]).calibrate(X[:half], y[:half])
    sets = est.predict_set(X[half:])
    cov = _coverage_sets(sets, est.classes_, y[half:])
    return -sets.sum(1).mean() - 20 * max(0.0, 1 - est.alpha - 0.02 - cov)


def test_grid_search_over_sigma(digits):
    X, y, tr, rest = digits
    rows = np.concatenate([tr, rest[:400]])
    rcp = RCP1Conformal(LogisticRegression(max_iter=300), radius=0.1, noise_augmentation=2,
                        random_state=0)
    grid = GridSearchCV(rcp, {"sigma": [0.1, 0.25, 0.5]}, scoring=_coverage_scorer, cv=2)
    grid.fit(X[rows], y[rows])
    assert grid.best_params_["sigma"] in (0.1, 0.25, 0.5)
    best = grid.best_estimator_.calibrate(X[rest[400:700]], y[rest[400:700]])
    sets = best.predict_set(X[rest[700:]])
    assert _coverage_sets(sets, best.classes_, y[rest[700:]]) > 0.85


# --------------------------------------------------------------------------------------
# cross-check with mapie (benchmark-only peer)
# --------------------------------------------------------------------------------------
class _ProbaPassthrough(ClassifierMixin, BaseEstimator):
    """A 'model' whose input is already the probability array (for identical scores)."""

    def fit(self, X, y):
        self.classes_ = np.arange(X.shape[1])
        self.n_features_in_ = X.shape[1]
        return self

    def predict_proba(self, X):
        return np.asarray(X)

    def predict(self, X):
        return np.argmax(X, axis=1)


@pytest.mark.parametrize("radius", [0.0, 0.12, 0.25])
def test_mapie_lac_at_corrected_level_gives_same_sets(digits, digits_model, radius):
    mapie_cls = pytest.importorskip("mapie.classification")
    X, y, tr, rest = digits
    cal, te = rest[:400], rest[400:]
    counting = CountingClassifier(LogisticRegression(max_iter=300)).fit(X[tr], y[tr])
    counting.estimator_ = digits_model
    rcp = RCP1Conformal(counting, radius=radius, prefit=True, random_state=2).fit(X[tr], y[tr])
    sets = rcp.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_set(X[te])
    P_cal = digits_model.predict_proba(counting.calls_[0][1])
    P_te = digits_model.predict_proba(counting.calls_[1][1])
    mapie = mapie_cls.SplitConformalClassifier(
        _ProbaPassthrough().fit(P_cal, y[cal]),
        confidence_level=1 - rcp.alpha_corrected_,
        conformity_score="lac",
        prefit=True,
    )
    mapie.conformalize(P_cal, y[cal])
    np.testing.assert_array_equal(mapie.predict_set(P_te)[1][:, :, 0], sets)


def test_dataframe_column_names_reach_the_model(digits):
    pd = pytest.importorskip("pandas")
    from sklearn.compose import make_column_transformer

    X, y, tr, rest = digits
    cols = [f"px{i}" for i in range(64)]
    df = pd.DataFrame(X, columns=cols)
    pipe = make_pipeline(
        make_column_transformer((StandardScaler(), cols[:32]), remainder="passthrough"),
        LogisticRegression(max_iter=300),
    )
    rcp = RCP1Conformal(pipe, noise_augmentation=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no feature-name warnings
        rcp.fit(df.iloc[tr], y[tr]).calibrate(df.iloc[rest[:300]], y[rest[:300]])
        sets = rcp.predict_set(df.iloc[rest[300:]])
        rcp.predict(df.iloc[rest[:5]])
    assert list(rcp.feature_names_in_) == cols
    assert _coverage_sets(sets, rcp.classes_, y[rest[300:]]) > 0.8
    # a prefit model fitted on numpy gets numpy
    plain = LogisticRegression(max_iter=300).fit(X[tr], y[tr])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RCP1Conformal(plain, prefit=True).fit(df.iloc[tr], y[tr]).calibrate(
            df.iloc[rest[:300]], y[rest[:300]]
        ).predict_set(df.iloc[rest[300:]])
