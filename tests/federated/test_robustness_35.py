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
