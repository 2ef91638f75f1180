"""Audit: local SGD and the heterogeneity measures on scikit-learn's real tables.

The first test failed on the code before the audit fix; the others pin behaviour that
was already right, measured in the audit against closed forms and scikit-learn.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.federated import LocalSGDClassifier, LocalSGDRegressor, heterogeneity

X, Y = load_diabetes(return_X_y=True)
XS = StandardScaler().fit_transform(X)


@pytest.mark.parametrize("design", [
    lambda: (XS[:6], Y[:6], np.arange(6) % 3),                   # each machine interpolates
    lambda: (np.c_[XS, np.ones(len(Y))], Y, np.arange(len(Y)) % 3),  # a constant column
])
def test_mu_of_a_singular_design_is_not_negative(design):
    # the smallest eigenvalue of a singular A_bar came out as -1e-15 / -5e-18: a negative
    # "strong convexity" constant
    Xd, yd, g = design()
    assert heterogeneity(Xd, yd, g)["mu"] >= 0.0


def test_diabetes_matches_least_squares_when_converged():
    ols = LinearRegression().fit(XS, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = LocalSGDRegressor(rounds=300, random_state=0).fit(XS, Y)
    assert est.score(XS, Y) == pytest.approx(ols.score(XS, Y), abs=0.01)


@pytest.mark.parametrize("transform", [lambda A: A * 1e3, lambda A: A + 1000.0])
def test_far_from_optimum_in_raw_units_warns(transform):
    # raw units make step_size="auto" tiny for the other directions: the fit stays near
    # the intercept-only model, and says so
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        LocalSGDRegressor(random_state=0).fit(transform(X), Y)


def test_breast_cancer_in_a_scaler_pipeline_is_accurate():
    from sklearn.pipeline import make_pipeline

    Xb, yb = load_breast_cancer(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        pipe = make_pipeline(StandardScaler(), LocalSGDClassifier(random_state=0)).fit(Xb, yb)
    assert pipe.score(Xb, yb) > 0.97
