"""RCP1Conformal vs SmoothedConformal (BinCP, RSCP+, N=100) vs vanilla split CP (mapie).

Digits (X / 16), a LogisticRegression trained on 20 Gaussian-noised copies (sigma=0.25),
400 calibration and 679 test points, alpha=0.1. One attacked test set (r = 0.12) from
EOT-PGD-l2 (30 steps, 8 noise draws) on the expected true-class probability, shared by
all methods. Tracked: forward passes per point, attacked coverage, mean set size; timed:
calibrate + predict_set (and its peak memory). Vanilla split CP is mapie's
SplitConformalClassifier (LAC) on clean inputs, skipped when mapie is missing.

``CalibrationConditionalDigits`` tracks the calibration-conditional option (``delta``):
over 100 calibration sets of 100 rows drawn with replacement from a pool of 1079, the
fraction of draws whose attacked coverage (r = 0.12, measured on the whole pool) falls
below 1 - alpha, and the mean set size, for ``delta=None`` (marginal) and ``delta=0.1``.
"""

import warnings

import numpy as np

from ._common import SEED, SMOKE, require

METHODS = ["rcp1", "bincp", "rscp", "vanilla_mapie"]
RADIUS = 0.12
SIGMA, ALPHA = 0.25, 0.1
# the CI smoke run (SKLEARN_CISPA_BENCH_SMOKE=1): fewer noisy copies, attack steps and
# calibration draws, enough to show that the benchmarks work
NOISE_COPIES = 1 if SMOKE else 20
ATTACK = {"n_steps": 5, "n_noise": 2} if SMOKE else {}


def _data():
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    from sklearn_cispa.conformal import RCP1Conformal, eot_pgd_l2_attack

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(SEED).permutation(len(y))
    tr, cal, te = perm[:718], perm[718:1118], perm[1118:]
    rcp = RCP1Conformal(
        LogisticRegression(max_iter=1000), sigma=SIGMA, noise_augmentation=NOISE_COPIES,
        random_state=SEED
    )
    model = rcp.fit(X[tr], y[tr]).estimator_
    adv = {
        RADIUS: eot_pgd_l2_attack(
            model, X[te], y[te], radius=RADIUS, sigma=SIGMA, random_state=SEED + 1, **ATTACK
        )
    }
    return {"X": X, "y": y, "tr": tr, "cal": cal, "te": te, "model": model, "adv": adv}


def _counting(model):
    """A prefit classifier that counts the rows sent to ``model`` (defined here rather than
    at module level, so that benchmark discovery imports no scikit-learn)."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    class _Counting(ClassifierMixin, BaseEstimator):
        def __init__(self, model=None):
            self.model = model
            self.rows = 0
            self.classes_ = model.classes_
            self.n_features_in_ = model.n_features_in_

        def fit(self, X, y):  # pragma: no cover - prefit only
            return self

        def predict_proba(self, X):
            self.rows += len(X)
            return self.model.predict_proba(X)

        def predict(self, X):
            self.rows += len(X)
            return self.model.predict(X)

    return _Counting(model)


def _predictor(method, model, radius):
    from sklearn_cispa.conformal import RCP1Conformal, SmoothedConformal

    if method == "rcp1":
        return RCP1Conformal(model, radius=radius, sigma=SIGMA, prefit=True, random_state=SEED)
    if method in ("bincp", "rscp"):
        return SmoothedConformal(
            model, method=method, n_draws=100, radius=radius, sigma=SIGMA, prefit=True,
            random_state=SEED,
        )
    mapie = require("mapie.classification")
    return mapie.SplitConformalClassifier(
        model, confidence_level=1 - ALPHA, conformity_score="lac", prefit=True
    )


def _run(method, model, d, X_test):
    """Calibrate on clean calibration data, return the boolean sets on X_test."""
    X, y, cal, tr = d["X"], d["y"], d["cal"], d["tr"]
    est = _predictor(method, model, d["radius"])
    if method == "vanilla_mapie":
        est.conformalize(X[cal], y[cal])
        return est.predict_set(X_test)[1][:, :, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        est.fit(X[tr], y[tr]).calibrate(X[cal], y[cal])
    return est.predict_set(X_test)


class RobustConformalDigits:
    params = [METHODS]
    param_names = ["method"]
    timeout = 300

    def setup_cache(self):
        return _data()

    def setup(self, d, method):
        if method == "vanilla_mapie":
            require("mapie")
        d["radius"] = RADIUS

    def time_calibrate_predict_set(self, d, method):
        _run(method, d["model"], d, d["adv"][RADIUS])

    def peakmem_calibrate_predict_set(self, d, method):
        _run(method, d["model"], d, d["adv"][RADIUS])

    def track_forward_passes_per_point(self, d, method):
        counting = _counting(d["model"])
        if method == "vanilla_mapie":
            # mapie with prefit calls predict_proba on calibration and test rows once each
            return 1.0
        _run(method, counting, d, d["adv"][RADIUS])
        return counting.rows / (len(d["cal"]) + len(d["te"]))

    track_forward_passes_per_point.unit = "passes"

    def track_attacked_coverage(self, d, method):
        sets = _run(method, d["model"], d, d["adv"][RADIUS])
        return float(sets[np.arange(len(d["te"])), d["y"][d["te"]]].mean())

    track_attacked_coverage.unit = "coverage"

    def track_mean_set_size(self, d, method):
        return float(_run(method, d["model"], d, d["adv"][RADIUS]).sum(axis=1).mean())

    track_mean_set_size.unit = "labels"


class CalibrationConditionalDigits:
    params = [["none", "0.1"]]
    param_names = ["delta"]
    timeout = 300
    n_cal, n_draws = 100, 10 if SMOKE else 100

    def setup_cache(self):
        from sklearn.datasets import load_digits
        from sklearn.linear_model import LogisticRegression

        from sklearn_cispa.conformal import RCP1Conformal, eot_pgd_l2_attack

        X, y = load_digits(return_X_y=True)
        X = X / 16.0
        perm = np.random.default_rng(SEED).permutation(len(y))
        tr, pool = perm[:718], perm[718:]
        model = RCP1Conformal(
            LogisticRegression(max_iter=1000), sigma=SIGMA, noise_augmentation=NOISE_COPIES,
            random_state=SEED,
        ).fit(X[tr], y[tr]).estimator_
        X_adv = eot_pgd_l2_attack(
            model, X[pool], y[pool], radius=RADIUS, sigma=SIGMA, random_state=SEED + 1,
            **ATTACK,
        )
        return {"X": X, "y": y, "tr": tr, "pool": pool, "model": model, "X_adv": X_adv}

    def _draws(self, d, delta):
        from sklearn_cispa.conformal import RCP1Conformal

        X, y, pool = d["X"], d["y"], d["pool"]
        rcp = RCP1Conformal(
            d["model"], radius=RADIUS, sigma=SIGMA, prefit=True, random_state=SEED,
            delta=None if delta == "none" else float(delta),
        ).fit(X[d["tr"]], y[d["tr"]])
        rng = np.random.default_rng(SEED)
        covs, sizes = [], []
        for _ in range(self.n_draws):
            cal = rng.choice(pool, size=self.n_cal, replace=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                rcp.calibrate(X[cal], y[cal])
            sets = rcp.predict_set(d["X_adv"])
            covs.append(sets[np.arange(len(pool)), y[pool]].mean())
            sizes.append(sets.sum(axis=1).mean())
        return np.array(covs), np.array(sizes)

    def track_fraction_of_draws_below_target(self, d, delta):
        covs, _ = self._draws(d, delta)
        return float(np.mean(covs < 1 - ALPHA))

    track_fraction_of_draws_below_target.unit = "fraction"

    def track_mean_set_size(self, d, delta):
        _, sizes = self._draws(d, delta)
        return float(sizes.mean())

    track_mean_set_size.unit = "labels"
