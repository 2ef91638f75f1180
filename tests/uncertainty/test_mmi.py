"""Tests of MMIUncertainty and the IIPM functions (issue 7)."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from sklearn_cispa.uncertainty import (
    MMIUncertainty,
    accuracy_rejection_curve,
    choquet_integral,
    entropy_difference,
    generalized_hartley,
    lower_probability,
    lower_total_variation,
    maximum_mean_imprecision,
)
from sklearn_cispa.uncertainty._iipm import _entropy_bits, _event_table, _mobius


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _dirichlet(seed, n, m, K, alpha=None):
    rng = np.random.default_rng(seed)
    if alpha is None:
        alpha = rng.choice([0.2, 1.0, 5.0])
    return rng.dirichlet(np.full(K, alpha), size=(n, m))


def _all_events(K):
    return np.array(list(itertools.product([False, True], repeat=K)), dtype=bool)


def _mmi_definition(P):
    """max_A [max_j p_j(A) - min_j p_j(A)] by explicit enumeration of the events."""
    ev = _all_events(P.shape[-1]).astype(float)
    probs = P @ ev.T  # (n, m, n_events)
    return (probs.max(axis=1) - probs.min(axis=1)).max(axis=1)


def _choquet_definition(f, P, upper=False):
    """inf f + integral_{inf f}^{sup f} nu({f >= t}) dt, nu piecewise constant in t."""
    out = []
    for row in P:
        levels = np.unique(f)
        value = levels[0]
        for lo, hi in zip(levels[:-1], levels[1:]):
            event = f >= hi  # {f >= t} for t in (lo, hi]
            probs = row @ event.astype(float)
            value += (hi - lo) * (probs.max() if upper else probs.min())
        out.append(value)
    return np.array(out)


credal = st.builds(
    _dirichlet,
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 4),
    m=st.integers(1, 6),
    K=st.integers(2, 8),
)


# --------------------------------------------------------------------------------------
# maximum mean imprecision: properties
# --------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=60)
@given(P=credal)
def test_exact_equals_bruteforce_and_definition(P):
    exact = maximum_mean_imprecision(P)
    assert_allclose(exact, maximum_mean_imprecision(P, method="bruteforce"), atol=1e-12)
    assert_allclose(exact, _mmi_definition(P), atol=1e-12)


@settings(deadline=None, max_examples=60)
@given(P=credal)
def test_bounds_mmi_le_linear(P):
    exact = maximum_mean_imprecision(P)
    linear = maximum_mean_imprecision(P, method="linear")
    assert np.all(exact >= 0) and np.all(linear <= 1)
    assert np.all(exact <= linear + 1e-12)


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(2, 10))
def test_linear_tight_for_two_members(seed, K):
    P = _dirichlet(seed, 3, 2, K)
    assert_allclose(maximum_mean_imprecision(P), maximum_mean_imprecision(P, "linear"), atol=1e-12)


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 8))
def test_two_classes_mmi_linear_gh_agree(seed, m):
    P = _dirichlet(seed, 4, m, 2)
    expected = P[:, :, 0].max(axis=1) - P[:, :, 0].min(axis=1)
    assert_allclose(maximum_mean_imprecision(P), expected, atol=1e-12)
    assert_allclose(maximum_mean_imprecision(P, "linear"), expected, atol=1e-12)
    assert_allclose(generalized_hartley(P), expected, atol=1e-12)


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 5), K=st.integers(2, 10))
def test_precise_sets_have_zero_mmi(seed, m, K):
    p = _dirichlet(seed, 3, 1, K)
    P = np.repeat(p, m, axis=1)
    for method in ("exact", "linear", "bruteforce"):
        assert_allclose(maximum_mean_imprecision(P, method), 0.0, atol=1e-12)
    assert_allclose(generalized_hartley(P), 0.0, atol=1e-12)
    assert_allclose(entropy_difference(P), 0.0, atol=1e-9)


@settings(deadline=None, max_examples=40)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(2, 6), K=st.integers(2, 8))
def test_nonzero_when_members_differ(seed, m, K):
    P = _dirichlet(seed, 3, m, K)
    P[:, 1] = np.roll(P[:, 0], 1, axis=-1) * 0.5 + 0.5 / K  # surely differs from member 0
    if np.allclose(P[:, 0], P[:, 1]):
        return
    assert np.all(maximum_mean_imprecision(P) > 0)


@settings(deadline=None, max_examples=40)
@given(P=credal, extra=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_monotone_under_set_inclusion(P, extra, seed):
    more = np.concatenate([P, _dirichlet(seed, P.shape[0], extra, P.shape[2])], axis=1)
    for method in ("exact", "linear"):
        assert np.all(
            maximum_mean_imprecision(more, method) >= maximum_mean_imprecision(P, method) - 1e-15
        )
    assert np.all(generalized_hartley(more) >= generalized_hartley(P) - 1e-9)


@settings(deadline=None, max_examples=30)
@given(
    seed=st.integers(0, 2**32 - 1),
    K=st.integers(2, 10),
    eps=st.floats(0.0, 1.0, allow_nan=False),
)
def test_epsilon_contamination_gives_epsilon(seed, K, eps):
    p = _dirichlet(seed, 1, 1, K)[0, 0]
    P = (1 - eps) * p[None, :] + eps * np.eye(K)
    assert_allclose(maximum_mean_imprecision(P), [eps], atol=1e-12)
    assert_allclose(maximum_mean_imprecision(P, "linear"), [eps], atol=1e-12)


def test_epsilon_contamination_spec_case():
    p = np.array([0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    P = 0.7 * p + 0.3 * np.eye(6)
    for method in ("exact", "linear", "bruteforce"):
        assert_allclose(maximum_mean_imprecision(P, method), [0.3], atol=1e-12)


def test_vacuous_set():
    for K in (2, 5, 12):
        for method in ("exact", "linear", "bruteforce"):
            assert_allclose(maximum_mean_imprecision(np.eye(K), method), [1.0])
        assert_allclose(generalized_hartley(np.eye(K)), [np.log2(K)], atol=1e-12)


def test_hand_computed_value():
    P = np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], [0.3, 0.4, 0.3]])
    # TV pairs: (0,1) = 0.3, (0,2) = 0.2, (1,2) = 0.2; MMI-Lin = 1 - (0.2 + 0.3 + 0.2) = 0.3
    assert_allclose(maximum_mean_imprecision(P), [0.3])
    assert_allclose(maximum_mean_imprecision(P, "linear"), [0.3])
    P = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    # every pair has TV 0.4 and MMI-Lin = 1 - 0.6 = 0.4
    assert_allclose(maximum_mean_imprecision(P), [0.4])
    P = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0], [0.0, 0.0, 0.5, 0.5]])
    # members 0 and 2 have disjoint supports: TV = 1
    assert_allclose(maximum_mean_imprecision(P), [1.0])
    P = np.array([[0.4, 0.3, 0.3], [0.3, 0.4, 0.3], [0.3, 0.3, 0.4]])
    assert_allclose(maximum_mean_imprecision(P), [0.1])
    assert_allclose(maximum_mean_imprecision(P, "linear"), [0.1])
    P = np.array([[0.4, 0.3, 0.3, 0.0], [0.3, 0.4, 0.0, 0.3], [0.0, 0.3, 0.4, 0.3]])
    assert_allclose(maximum_mean_imprecision(P), [0.4])
    assert_allclose(maximum_mean_imprecision(P, "linear"), [0.7])  # strict bound


def test_exact_large_k_matches_linear_for_two_members_and_chunking():
    P = _dirichlet(0, 50, 2, 1000, alpha=1.0)
    assert_allclose(maximum_mean_imprecision(P), maximum_mean_imprecision(P, "linear"), atol=1e-12)
    P = _dirichlet(1, 30, 6, 300, alpha=1.0)
    whole = maximum_mean_imprecision(P)
    rows = np.concatenate([maximum_mean_imprecision(P[i]) for i in range(P.shape[0])])
    assert_allclose(whole, rows, atol=0, rtol=0)


def test_two_dimensional_input_is_one_row():
    P = _dirichlet(3, 1, 4, 5)
    assert maximum_mean_imprecision(P[0]).shape == (1,)
    assert_allclose(maximum_mean_imprecision(P[0]), maximum_mean_imprecision(P))


# --------------------------------------------------------------------------------------
# generalized Hartley and entropy difference
# --------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=30)
@given(P=credal)
def test_gh_masses_sum_to_one_and_match_mobius_definition(P):
    lower = _event_table(P).min(axis=1)
    lower[:, -1] = 1.0
    masses = _mobius(lower)
    assert_allclose(masses.sum(axis=1), 1.0, atol=1e-12)
    K = P.shape[-1]
    if K <= 4:  # m(A) = sum_{B subset A} (-1)^{|A \ B|} P_(B)
        for A in range(1 << K):
            expected = sum(
                (-1) ** bin(A & ~B).count("1") * lower[:, B] for B in range(1 << K) if B & ~A == 0
            )
            assert_allclose(masses[:, A], expected, atol=1e-12)
    gh = generalized_hartley(P)
    sizes = np.array([bin(a).count("1") for a in range(1 << K)])
    assert_allclose(gh, masses[:, 1:] @ np.log2(sizes[1:]), atol=1e-12)


def test_gh_masses_can_be_negative():
    P = _dirichlet(0, 200, 10, 8, alpha=1.0)
    lower = _event_table(P).min(axis=1)
    lower[:, -1] = 1.0
    assert _mobius(lower).min() < -1e-3


def test_entropy_difference_closed_form_two_classes():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = rng.integers(1, 6)
        P = rng.dirichlet([1.0, 1.0], size=(1, m))
        a, b = P[0, :, 0].min(), P[0, :, 0].max()

        def h(q):
            return float(_entropy_bits(np.array([q, 1 - q])))

        upper = 1.0 if a <= 0.5 <= b else max(h(a), h(b))
        expected = upper - min(h(a), h(b))
        assert_allclose(entropy_difference(P), [expected], atol=1e-4)


def test_entropy_difference_matches_slsqp():
    rng = np.random.default_rng(1)
    for _ in range(15):
        K, m = rng.integers(3, 8), rng.integers(2, 6)
        p = rng.dirichlet(np.full(K, rng.choice([0.3, 1.0, 3.0])), size=m)

        def neg(lam, p=p):
            q = np.clip(lam @ p, 1e-300, None)
            return float((q * np.log2(q)).sum())

        best = -np.inf
        for _ in range(5):
            res = minimize(
                neg,
                rng.dirichlet(np.ones(m)),
                method="SLSQP",
                bounds=[(0, 1)] * m,
                constraints=[{"type": "eq", "fun": lambda lam: lam.sum() - 1}],
            )
            best = max(best, -res.fun)
        ours = entropy_difference(p)[0] + _entropy_bits(p).min()
        assert ours >= best - 1e-3
        assert ours <= np.log2(K) + 1e-12


@settings(deadline=None, max_examples=30)
@given(P=credal)
def test_entropy_difference_nonnegative(P):
    ed = entropy_difference(P)
    assert np.all(ed >= 0) and np.all(ed <= np.log2(P.shape[-1]) + 1e-12)


# --------------------------------------------------------------------------------------
# lower probability and Choquet integral
# --------------------------------------------------------------------------------------
def test_lower_probability_events_forms():
    P = np.array([[[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]]])
    by_index = lower_probability(P, [[0], [1, 2], [], [0, 1, 2]])
    mask = np.array([[1, 0, 0], [0, 1, 1], [0, 0, 0], [1, 1, 1]], dtype=bool)
    assert_allclose(by_index, [[0.5, 0.3, 0.0, 1.0]])
    assert_allclose(lower_probability(P, mask), by_index)
    # upper probability via the conjugate
    assert_allclose(1 - lower_probability(P, ~mask), [[0.7, 0.5, 0.0, 1.0]])


@settings(deadline=None, max_examples=40)
@given(P=credal, seed=st.integers(0, 2**32 - 1))
def test_choquet_matches_definition(P, seed):
    rng = np.random.default_rng(seed)
    K = P.shape[-1]
    f = rng.choice([-2.0, -0.5, 0.0, 1.0, 3.0], size=K)  # ties on purpose
    for upper in (False, True):
        assert_allclose(
            choquet_integral(f, P, upper=upper), _choquet_definition(f, P, upper), atol=1e-12
        )
    lower = choquet_integral(f, P)
    expectations = P @ f
    assert np.all(lower <= expectations.min(axis=1) + 1e-12)
    assert np.all(choquet_integral(f, P, upper=True) >= expectations.max(axis=1) - 1e-12)
    # translation equivariance
    assert_allclose(choquet_integral(f + 2.5, P), lower + 2.5, atol=1e-12)
    # conjugacy: upper integral of f = - lower integral of -f
    assert_allclose(choquet_integral(f, P, upper=True), -choquet_integral(-f, P), atol=1e-12)


def test_choquet_special_cases():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(5), size=(6, 1))
    f = rng.normal(size=(6, 5))
    assert_allclose(choquet_integral(f, P), (P[:, 0] * f).sum(axis=1), atol=1e-12)
    P2 = rng.dirichlet(np.ones(2), size=(6, 4))
    f2 = rng.normal(size=2)
    assert_allclose(choquet_integral(f2, P2), (P2 @ f2).min(axis=1), atol=1e-12)


def test_choquet_of_indicators_gives_lower_probability_and_mmi():
    P = _dirichlet(5, 4, 4, 5)
    events = _all_events(5)
    lower = lower_probability(P, events)
    gaps = []
    for i, event in enumerate(events):
        ind = event.astype(float)
        assert_allclose(choquet_integral(ind, P), lower[:, i], atol=1e-12)
        gaps.append(choquet_integral(ind, P, upper=True) - choquet_integral(ind, P))
    assert_allclose(np.max(gaps, axis=0), maximum_mean_imprecision(P), atol=1e-12)


def test_lemma5_strict_for_some_ensembles():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=(300, 3))
    f = rng.normal(size=(300, 4))
    gap = (np.einsum("nmk,nk->nm", P, f).min(axis=1)) - choquet_integral(f, P)
    assert np.all(gap >= -1e-12) and np.mean(gap > 1e-9) > 0.3


# --------------------------------------------------------------------------------------
# lower total variation
# --------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=30)
@given(
    seed=st.integers(0, 2**32 - 1),
    K=st.integers(2, 7),
    ma=st.integers(1, 4),
    mb=st.integers(1, 4),
    mc=st.integers(1, 4),
)
def test_ltv_metric_properties_and_definition(seed, K, ma, mb, mc):
    A, B, C = (_dirichlet(seed + i, 3, m, K) for i, m in enumerate((ma, mb, mc)))
    ab = lower_total_variation(A, B)
    events = _all_events(K)
    expected = np.abs(lower_probability(A, events) - lower_probability(B, events)).max(axis=1)
    assert_allclose(ab, expected, atol=1e-12)
    assert_allclose(lower_total_variation(A, A), 0.0, atol=1e-12)
    assert_allclose(ab, lower_total_variation(B, A), atol=1e-15)
    assert np.all(ab <= lower_total_variation(A, C) + lower_total_variation(C, B) + 1e-12)


def test_ltv_single_members_is_total_variation():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(30), size=(2, 5, 1))
    assert_allclose(lower_total_variation(p, q), 0.5 * np.abs(p - q).sum(axis=(1, 2)))
    # the O(K) path agrees with the enumeration
    p, q = rng.dirichlet(np.ones(6), size=(2, 5, 1))
    events = _all_events(6)
    expected = np.abs(lower_probability(p, events) - lower_probability(q, events)).max(axis=1)
    assert_allclose(lower_total_variation(p, q), expected, atol=1e-12)


def test_ltv_is_not_half_l1_of_singleton_lower_probabilities():
    # Remark 14: the singletons do not determine LTV
    a = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    b = np.array([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])
    singles = np.eye(3, dtype=bool)
    half_l1 = 0.5 * np.abs(lower_probability(a, singles) - lower_probability(b, singles)).sum()
    ltv = lower_total_variation(a, b)[0]
    assert_allclose(half_l1, 0.25)
    assert_allclose(ltv, 0.5)


# --------------------------------------------------------------------------------------
# accuracy-rejection curve
# --------------------------------------------------------------------------------------
def test_ar_curve_basic_cases():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=200)
    y_pred = np.where(rng.random(200) < 0.7, y, (y + 1) % 3)
    acc0 = np.mean(y == y_pred)
    rates, acc, auc = accuracy_rejection_curve(y, y_pred, rng.random(200))
    assert_allclose(rates, np.arange(100) / 100)
    assert_allclose(acc[0], acc0)
    _, flat, auc_flat = accuracy_rejection_curve(y, y_pred, np.ones(200))
    assert_allclose(flat, acc0)
    assert_allclose(auc_flat, acc0)
    oracle = (y != y_pred).astype(float)
    _, acc_o, _ = accuracy_rejection_curve(y, y_pred, oracle)
    assert_allclose(acc_o[rates >= 1 - acc0], 1.0)
    perm = rng.permutation(200)
    _, acc_p, _ = accuracy_rejection_curve(y[perm], y_pred[perm], oracle[perm])
    assert_allclose(acc_p, acc_o, atol=1e-15)


def test_ar_curve_ties_are_expected_random_tie_breaking():
    correct = np.array([1, 0, 1, 1, 0, 0, 1])
    u = np.array([0.1, 0.5, 0.5, 0.5, 0.9, 0.2, 0.5])
    y = np.zeros(7, dtype=int)
    y_pred = 1 - correct
    rates = np.arange(7) / 7
    _, acc, _ = accuracy_rejection_curve(y, y_pred, u, rejection_rates=rates)
    for rate, a in zip(rates, acc):
        n_keep = 7 - int(round(rate * 7))
        values = []  # average over all tie-breaking orders
        for perm in itertools.permutations(range(7)):
            order = sorted(range(7), key=lambda i: (u[i], perm[i]))
            values.append(correct[order[:n_keep]].mean())
        assert_allclose(a, np.mean(values), atol=1e-12)


def test_ar_curve_rejects_bad_input():
    with pytest.raises(ValueError, match="same length"):
        accuracy_rejection_curve([0, 1], [0, 1], [0.1])
    with pytest.raises(ValueError, match="NaN"):
        accuracy_rejection_curve([0, 1], [0, 1], [0.1, np.nan])
    with pytest.raises(ValueError, match="rejection_rates"):
        accuracy_rejection_curve([0, 1], [0, 1], [0.1, 0.2], rejection_rates=[1.0])
    with pytest.raises(ValueError, match="1-d"):
        accuracy_rejection_curve([[0, 1]], [0, 1], [0.1, 0.2])


# --------------------------------------------------------------------------------------
# input validation of the functions
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "probas, match",
    [
        (np.array([[[0.6, 0.6], [0.5, 0.5]]]), "sum to 1"),
        (np.array([[[1.2, -0.2], [0.5, 0.5]]]), r"\[0, 1\]"),
        (np.array([0.5, 0.5]), "3-d array"),
        (np.ones((2, 2, 2, 2)) / 2, "3-d array"),
        (np.array([[[np.nan, 1.0]]]), "NaN"),
        (np.zeros((0, 3, 2)), "empty"),
    ],
)
def test_functions_reject_bad_probas(probas, match):
    for func in (maximum_mean_imprecision, generalized_hartley, entropy_difference):
        with pytest.raises(ValueError, match=match):
            func(probas)
    with pytest.raises(ValueError, match=match):
        lower_probability(probas, [[0]])
    with pytest.raises(ValueError, match=match):
        choquet_integral([0.0, 1.0], probas)
    with pytest.raises(ValueError, match=match):
        lower_total_variation(probas, probas)


def test_functions_reject_bad_arguments():
    P = _dirichlet(0, 2, 3, 4)
    with pytest.raises(ValueError, match="method"):
        maximum_mean_imprecision(P, method="fast")
    with pytest.raises(ValueError, match="K <= 12"):
        maximum_mean_imprecision(_dirichlet(0, 1, 2, 13), method="bruteforce")
    with pytest.raises(ValueError, match="K <= 15"):
        generalized_hartley(_dirichlet(0, 1, 2, 16))
    with pytest.raises(ValueError, match="K <= 16"):
        lower_total_variation(_dirichlet(0, 1, 2, 17), _dirichlet(1, 1, 2, 17))
    with pytest.raises(ValueError, match="same number of rows and classes"):
        lower_total_variation(P, _dirichlet(0, 2, 3, 5))
    with pytest.raises(ValueError, match="outside"):
        lower_probability(P, [[0, 4]])
    with pytest.raises(ValueError, match="shape"):
        lower_probability(P, np.ones((2, 3), dtype=bool))
    with pytest.raises(TypeError, match="integer label indices"):
        lower_probability(P, [[0.5]])
    with pytest.raises(ValueError, match="entries"):
        choquet_integral([1.0, 2.0], P)
    with pytest.raises(TypeError, match="upper"):
        choquet_integral([1.0, 2.0, 3.0, 4.0], P, upper="yes")
    with pytest.raises(TypeError, match="real numbers"):
        maximum_mean_imprecision(np.array([[["a", "b"]]]))
    with pytest.raises(ValueError, match="tol"):
        entropy_difference(P, tol=0)
    with pytest.raises(ValueError, match="max_iter"):
        entropy_difference(P, max_iter=0)


def test_functions_do_not_modify_inputs():
    P = _dirichlet(0, 3, 4, 5)
    P[0, 0] = [0.5, 0.5 + 1e-8, 0, 0, -1e-8]  # within tolerance: clipped in a copy only
    before = P.copy()
    f = np.arange(5.0)
    f_before = f.copy()
    maximum_mean_imprecision(P)
    maximum_mean_imprecision(P, "bruteforce")
    generalized_hartley(P)
    entropy_difference(P)
    lower_probability(P, [[0, 1]])
    choquet_integral(f, P)
    lower_total_variation(P, P)
    assert_array_equal(P, before)
    assert_array_equal(f, f_before)


# --------------------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def _light(**kw):
    params = dict(estimator=DecisionTreeClassifier(max_features=2), n_members=5, random_state=0)
    params.update(kw)
    return MMIUncertainty(**params)


def test_estimator_outputs(iris):
    X, y = iris
    model = _light().fit(X, y)
    mmi = model.transform(X)
    assert mmi.shape == (X.shape[0], 1)
    assert np.all((mmi >= 0) & (mmi <= 1))
    proba = model.predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(model.predict(X), model.classes_[proba.argmax(axis=1)])
    P = model.predict_credal_set(X)
    assert P.shape == (X.shape[0], 5, 3)
    assert_allclose(mmi[:, 0], maximum_mean_imprecision(P))
    assert_allclose(proba, P.mean(axis=1))
    for method in ("linear", "bruteforce"):
        other = _light(method=method).fit(X, y).transform(X)[:, 0]
        assert_allclose(other, maximum_mean_imprecision(P, method))
    assert len(model.estimators_) == 5 and model.n_features_in_ == 4


def test_default_ensemble_smoke_and_reproducible(iris):
    X, y = iris
    a = MMIUncertainty(random_state=0).fit(X, y)
    b = MMIUncertainty(random_state=0).fit(X, y)
    assert len(a.estimators_) == 10
    assert a.member_params_ == b.member_params_
    assert len({tuple(sorted(p.items())) for p in a.member_params_}) == 10
    assert all(p["max_depth"] is None for p in a.member_params_)
    assert_array_equal(a.transform(X), b.transform(X))
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = MMIUncertainty(random_state=1).fit(X, y)
    assert a.member_params_ != c.member_params_
    g1 = _light(random_state=np.random.default_rng(3)).fit(X, y)
    g2 = _light(random_state=np.random.default_rng(3)).fit(X, y)
    assert g1.member_params_ == g2.member_params_


def test_cloned_members_get_distinct_seeds_and_n_jobs_does_not_matter(iris):
    X, y = iris
    a = _light(n_jobs=1).fit(X, y)
    b = _light(n_jobs=2).fit(X, y)
    seeds = [p["random_state"] for p in a.member_params_]
    assert len(set(seeds)) == 5
    assert [e.random_state for e in a.estimators_] == seeds
    assert_array_equal(a.transform(X), b.transform(X))


def test_list_of_estimators_is_refitted_as_given(iris):
    X, y = iris
    given_members = [
        DecisionTreeClassifier(max_depth=2, random_state=0),
        LogisticRegression(max_iter=500),
        KNeighborsClassifier(n_neighbors=7),
    ]
    model = MMIUncertainty(given_members, n_members=99).fit(X, y)
    assert len(model.estimators_) == 3
    for given_est, fitted in zip(given_members, model.estimators_):
        assert fitted is not given_est
        assert type(fitted) is type(given_est)
        assert fitted.get_params() == given_est.get_params()
        assert not hasattr(given_est, "classes_")  # the caller's estimators stay unfitted
    assert model.member_params_ == [{}, {}, {}]
    assert model.transform(X).max() > 0


def test_deterministic_estimators_warn(iris):
    X, y = iris
    with pytest.warns(UserWarning, match="identical"):
        MMIUncertainty(KNeighborsClassifier(), n_members=3).fit(X, y)
    with pytest.warns(UserWarning, match="identical"):
        MMIUncertainty(LogisticRegression(max_iter=500), n_members=3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _light().fit(X, y)
        MMIUncertainty(KNeighborsClassifier(), n_members=1).fit(X, y)


def test_string_labels_and_class_alignment(iris):
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    model = _light().fit(X, names)
    assert_array_equal(model.classes_, np.unique(names))
    assert set(model.predict(X)) <= set(names)
    # a member that only knows two of the classes gets 0 for the third
    partial = DecisionTreeClassifier(random_state=0).fit(X[y > 0], names[y > 0])
    model.estimators_.append(partial)
    P = model.predict_credal_set(X)
    assert_allclose(P[:, -1, 0], 0.0)
    assert_allclose(P[:, -1, 1:], partial.predict_proba(X))
    assert_allclose(model.transform(X[y == 0]), 1.0)  # total disagreement on setosa


def test_estimator_bad_input(iris):
    X, y = iris
    with pytest.raises(ValueError, match="at least 2 classes"):
        _light().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="empty list"):
        MMIUncertainty([]).fit(X, y)
    with pytest.raises(TypeError, match="predict_proba"):
        MMIUncertainty([DecisionTreeClassifier(), StandardScaler()]).fit(X, y)
    model = _light().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.transform(X[:, :2])
    Xc, yc = X.copy(), y.copy()
    model.fit(Xc, yc).transform(Xc)
    assert_array_equal(Xc, X)
    assert_array_equal(yc, y)


def test_pipeline_gridsearch_pickle_set_output(iris):
    X, y = iris
    pipe = make_pipeline(StandardScaler(), _light())
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.9
    assert pipe.transform(X).shape == (X.shape[0], 1)
    assert make_pipeline(StandardScaler(), _light()).fit_transform(X, y).shape == (150, 1)
    search = GridSearchCV(
        _light(), {"n_members": [2, 4], "estimator__max_depth": [1, 3]}, cv=3
    ).fit(X, y)
    assert search.best_params_["estimator__max_depth"] == 3
    model = _light().fit(X, y)
    clone_ = pickle.loads(pickle.dumps(model))
    assert_array_equal(clone_.transform(X), model.transform(X))
    pd = pytest.importorskip("pandas")
    out = _light().set_output(transform="pandas").fit(X, y).transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["mmi"]
    assert list(model.get_feature_names_out()) == ["mmi"]


# --------------------------------------------------------------------------------------
# experiments of the spec, CI size
# --------------------------------------------------------------------------------------
def _selective_prediction(X, y, seed):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    model = MMIUncertainty(random_state=seed).fit(Xtr, ytr)
    P = model.predict_credal_set(Xte)
    y_pred = model.classes_[P.mean(axis=1).argmax(axis=1)]
    scores = {
        "mmi": maximum_mean_imprecision(P),
        "lin": maximum_mean_imprecision(P, "linear"),
        "ediff": entropy_difference(P),
        "random": np.zeros(len(yte)),
    }
    if P.shape[-1] <= 15:
        scores["gh"] = generalized_hartley(P)
    curves = {k: accuracy_rejection_curve(yte, y_pred, v) for k, v in scores.items()}
    return scores, curves


@pytest.mark.slow
def test_digits_selective_prediction():
    X, y = load_digits(return_X_y=True)
    aucs = {k: [] for k in ("mmi", "lin", "ediff", "random", "gh")}
    for seed in range(3):
        scores, curves = _selective_prediction(X, y, seed)
        for k, (_, _, auc) in curves.items():
            aucs[k].append(auc)
        rates, acc, _ = curves["mmi"]
        assert acc[rates == 0.5][0] >= 0.99
        if seed == 0:
            from scipy.stats import spearmanr

            assert spearmanr(scores["mmi"], scores["gh"]).statistic >= 0.9
    mean = {k: np.mean(v) for k, v in aucs.items()}
    assert mean["mmi"] > mean["random"] + 0.02
    assert mean["mmi"] >= mean["ediff"]
    assert abs(mean["mmi"] - mean["gh"]) < 0.005
    assert mean["lin"] > mean["random"] + 0.02


@pytest.mark.slow
def test_default_curve_rises_on_other_datasets():
    X, y = load_breast_cancer(return_X_y=True)
    _, curves = _selective_prediction(X, y, 0)
    assert curves["mmi"][2] > curves["random"][2] + 0.01
    X, y = make_classification(
        1500, 20, n_informative=8, n_classes=5, n_clusters_per_class=1, random_state=0
    )
    _, curves = _selective_prediction(X, y, 0)
    assert curves["mmi"][2] > curves["random"][2] + 0.01


@pytest.mark.slow
def test_members_fit_on_dask_match_serial(iris):
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X, y = iris
    serial = _light().fit(X, y).transform(X)
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    )
    try:
        with distributed.Client(cluster), parallel_config(backend="dask"):
            on_dask = _light().fit(X, y).transform(X)
    finally:
        cluster.close()
    assert_array_equal(on_dask, serial)


# --------------------------------------------------------------------------------------
# issue 12 items 5-6 and issue 16: masks, ragged/sparse input, n_jobs=0, validate once
# --------------------------------------------------------------------------------------
def test_integer_zero_one_mask_is_a_mask():
    P = np.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2]])
    # {0, 2}: min(0.8, 0.7) = 0.7 (read as indices {1, 0, 1} it would be 0.8)
    assert_allclose(lower_probability(P, np.array([[1, 0, 1]])), [[0.7]])
    assert_allclose(lower_probability(P, [[1, 0, 1]]), [[0.7]])
    assert_allclose(lower_probability(P, np.array([[True, False, True]])), [[0.7]])
    assert_allclose(lower_probability(P, np.array([[1.0, 0.0, 1.0]])), [[0.7]])
    # index lists stay index lists
    assert_allclose(lower_probability(P, [[0, 2]]), [[0.7]])
    assert_allclose(lower_probability(P, [[0], [1, 2], []]), [[0.5, 0.3, 0.0]])
    assert_allclose(lower_probability(P, np.array([[0, 2]])), [[0.7]])  # not 0/1 -> indices
    with pytest.raises(ValueError, match="0 and 1"):
        lower_probability(P, np.array([[0.5, 0.0, 1.0]]))


@pytest.mark.parametrize(
    "bad, error, match",
    [
        ([[0.5, 0.5], [1.0]], ValueError, "ragged"),
        ([[[0.5, 0.5]], [[0.2, 0.3, 0.5]]], ValueError, "ragged"),
        ("sparse", TypeError, "sparse"),
    ],
)
def test_ragged_and_sparse_credal_sets_give_clear_errors(bad, error, match):
    if bad == "sparse":
        from scipy import sparse

        bad = sparse.csr_matrix(np.array([[0.7, 0.3], [0.4, 0.6]]))
    for func in (maximum_mean_imprecision, generalized_hartley, entropy_difference):
        with pytest.raises(error, match=match):
            func(bad)
    with pytest.raises(error, match=match):
        maximum_mean_imprecision(bad, method="linear")
    with pytest.raises(error, match=match):
        lower_probability(bad, [[0]])
    with pytest.raises(error, match=match):
        choquet_integral([0.0, 1.0], bad)
    with pytest.raises(error, match=match):
        lower_total_variation(bad, bad)


def test_ragged_and_sparse_other_arguments():
    from scipy import sparse

    P = _dirichlet(0, 2, 3, 4)
    with pytest.raises(ValueError, match="ragged"):
        choquet_integral([[0.0, 1.0, 2.0, 3.0], [1.0]], P)
    with pytest.raises(TypeError, match="sparse"):
        lower_probability(P, sparse.csr_matrix(np.eye(4, dtype=bool)))
    with pytest.raises(ValueError, match="ragged"):
        accuracy_rejection_curve([0, 1], [0, 1], [[0.1], [0.2, 0.3]])


def test_n_jobs_zero_fails_validation(iris):
    from sklearn.utils._param_validation import InvalidParameterError

    from sklearn_cispa.utils import parallel_map

    X, y = iris
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        _light(n_jobs=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        parallel_map(abs, [(1,)], n_jobs=0)


def test_members_inner_n_jobs_pinned_in_a_parallel_fit(iris):
    from sklearn.ensemble import RandomForestClassifier

    X, y = iris
    rf = RandomForestClassifier(n_estimators=5, n_jobs=-1)
    serial = MMIUncertainty(rf, n_members=3, random_state=0).fit(X, y)
    parallel = MMIUncertainty(rf, n_members=3, random_state=0, n_jobs=2).fit(X, y)
    assert [e.n_jobs for e in serial.estimators_] == [-1, -1, -1]  # user's choice kept
    assert [e.n_jobs for e in parallel.estimators_] == [1, 1, 1]
    assert_array_equal(serial.transform(X), parallel.transform(X))


def test_validation_runs_once_per_public_call(iris, monkeypatch):
    from sklearn_cispa.uncertainty import _iipm

    calls = []
    original = _iipm._check_credal

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_iipm, "_check_credal", counting)
    P = _dirichlet(0, 50, 5, 4)
    for method in ("exact", "linear", "bruteforce"):
        calls.clear()
        maximum_mean_imprecision(P, method=method)
        assert len(calls) == 1, method
    X, y = iris
    model = _light().fit(X, y)
    calls.clear()
    model.transform(X)
    assert calls == []  # the members' aligned probabilities are not re-validated


def test_public_mmi_matches_plain_numpy_peers():
    """The public function against its plain numpy peers on the tensor of issue 16.

    Its cost relative to them (issue 16: exact 0.1-0.6x a pair loop, linear 1.2-1.3x)
    is tracked by the ASV benchmark ``bench_mmi.MMIRatioToPlainNumpy``, not asserted here
    (no wall-clock assertions in tests, issue 35).
    """
    P = np.random.default_rng(0).dirichlet(np.ones(100), size=(1000, 10))

    def pair_loop():
        best = np.zeros(P.shape[0])
        for i in range(10):
            for j in range(i + 1, 10):
                np.maximum(best, 0.5 * np.abs(P[:, i] - P[:, j]).sum(-1), out=best)
        return best

    assert_allclose(maximum_mean_imprecision(P), pair_loop(), atol=1e-12)
    assert_allclose(maximum_mean_imprecision(P, "linear"), 1.0 - P.min(axis=1).sum(-1), atol=1e-12)
