"""Issue 35: right or refused on every input (federated field)."""

import numpy as np
import pytest

from sklearn_cispa.federated import heterogeneity


def _machines(n=60):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(n, 2))
    groups = np.repeat([0, 1, 2], n // 3)
    return X, groups, rng


def test_heterogeneity_logistic_refuses_real_valued_y():
    X, groups, rng = _machines()
    y = X @ [1.0, -1.0] + rng.normal(size=len(X))  # 60 distinct real values
    with pytest.raises(ValueError, match="loss='logistic' needs class labels.*continuous"):
        heterogeneity(X, y, groups, loss="logistic", alpha=0.1)


def test_heterogeneity_logistic_takes_labels():
    X, groups, rng = _machines()
    y = (X[:, 0] + rng.normal(size=len(X)) > 0).astype(float)  # 0.0 / 1.0 are labels
    h = heterogeneity(X, y, groups, loss="logistic", alpha=0.1)
    assert np.isfinite(h["tau"])


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_heterogeneity_overflowing_moments_are_a_clear_error(loss):
    # was: numpy's LinAlgError "Eigenvalues did not converge" from inf Hessians
    X, groups, rng = _machines()
    y = (X[:, 0] > 0).astype(float)
    with pytest.raises(ValueError, match=r"overflow float64.*Rescale X"):
        heterogeneity(X * 1e300, y, groups, loss=loss, alpha=0.1)


def test_heterogeneity_huge_y_is_a_clear_error():
    X, groups, rng = _machines()
    with pytest.raises(ValueError, match=r"X and y.*overflow|overflow.*X and y"):
        heterogeneity(X, np.full(len(X), 1e307), groups)  # sum over 20 rows: 2e308


def test_heterogeneity_large_but_representable_units():
    # at X * 1e100 the moments (1e200) are still finite: H and mu scale as c**2 without
    # an intercept, exactly as in unit scale
    X, groups, rng = _machines()
    y = X @ [1.0, -1.0] + rng.normal(size=len(X))
    ref = heterogeneity(X, y, groups, fit_intercept=False)
    big = heterogeneity(X * 1e100, y, groups, fit_intercept=False)
    assert big["H"] == pytest.approx(ref["H"] * 1e200, rel=1e-9)
    assert big["mu"] == pytest.approx(ref["mu"] * 1e200, rel=1e-9)
    assert big["zeta_star"] == pytest.approx(ref["zeta_star"] * 1e100, rel=1e-9)


def _federated_data():
    from sklearn_cispa.datasets import make_heterogeneous_quadratics

    return make_heterogeneous_quadratics(n_machines=4, n_features=3, tau=0.05, mu=0.1,
                                         random_state=0)


def test_search_without_routing_warns_that_groups_were_dropped():
    import warnings

    from sklearn.model_selection import GridSearchCV, cross_val_score

    from sklearn_cispa.federated import LocalSGDRegressor

    X, y, groups = _federated_data()
    est = LocalSGDRegressor(rounds=5, n_machines=2, random_state=0)
    search = GridSearchCV(est, {"local_steps": [1, 2]}, cv=2)
    with pytest.warns(UserWarning, match="enable_metadata_routing=True"):
        search.fit(X, y, groups=groups)
    with pytest.warns(UserWarning, match="enable_metadata_routing=True"):
        cross_val_score(est, X, y, groups=groups, cv=2)
    with warnings.catch_warnings():  # no groups anywhere: the IID split is asked for
        warnings.simplefilter("error", UserWarning)
        search.fit(X, y)
        est.fit(X, y)


def test_search_with_routing_fits_on_the_machines():
    import warnings

    import sklearn
    from sklearn.model_selection import GridSearchCV

    from sklearn_cispa.federated import LocalSGDRegressor

    X, y, groups = _federated_data()
    with sklearn.config_context(enable_metadata_routing=True):
        est = LocalSGDRegressor(rounds=5, n_machines=2, random_state=0).set_fit_request(groups=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            search = GridSearchCV(est, {"local_steps": [1, 2]}, cv=2).fit(X, y,
                                                                           groups=groups)
    assert search.best_estimator_.n_machines_ == len(np.unique(groups))


@pytest.mark.parametrize("missing", [np.nan, None])
def test_missing_machine_labels_are_refused(missing):
    from sklearn_cispa.federated import LocalSGDClassifier, LocalSGDRegressor

    X, y, groups = _federated_data()
    groups = groups.astype(object if missing is None else float)
    groups[5] = missing
    with pytest.raises(ValueError, match="missing machine label.*row 5"):
        LocalSGDRegressor(rounds=2, random_state=0).fit(X, y, groups=groups)
    with pytest.raises(ValueError, match="missing machine label"):
        LocalSGDClassifier(rounds=2, random_state=0).fit(X, y > np.median(y),
                                                           groups=groups)
    with pytest.raises(ValueError, match="missing machine label"):
        heterogeneity(X, y, groups)
