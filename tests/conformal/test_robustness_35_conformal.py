"""Issue 35: right or refused on every input (conformal field)."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler

from sklearn_cispa.conformal import RCP1Conformal, SmoothedConformal

WRAPPERS = [RCP1Conformal, SmoothedConformal]


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 3))
    return X, X @ [1.0, 2.0, 3.0] + rng.normal(size=120)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("cls", WRAPPERS)
def test_inner_overflow_at_1e300_is_explained(cls):
    # was: Ridge's raw "array must not contain infs or NaNs" on finite data
    X, y = _data()
    with pytest.raises(ValueError, match=r"wrapped Ridge failed to fit.*\|X\| = .*e\+300.*Rescale"):
        cls(Ridge(), random_state=0).fit(X * 1e300, y)
    with pytest.raises(ValueError, match="wrapped Ridge failed to fit.*lower sigma"):
        cls(Ridge(), sigma=1e300, random_state=0).fit(X, y)


@pytest.mark.parametrize("cls", WRAPPERS)
def test_the_suggested_remedy_works_at_1e300(cls):
    # MaxAbsScaler divides by the largest |x| (no squares): the pipeline fits at 1e300 and
    # predicts what it predicts in unit scale (scaled features, same targets)
    X, y = _data()
    s = 1e300
    kw = dict(sigma=0.25, random_state=0)
    big = cls(make_pipeline(MaxAbsScaler(), Ridge()), **{**kw, "sigma": 0.25 * s})
    unit = cls(make_pipeline(MaxAbsScaler(), Ridge()), **kw)
    big.fit(X[:80] * s, y[:80])
    unit.fit(X[:80], y[:80])
    np.testing.assert_allclose(
        big.estimator_.predict(X[80:] * s), unit.estimator_.predict(X[80:]), rtol=1e-9
    )


@pytest.mark.parametrize("cls", WRAPPERS)
def test_other_inner_errors_pass_through_unchanged(cls):
    X, y = _data()
    with pytest.raises(ValueError, match="'alpha' parameter of Ridge") as info:
        cls(Ridge(alpha=-1.0), random_state=0).fit(X, y)
    assert "failed to fit" not in str(info.value)
