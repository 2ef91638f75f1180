"""tpr_at_fpr against a brute-force threshold sweep, and its edge cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import make_scorer

from sklearn_cispa.metrics import tpr_at_fpr


def _brute_force(y, s, fpr, strict):
    # every threshold t: predict positive when s >= t (and t = +inf: nothing positive)
    y, s = np.asarray(y, bool), np.asarray(s, float)
    best = 0.0
    for t in np.concatenate([[np.inf], np.unique(s)]):
        pred = s >= t
        f = np.sum(pred & ~y) / np.sum(~y)
        if (f < fpr) if strict else (f <= fpr):
            best = max(best, np.sum(pred & y) / np.sum(y))
    return best


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 6)), min_size=2, max_size=40),
    st.sampled_from([0.001, 0.1, 0.25, 0.5, 1.0]),
    st.booleans(),
)
def test_matches_brute_force(pairs, fpr, strict):
    y = np.array([p[0] for p in pairs])
    if y.all() or not y.any():
        return
    s = np.array([p[1] for p in pairs], float)  # many ties on purpose
    assert tpr_at_fpr(y, s, fpr=fpr, strict=strict) == pytest.approx(
        _brute_force(y, s, fpr, strict)
    )


def test_strict_excludes_the_point_at_the_target():
    y = [0] * 10 + [1] * 10
    s = list(range(10)) + [20] * 5 + [9] * 5  # one negative ties the second half
    assert tpr_at_fpr(y, s, fpr=0.1) == 0.5
    assert tpr_at_fpr(y, s, fpr=0.1, strict=False) == 1.0


def test_perfect_and_inverted_detectors():
    y = np.r_[np.zeros(1000), np.ones(1000)]
    assert tpr_at_fpr(y, y) == 1.0
    assert tpr_at_fpr(y, -y) == 0.0


def test_scale_and_offset_invariant():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    s = rng.normal(size=500) + y
    ref = tpr_at_fpr(y, s, fpr=0.05)
    for a, b in [(1e-6, 0.0), (1e6, 1e3), (1.0, -1e6)]:
        assert tpr_at_fpr(y, a * s + b, fpr=0.05) == ref


@pytest.mark.parametrize(
    "y, s, match",
    [
        ([0, 0, 0], [0.1, 0.2, 0.3], "two classes"),
        ([0, 1, 2], [0.1, 0.2, 0.3], "two classes"),
        ([0, 1], [0.1, np.nan], "NaN"),
        ([0, 1, 1], [0.1, 0.2], "inconsistent"),
        ([-1, 1], [0.1, 0.2], "0/1"),
    ],
)
def test_bad_input(y, s, match):
    with pytest.raises(ValueError, match=match):
        tpr_at_fpr(y, s)


def test_bad_fpr_names_the_parameter():
    with pytest.raises(ValueError, match="fpr"):
        tpr_at_fpr([0, 1], [0.1, 0.2], fpr=0.0)


def test_as_a_scorer():
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score

    X, y = make_classification(400, random_state=0)
    scorer = make_scorer(tpr_at_fpr, response_method="decision_function", fpr=0.05)
    scores = cross_val_score(LogisticRegression(), X, y, scoring=scorer, cv=3)
    assert np.all((scores > 0.3) & (scores <= 1))
