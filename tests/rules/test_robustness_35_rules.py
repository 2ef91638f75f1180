"""Issue 35: the invariances NeurulesClassifier has, as hypothesis properties.

The learned cuts are equivariant under a feature offset and a change of units (columns
are standardised inside), so the rule list splits the training rows exactly as in the
original units. Each printed threshold is then a short number inside the gap between the
two training values it separates, chosen in the caller's units: a held-out value inside
such a gap can fall on the other side after the move, and only such a value. (The
common invariance property found this: at an offset of -3.16 one held-out prediction of
40 changed, while +1000 and powers of ten kept every short number.)
"""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_cispa.rules import NeurulesClassifier


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 3))
    y = (X @ [1.5, -1.0, 0.5] + 0.5 * rng.normal(size=120) > 0).astype(np.int64)
    return X[:80], y[:80], X[80:]


def _fit(X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NeurulesClassifier(n_rules=4, max_epochs=50, random_state=0).fit(X, y)


_X, _Y, _X_NEW = _data()
_BASE = _fit(_X, _Y)


def _in_a_threshold_gap(model, X_train, x):
    """Whether some feature of ``x`` lies between the two training values around a cut."""
    for rule in model.rules_:
        for f, low, high in rule.conditions:
            v = np.sort(X_train[:, f])
            for t in (low, high):
                if not np.isfinite(t):
                    continue
                i = np.searchsorted(v, t)
                lo = v[i - 1] if i > 0 else -np.inf
                hi = v[i] if i < len(v) else np.inf
                if lo <= x[f] <= hi:
                    return True
    return False


_EXPONENT = st.floats(min_value=-6.0, max_value=6.0)
_OFFSET = st.tuples(st.sampled_from((-1.0, 1.0)), st.floats(min_value=-3.0, max_value=4.0))


@settings(max_examples=4, deadline=None)
@given(exponents=st.lists(_EXPONENT, min_size=3, max_size=3),
       offsets=st.lists(_OFFSET, min_size=3, max_size=3))
def test_rules_split_the_training_rows_whatever_the_units(exponents, offsets):
    c = 10.0 ** np.array(exponents)
    o = np.array([s * 10.0**e for s, e in offsets])
    move = lambda X: X * c + o  # noqa: E731
    moved = _fit(move(_X), _Y)
    # the same partition of the training rows: the same labels and probabilities there
    # (the rules' class probabilities are trained parameters: equal up to the rounding
    # of 50 epochs of training, 2e-8 measured; 1e-6 is the common checks' tolerance)
    np.testing.assert_array_equal(moved.predict(move(_X)), _BASE.predict(_X))
    np.testing.assert_allclose(moved.predict_proba(move(_X)), _BASE.predict_proba(_X),
                               rtol=1e-6, atol=1e-9)
    assert len(moved.rules_) == len(_BASE.rules_)
    for a, b in zip(moved.rules_, _BASE.rules_, strict=True):
        assert a.prediction == b.prediction
        assert [f for f, _, _ in a.conditions] == [f for f, _, _ in b.conditions]
    # held-out rows change only inside a gap around a printed threshold
    changed = np.flatnonzero(moved.predict(move(_X_NEW)) != _BASE.predict(_X_NEW))
    for row in changed:
        assert _in_a_threshold_gap(_BASE, _X, _X_NEW[row]), (row, _X_NEW[row])
