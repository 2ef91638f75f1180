"""LocalSGD on features in the units users bring: a fit far from the optimum warns.

Gradient steps on raw features with an offset or units far from 1 make little progress
in R rounds; the estimators then raise a ``ConvergenceWarning`` that measures how far the
averaged model is from the minimum of its objective (instead of returning a poor model
silently), and stay silent on standardised features.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.federated import LocalSGDClassifier, LocalSGDRegressor
from sklearn_cispa.federated._engine import Machines, relative_objective_gap


def _standardise(X):
    return (X - X.mean(0)) / X.std(0)


def _machines(X, Y, loss, M=3):
    Z = np.hstack([X, np.ones((len(X), 1))])
    shards = np.array_split(np.arange(len(X)), M)
    pen = np.ones(Z.shape[1])
    pen[-1] = 0.0
    return Machines([Z[s] for s in shards], [Y[s] for s in shards], np.full(M, 1 / M), loss,
                    0.0, pen)


@pytest.mark.parametrize(
    "transform", [lambda X: X * 1e3, lambda X: X + 1e3, lambda X: X * 1e6 + 1e3],
    ids=["units_1e3", "offset_1e3", "units_1e6_offset_1e3"],
)
def test_regressor_warns_on_badly_scaled_features(transform):
    X, y = load_diabetes(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        LocalSGDRegressor(random_state=0).fit(transform(X), y)


@pytest.mark.parametrize("scale", [1.0, 1e-6])
def test_classifier_warns_on_raw_features(scale):
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        LocalSGDClassifier(random_state=0).fit(X * scale, y)


@pytest.mark.parametrize(
    "est, loader",
    [(LocalSGDRegressor, load_diabetes), (LocalSGDClassifier, load_breast_cancer),
     (LocalSGDClassifier, load_wine)],
)
def test_no_warning_on_standardised_features_and_near_optimal(est, loader):
    X, y = loader(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = make_pipeline(StandardScaler(), est(random_state=0)).fit(X, y)
    # an independent oracle: scikit-learn's unpenalised fit on the same rows
    peer = LinearRegression() if est is LocalSGDRegressor else LogisticRegression(
        penalty=None, max_iter=5000)
    peer = make_pipeline(StandardScaler(), peer).fit(X, y)
    assert model.score(X, y) >= peer.score(X, y) - 0.03


def test_gap_is_zero_at_the_optimum_and_one_at_the_intercept_model():
    X, y = load_breast_cancer(return_X_y=True)
    X = _standardise(X)[:, :5]
    machines = _machines(X, y[:, None].astype(float), "logistic")
    opt = LogisticRegression(penalty=None, tol=1e-12, max_iter=10000).fit(X, y)
    theta_opt = np.r_[opt.coef_.ravel(), opt.intercept_][:, None]
    zeros = np.zeros_like(theta_opt)
    assert relative_objective_gap(machines, zeros, theta_opt, True) < 1e-6
    null = zeros.copy()
    null[-1] = np.log(y.mean() / (1 - y.mean()))
    assert relative_objective_gap(machines, zeros, null, True) == pytest.approx(1.0, rel=1e-6)


def test_gap_of_least_squares_matches_the_closed_form():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) * [1e-3, 1.0, 1e3, 1e6] + 1e3
    y = (X - 1e3) @ np.array([1e3, 2.0, -1e-3, 1e-6]) + rng.normal(size=300)
    machines = _machines(X, y[:, None], "squared")
    # the oracle solves in standardised columns (least squares on these raw columns is
    # ill-conditioned: LinearRegression on them reaches R^2 0.27 instead of 0.88)
    mu, sd = X.mean(0), X.std(0)
    ols = LinearRegression().fit((X - mu) / sd, y)
    coef = ols.coef_ / sd
    theta_opt = np.r_[coef, ols.intercept_ - coef @ mu][:, None]
    # feature weights halved around the column means: the excess loss is a quarter of
    # the explained variance, and the intercept-only model's excess is all of it
    half = theta_opt.copy()
    half[:-1] *= 0.5
    half[-1] += 0.5 * coef @ mu
    zeros = np.zeros_like(theta_opt)
    assert relative_objective_gap(machines, zeros, theta_opt, True) < 1e-6
    # rel 1e-3: F is evaluated from the Gram matrix, whose entries reach 1e12 here
    assert relative_objective_gap(machines, zeros, half, True) == pytest.approx(0.25, rel=1e-3)
