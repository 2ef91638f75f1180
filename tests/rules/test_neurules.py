"""Tests of NeurulesClassifier (issue 5, spec /shared/specs/neurules.md)."""

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

from sklearn_cispa.report import planted_rule_table, survey_like_table
from sklearn_cispa.rules import NeurulesClassifier, Rule
from sklearn_cispa.rules._neurules import _CONJUNCTION_EPS, _soft_forward

FOLDS = KFold(5, shuffle=True, random_state=42)


def reference_predict(rules, default, X):
    """Plain re-implementation of a printed rule list (first match, else default)."""
    out = []
    for x in np.asarray(X, dtype=float):
        label = default
        for rule in rules:
            if all(low < x[f] < high for f, low, high in rule.conditions):
                label = rule.prediction
                break
        out.append(label)
    return np.array(out)


def thresholds_in_range(clf, X_train):
    lo, hi = X_train.min(axis=0), X_train.max(axis=0)
    for rule in clf.rules_:
        for f, low, high in rule.conditions:
            for v in (low, high):
                if np.isfinite(v) and not (lo[f] <= v <= hi[f]):
                    return False
            if not low < high:
                return False
    return True


def planted(n, rng):
    return planted_rule_table(n, rng)


@pytest.fixture(scope="module")
def breast_cancer_first_fold():
    X, y = load_breast_cancer(return_X_y=True)
    train, test = next(iter(FOLDS.split(X)))
    clf = NeurulesClassifier(n_rules=10, random_state=42).fit(X[train], y[train])
    return clf, X, y, train, test


@pytest.fixture(scope="module")
def iris_small():
    X, y = load_iris(return_X_y=True)
    clf = NeurulesClassifier(n_rules=5, max_epochs=100, random_state=0).fit(X, y)
    return clf, X, y


# --------------------------------------------------------------------------------------
# Closed forms of the relaxed model
# --------------------------------------------------------------------------------------
def test_soft_predicate_and_conjunction_closed_form():
    # F = 2 features, R = 1 rule, interval (-1, 1) on both, weights (1, 3)
    a = torch.full((2, 1), -1.0, dtype=torch.float64)
    b = torch.full((2, 1), 1.0, dtype=torch.float64)
    W = torch.tensor([[1.0, 3.0]], dtype=torch.float64)
    mask = torch.ones_like(W)
    p = torch.zeros(1, dtype=torch.float64)
    H = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    x = torch.tensor([[0.3, -0.5], [2.0, 0.0]], dtype=torch.float64)
    t = 0.2
    xa = x.numpy()[:, :, None]
    d1 = (xa - a.numpy()) / t
    d2 = (2 * xa - a.numpy() - b.numpy()) / t
    q = np.exp(d1) / (1 + np.exp(d1) + np.exp(d2))
    w = W.numpy()[0]
    eta = _CONJUNCTION_EPS / w.sum()
    c = w.sum() / ((w * (1 + eta) / (q[:, :, 0] + eta)).sum(axis=1))
    logits, g = _soft_forward(torch, x, a, b, W, mask, p, H, t, 1.0)
    # a single rule is always selected, so the logits are H's column
    assert np.allclose(g.numpy(), 1.0)
    assert np.allclose(logits.numpy(), [[0.0, 1.0], [0.0, 1.0]])
    # check c through a second rule slot that never fires (all weights 0 -> score 0)
    a2, b2 = a.repeat(1, 2), b.repeat(1, 2)
    W2 = torch.cat([W, torch.zeros_like(W)])
    p2 = torch.zeros(2, dtype=torch.float64)
    H2 = torch.eye(2, dtype=torch.float64)
    _, g2 = _soft_forward(torch, x, a2, b2, W2, torch.ones_like(W2), p2, H2, t, 1.0)
    # g = softmax((c * 1, 0) / 1): first entry is sigmoid(c)
    assert np.allclose(g2.numpy()[:, 0], 1 / (1 + np.exp(-c)))
    # as T_p -> 0 the predicate tends to the indicator of a < x < b, and c to AND
    logits, g = _soft_forward(torch, x, a2, b2, W2, torch.ones_like(W2), p2, H2, 1e-3, 1.0)
    c_hard = np.log(g.numpy()[:, 0] / g.numpy()[:, 1])
    assert c_hard[0] == pytest.approx(1.0, abs=1e-6)  # both predicates hold
    assert c_hard[1] < 0.01  # x0 = 2 is outside (-1, 1)


def test_extraction_closed_form():
    """Section 3.6: open sides, impossible and always-firing rules, default class."""
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [3.0, 1.0], [4.0, 0.0], [5.0, 1.0]])
    y = np.array(["a", "a", "b", "b", "b", "a"])
    clf = NeurulesClassifier(n_rules=4, max_epochs=2, minimal_list=False, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 2 epochs: not the point here
        clf.fit(X, y)
    mean, scale = clf._mean, clf._scale
    lo, hi = clf._lo, clf._hi

    def std(v, f):
        return (v - mean[f]) / scale[f]

    a = np.repeat(lo[:, None], 4, axis=1)
    b = np.repeat(hi[:, None], 4, axis=1)
    # rule 0 (priority 0.9): 1.5 < x0, x1 weight 0 -> "x0 > 1.5" ; class b
    a[0, 0] = std(1.5, 0)
    # rule 1 (priority 0.8): x0 < 4.5 and x1 untouched (both open -> dropped) ; class a
    b[0, 1] = std(4.5, 0)
    # rule 2 (priority 0.95): lower cut above the maximum -> can never fire, skipped
    a[0, 2] = hi[0] + 1.0
    # rule 3 (priority 0.5): no finite cut at all -> always fires, it and later dropped
    W = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    clf._a, clf._b, clf._W = a, b, W
    clf._p = np.array([0.9, 0.8, 0.95, 0.5])
    clf._H = np.array([[0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])  # (K=2, R=4)
    clf._extract(X, np.searchsorted(clf.classes_, y))
    assert clf.n_rules_ == 2 and clf.n_conditions_ == 2
    r0, r1 = clf.rules_
    assert r0.conditions == ((0, pytest.approx(1.5), np.inf),) and r0.prediction == "b"
    assert r1.conditions == ((0, -np.inf, pytest.approx(4.5)),) and r1.prediction == "a"
    # rows with x0 > 1.5 fire r0, the others r1: every row is covered, so the default is
    # the majority over all training rows (a: 3, b: 3, a tie -> first in classes_)
    assert clf.default_class_ == "a"
    assert clf.predict(X).tolist() == ["a", "a", "b", "b", "b", "b"]
    assert clf.export_text().splitlines() == [
        "if x0 > 1.5 then b",
        "else if x0 < 4.5 then a",
        "else a",
    ]
    proba = clf.predict_proba(X)
    assert np.allclose(proba[0], np.exp([2, 0]) / np.exp([2, 0]).sum())
    assert np.allclose(proba[2], np.exp([0, 1]) / np.exp([0, 1]).sum())
    # the minimal list (issue 24): without "x0 < 4.5 -> a" rows 0 and 1 are uncovered,
    # the default becomes their majority "a", and no training prediction changes
    clf.set_params(minimal_list=True)
    clf._extract(X, np.searchsorted(clf.classes_, y))
    assert clf.export_text().splitlines() == ["if x0 > 1.5 then b", "else a"]
    assert clf.predict(X).tolist() == ["a", "a", "b", "b", "b", "b"]
    assert np.allclose(clf.predict_proba(X)[0], [1.0, 0.0])  # the uncovered rows: all "a"


def test_rule_value_object():
    rule = Rule(((2, -np.inf, 0.5), (0, 1.0, 3.123456)), "yes", feature_names=("a", "b", "c"))
    assert rule.conditions == ((0, 1.0, 3.123456), (2, -np.inf, 0.5))  # sorted by feature
    # thresholds print exactly (issue 15): the shortest text that parses back
    assert str(rule) == "if 1 < a < 3.123456 and c < 0.5 then yes"
    assert rule.to_text(["u", "v", "w"]) == "if 1 < u < 3.123456 and w < 0.5 then yes"
    assert rule == Rule(((0, 1.0, 3.123456), (2, -np.inf, 0.5)), "yes")  # names not compared
    assert hash(rule) == hash(Rule(((0, 1.0, 3.123456), (2, -np.inf, 0.5)), "yes"))
    with pytest.raises(AttributeError):
        rule.prediction = "no"
    X = np.array([[2.0, 0, 0.0], [2.0, 0, 0.6], [1.0, 0, 0.0]])
    assert rule.covers(X).tolist() == [True, False, False]  # strict inequalities


# --------------------------------------------------------------------------------------
# The spec's experiments
# --------------------------------------------------------------------------------------
def test_breast_cancer_first_fold(breast_cancer_first_fold):
    clf, X, y, train, test = breast_cancer_first_fold
    assert clf.score(X[test], y[test]) >= 0.90
    assert 1 <= clf.n_rules_ <= 10
    assert thresholds_in_range(clf, X[train])
    assert len(clf.loss_curve_) == 500 and np.all(np.isfinite(clf.loss_curve_))
    assert clf._final_temperatures == pytest.approx((0.04, 0.2))


@pytest.mark.slow
def test_breast_cancer_five_folds(breast_cancer_first_fold):
    """Acceptance: 5-fold mean accuracy >= 0.92 with at most 10 rules (spec 7.1)."""
    first, X, y, _, _ = breast_cancer_first_fold
    accs, cart = [], []
    for i, (train, test) in enumerate(FOLDS.split(X)):
        if i == 0:
            clf = first
        else:
            clf = NeurulesClassifier(n_rules=10, random_state=42).fit(X[train], y[train])
        accs.append(clf.score(X[test], y[test]))
        assert 1 <= clf.n_rules_ <= 10
        assert thresholds_in_range(clf, X[train])
        tree = DecisionTreeClassifier(max_leaf_nodes=10, random_state=0).fit(X[train], y[train])
        cart.append(tree.score(X[test], y[test]))
    accs = np.array(accs)
    assert accs.mean() >= 0.92, accs
    assert (accs >= 0.90).sum() >= 4, accs
    assert accs.mean() >= np.mean(cart) - 0.02, (accs, cart)


@pytest.mark.slow
@pytest.mark.parametrize("loader, threshold", [(load_iris, 0.90), (load_wine, 0.85)])
def test_multiclass_smoke(loader, threshold):
    # 300 epochs instead of 500 to save CI time (measured 0.96 / 0.955 with 300,
    # 0.953 / 0.961 with 500 on these folds)
    X, y = loader(return_X_y=True)
    accs = []
    for train, test in FOLDS.split(X):
        clf = NeurulesClassifier(n_rules=15, max_epochs=300, random_state=42)
        clf.fit(X[train], y[train])
        accs.append(clf.score(X[test], y[test]))
        assert clf.n_rules_ <= 15
    assert np.mean(accs) >= threshold, accs


@pytest.mark.slow
def test_planted_rule_list():
    """Spec 7.4. The threshold check is specific enough to fail for random thresholds:
    every planted cut (0.6 and 0.2 on x0, 0.3 on x1, 0.7 on x2) must be recovered
    within 0.03 by a finite threshold on its own feature (either side: the list may
    write the complement). Replacing the learned thresholds of this fit's list by
    U(0, 1) draws passes this check in 0.0-0.13% of 4000 draws (seeds 0-2; the former
    check "any threshold within 0.05 of any planted value" passed in 95-99%)."""
    rng = np.random.default_rng(0)
    X, y = planted(1000, rng)
    X_test, y_test = planted(1000, rng)
    clf = NeurulesClassifier(n_rules=10, random_state=0).fit(X, y)
    acc = clf.score(X_test, y_test)
    assert acc >= 0.93  # acceptance (spec 7.4)
    assert acc >= 0.97  # regression guard: measured 0.989 / 0.985 / 0.982 for seeds 0 / 1 / 2
    conds = [c for rule in clf.rules_ for c in rule.conditions]
    for feature, cut in [(0, 0.6), (1, 0.3), (2, 0.7), (0, 0.2)]:
        assert any(
            f == feature and np.isfinite(v) and abs(v - cut) < 0.03
            for f, low, high in conds
            for v in (low, high)
        ), (feature, cut, clf.export_text())


def test_hard_list_equals_printed_rules(breast_cancer_first_fold):
    clf, X, y, train, test = breast_cancer_first_fold
    names = load_breast_cancer().feature_names
    for rows in (train, test):
        assert np.array_equal(
            reference_predict(clf.rules_, clf.default_class_, X[rows]), clf.predict(X[rows])
        )
        proba = clf.predict_proba(X[rows])
        assert np.allclose(proba.sum(axis=1), 1.0)
        assert np.array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X[rows]))
    lines = clf.export_text(feature_names=names).splitlines()
    assert len(lines) == clf.n_rules_ + 1
    for i, (line, rule) in enumerate(zip(lines, clf.rules_)):
        assert line.startswith("if " if i == 0 else "else if ")
        assert line.endswith(f"then {rule.prediction}")
        for f, _, _ in rule.conditions:
            assert names[f] in line
    assert lines[-1] == f"else {clf.default_class_}"
    # the noise-free relaxed model at the final temperatures agrees with the hard list
    soft = clf.classes_[clf._soft_predict_proba(X[test]).argmax(axis=1)]
    assert np.mean(soft == clf.predict(X[test])) >= 0.85


def test_reproducible_and_label_invariant(iris_small):
    clf, X, y = iris_small
    again = NeurulesClassifier(n_rules=5, max_epochs=100, random_state=0).fit(X, y)
    assert again.rules_ == clf.rules_ and again.default_class_ == clf.default_class_
    names = np.array(["setosa", "versicolor", "virginica"])
    relabelled = NeurulesClassifier(n_rules=5, max_epochs=100, random_state=0).fit(X, names[y])
    assert [r.conditions for r in relabelled.rules_] == [r.conditions for r in clf.rules_]
    assert [r.prediction for r in relabelled.rules_] == [names[r.prediction] for r in clf.rules_]
    assert relabelled.default_class_ == names[clf.default_class_]
    assert np.array_equal(relabelled.predict(X), names[clf.predict(X)])


def test_global_torch_rng_untouched():
    X, y = load_iris(return_X_y=True)
    state = torch.get_rng_state()
    NeurulesClassifier(n_rules=3, max_epochs=4, random_state=0).fit(X, y)
    assert torch.equal(state, torch.get_rng_state())


def test_minibatches_and_verbose(capsys):
    X, y = load_iris(return_X_y=True)
    clf = NeurulesClassifier(n_rules=4, max_epochs=20, batch_size=32, verbose=1, random_state=1)
    clf.fit(X, y)
    out = capsys.readouterr().out
    assert 5 <= out.count("epoch") <= 12
    assert clf._final_temperatures == pytest.approx((0.04, 0.2))
    assert clf.loss_curve_.shape == (20,)
    assert thresholds_in_range(clf, X)


def test_dataframe_feature_names_and_pickle():
    data = load_iris(as_frame=True)
    X, y = data.data, data.target
    clf = NeurulesClassifier(n_rules=5, max_epochs=100, random_state=0).fit(X, y)
    text = clf.export_text()
    assert any(name in text for name in X.columns)
    assert "x0" not in text
    assert [str(r) for r in clf.rules_] == [
        line.removeprefix("else ") for line in text.splitlines()[:-1]
    ]
    clone = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(clone.predict(X), clf.predict(X))
    assert np.array_equal(clone.predict_proba(X), clf.predict_proba(X))
    assert clone.export_text() == text
    with pytest.raises(ValueError, match="feature_names"):
        clf.export_text(feature_names=["a", "b"])


def test_pipeline_with_imputer_and_encoder_and_gridsearch():
    rng = np.random.default_rng(0)
    n = 120
    num = rng.normal(size=(n, 2))
    cat = rng.choice(["red", "green", "blue"], size=n)
    y = ((num[:, 0] > 0) | (cat == "red")).astype(int)
    num[rng.random(n) < 0.1, 1] = np.nan
    X = pd.DataFrame({"a": num[:, 0], "b": num[:, 1], "colour": cat})
    pre = ColumnTransformer(
        [
            ("num", SimpleImputer(), ["a", "b"]),
            ("cat", OneHotEncoder(sparse_output=False), ["colour"]),
        ]
    )
    pipe = make_pipeline(pre, NeurulesClassifier(max_epochs=60, random_state=0))
    grid = GridSearchCV(
        pipe,
        {"neurulesclassifier__n_rules": [2, 4], "neurulesclassifier__min_support": [0.1, 0.3]},
        cv=2,
    )
    grid.fit(X, y)
    assert grid.best_estimator_[-1].n_rules_ <= grid.best_params_["neurulesclassifier__n_rules"]
    assert grid.score(X, y) > 0.7


# --------------------------------------------------------------------------------------
# Properties and bad input
# --------------------------------------------------------------------------------------
@settings(deadline=None, max_examples=10)
@given(
    n=st.integers(8, 30),
    n_features=st.integers(1, 3),
    n_rules=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    batch=st.sampled_from([None, 5]),
    log_scale=st.floats(-6, 9),
    offset=st.sampled_from([0.0, -1000.0, 1.7e9]),
)
def test_properties(n, n_features, n_rules, seed, batch, log_scale, offset):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * rng.uniform(0.1, 100, size=n_features)
    X = X * 10.0**log_scale + offset  # units from 1e-6 to 1e9, with offsets (issue 12)
    y = np.arange(n) % 2
    rng.shuffle(y)
    X_copy, y_copy = X.copy(), y.copy()
    clf = NeurulesClassifier(
        n_rules=n_rules, max_epochs=10, batch_size=batch, random_state=seed
    ).fit(X, y)
    assert np.array_equal(X, X_copy) and np.array_equal(y, y_copy)
    assert clf.n_rules_ <= n_rules
    assert np.all(clf._a <= clf._b)  # cut points ordered after every step
    assert thresholds_in_range(clf, X)
    X_new = rng.normal(size=(10, n_features)) * 50 * 10.0**log_scale + offset
    X_new_copy = X_new.copy()
    assert np.array_equal(
        reference_predict(clf.rules_, clf.default_class_, X_new), clf.predict(X_new)
    )
    assert np.array_equal(X_new, X_new_copy)
    assert clf.n_conditions_ == sum(len(r.conditions) for r in clf.rules_)
    # the printed text, re-parsed, is the model (issue 15)
    names = [f"x{i}" for i in range(n_features)]
    rules, default = parse_rule_list(clf.export_text(), names)
    for P in (X, X_new):
        assert np.array_equal(
            evaluate_parsed(rules, default, P), clf.predict(P).astype(str).astype(object)
        )


def test_constant_features_give_empty_list():
    X = np.ones((20, 3))
    y = np.array([0] * 8 + [1] * 12)
    clf = NeurulesClassifier(n_rules=3, max_epochs=6, random_state=0).fit(X, y)
    assert clf.n_rules_ == 0 and clf.rules_ == []
    assert clf.default_class_ == 1
    assert np.all(clf.predict(X) == 1)
    assert np.allclose(clf.predict_proba(X), [0.4, 0.6])
    assert clf.export_text() == "1"


def test_constant_column_never_enters_a_rule():
    X, y = load_iris(return_X_y=True)
    X = np.column_stack([X, np.full(len(X), 7.0)])
    clf = NeurulesClassifier(n_rules=4, max_epochs=60, random_state=0).fit(X, y)
    assert all(f != 4 for r in clf.rules_ for f, _, _ in r.conditions)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"predicate_temperature": (0.04, 0.2)}, "predicate_temperature"),
        ({"selector_temperature": (1.0, 0.0)}, "selector_temperature"),
        ({"selector_temperature": (1.0, 0.5, 0.2)}, "selector_temperature"),
        ({"predicate_temperature": (np.nan, 0.1)}, "predicate_temperature"),
        ({"n_rules": 0}, "n_rules"),
        ({"max_epochs": 1}, "max_epochs"),
        ({"min_support": 0.0}, "min_support"),
    ],
)
def test_bad_parameters(params, match):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match=match):
        NeurulesClassifier(**{"max_epochs": 2, **params}).fit(X, y)


def test_bad_input():
    X, y = load_iris(return_X_y=True)
    clf = NeurulesClassifier(max_epochs=2)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(X_nan, y)
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        clf.fit(X_inf, y)
    with pytest.raises(ValueError, match="class"):
        clf.fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="Unknown label type"):
        clf.fit(X, np.linspace(0, 1, len(X)))
    clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(X_nan)


@pytest.mark.gpu
def test_cuda_fit_matches_cpu_contract():
    X, y = load_iris(return_X_y=True)
    clf = NeurulesClassifier(n_rules=4, max_epochs=60, device="cuda", random_state=0).fit(X, y)
    assert clf.n_rules_ <= 4 and thresholds_in_range(clf, X)
    assert np.array_equal(reference_predict(clf.rules_, clf.default_class_, X), clf.predict(X))
    again = NeurulesClassifier(n_rules=4, max_epochs=60, device="cuda", random_state=0).fit(X, y)
    assert again.rules_ == clf.rules_


def test_cuda_request_without_gpu_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="CUDA"):
        NeurulesClassifier(max_epochs=2, device="cuda").fit(X, y)


# --------------------------------------------------------------------------------------
# Issue 15: the printed list is the model, at any scale
# --------------------------------------------------------------------------------------
_NUMBER = r"[-+]?(?:inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?|\.\d+(?:e[-+]?\d+)?)"
_INTERVAL = re.compile(rf"^({_NUMBER}) < (\S+) < ({_NUMBER})$")
_BOUND = re.compile(rf"^(\S+) ([<>]) ({_NUMBER})$")


def parse_rule_list(text, feature_names):
    """Independent parser of ``export_text``: returns (rules, default) with conditions
    as (feature index, low, high) read from the printed numbers only."""
    index = {name: i for i, name in enumerate(feature_names)}
    lines = text.splitlines()
    rules = []
    for k, line in enumerate(lines[:-1]):
        prefix = "if " if k == 0 else "else if "
        assert line.startswith(prefix), line
        body, label = line[len(prefix) :].rsplit(" then ", 1)
        conds = []
        for part in body.split(" and "):
            m = _INTERVAL.match(part)
            if m:
                conds.append((index[m.group(2)], float(m.group(1)), float(m.group(3))))
                continue
            m = _BOUND.match(part)
            assert m, part
            value = float(m.group(3))
            low, high = (value, np.inf) if m.group(2) == ">" else (-np.inf, value)
            conds.append((index[m.group(1)], low, high))
        rules.append((conds, label))
    default = lines[-1].removeprefix("else ")
    return rules, default


def evaluate_parsed(rules, default, X):
    out = np.full(len(X), default, dtype=object)
    free = np.ones(len(X), dtype=bool)
    for conds, label in rules:
        m = free.copy()
        for f, low, high in conds:
            m &= (X[:, f] > low) & (X[:, f] < high)
        out[m] = label
        free &= ~m
    return out


# (scale, offset) per column: micro units, a timestamp in seconds, an offset year-like
# column, large and tiny magnitudes
_SCALES = [(1e-6, 0.0), (3600.0, 1.7e9), (1.0, 1000.0), (1e6, 0.0), (1e9, 0.0), (1e-3, -5.0)]


def _multiscale_data(n, seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, len(_SCALES)))
    y = np.where((Z[:, 0] > 0.2) & (Z[:, 1] < 0.6), "hi", np.where(Z[:, 3] > 0.9, "mid", "lo"))
    X = np.column_stack([c * Z[:, j] + o for j, (c, o) in enumerate(_SCALES)])
    return X, y


@pytest.mark.parametrize("seed", [0, 1])
def test_printed_list_reproduces_predict_at_every_scale(seed):
    X, y = _multiscale_data(400, seed)
    names = ["micro", "ts", "year", "big", "giga", "milli"]
    clf = NeurulesClassifier(n_rules=6, max_epochs=150, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    assert clf.n_rules_ >= 1
    text = clf.export_text(feature_names=names)
    rules, default = parse_rule_list(text, names)
    assert len(rules) == clf.n_rules_
    # rows on and next to every printed threshold: any rounding would flip some of them
    probes = [X, _multiscale_data(400, seed + 100)[0]]
    for rule in clf.rules_:
        for f, low, high in rule.conditions:
            for v in (low, high):
                if np.isfinite(v):
                    for w in (np.nextafter(v, -np.inf), v, np.nextafter(v, np.inf)):
                        row = X[:1].copy()
                        row[0, f] = w
                        probes.append(np.repeat(row, 1, axis=0))
                        probes.append(
                            np.tile(np.where(np.arange(X.shape[1]) == f, w, X[:40]), (1, 1))
                        )
    for P in probes:
        assert np.array_equal(evaluate_parsed(rules, default, P), clf.predict(P).astype(object))
    # the test is about a fitted list: finite thresholds were probed, and the list
    # beats the majority class
    assert len(probes) > 2
    majority = max(np.mean(y == c) for c in np.unique(y))
    assert clf.score(X, y) > majority


def test_thresholds_are_short_and_split_training_rows_as_learned():
    """Oracle in standardised units: the learned cuts, evaluated as a first-match list
    on the standardised training rows (no extraction, no mapping back), give the same
    predictions as ``rules_`` in the caller's units; and the printed numbers are short."""
    X, y = _multiscale_data(300, 3)
    clf = NeurulesClassifier(n_rules=6, max_epochs=150, minimal_list=False, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    Xs = (X - clf._mean) / clf._scale
    lo, hi = Xs.min(axis=0), Xs.max(axis=0)
    pred = np.full(len(X), -1)
    for r in np.argsort(-clf._p, kind="stable"):
        used = np.flatnonzero((clf._W[r] > 0) & (lo < hi))
        if used.size == 0:
            continue
        a, b = clf._a[used, r], clf._b[used, r]
        fires = np.all(
            ((a <= lo[used]) | (Xs[:, used] > a)) & ((b >= hi[used]) | (Xs[:, used] < b)), axis=1
        )
        new = fires & (pred < 0)
        pred[new] = int(np.argmax(clf._H[:, r]))
    counts = np.bincount(np.searchsorted(clf.classes_, y)[pred < 0], minlength=3)
    pred[pred < 0] = np.argmax(counts) if counts.sum() else pred[pred < 0]
    assert np.array_equal(clf.classes_[pred], clf.predict(X))
    assert clf.n_conditions_ >= 1
    for rule in clf.rules_:
        for _, low, high in rule.conditions:
            for v in (low, high):
                if np.isfinite(v):
                    # the exact text of the float, at most 13 characters: a timestamp
                    # near 1.7e9 prints as ten digits, not as 1.7000019672345678e+09
                    assert len(repr(v)) <= 13, v


# --------------------------------------------------------------------------------------
# Issue 12: units, offsets, divergence
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "scale, offset",
    [(1e-6, 0.0), (1e6, 0.0), (1.0, 1000.0), (1.0, 1.7e9), (3600.0, 1.7e9), (1e-6, 1000.0)],
)
def test_rule_list_equivariant_under_offset_and_rescaling(scale, offset):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = ((X[:, 0] > 0.3) & (X[:, 1] < 0.5) | (X[:, 2] > 1.0)).astype(int)
    kw = {"n_rules": 5, "max_epochs": 150, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        base = NeurulesClassifier(**kw).fit(X, y)
        moved = NeurulesClassifier(**kw).fit(X * scale + offset, y)
    assert base.n_rules_ >= 1
    # same split of every training row (measured: identical for all six settings)
    assert np.array_equal(moved.predict(X * scale + offset), base.predict(X))
    assert [sorted(f for f, _, _ in r.conditions) for r in moved.rules_] == [
        sorted(f for f, _, _ in r.conditions) for r in base.rules_
    ]
    # thresholds map back: (t' - offset) / scale lies within the column's training gap
    for r0, r1 in zip(base.rules_, moved.rules_):
        for (f, lo0, hi0), (_, lo1, hi1) in zip(r0.conditions, r1.conditions):
            col = np.sort(X[:, f])
            for t0, t1 in ((lo0, lo1), (hi0, hi1)):
                assert np.isfinite(t0) == np.isfinite(t1)
                if np.isfinite(t0):
                    k = np.searchsorted(col, t0)
                    back = (t1 - offset) / scale
                    gap = col[max(k - 1, 0)], col[min(k, len(col) - 1)]
                    slack = 1e-6 * max(1.0, abs(offset) / scale) * 1e-3
                    assert gap[0] - slack <= back <= gap[1] + slack, (t0, back, gap)


def test_divergence_is_reported():
    X, y = load_iris(return_X_y=True)
    # a huge learning rate throws every cut outside the data: no rule survives -> warning
    with pytest.warns(ConvergenceWarning, match="predicts one class"):
        NeurulesClassifier(n_rules=4, max_epochs=40, lr=1e3, random_state=0).fit(X, y)
    # a learning rate so small that nothing moves: with the reference's initial cuts
    # (the whole training range) every rule is a no-op -> warning
    with pytest.warns(ConvergenceWarning, match="predicts one class"):
        NeurulesClassifier(max_epochs=20, lr=1e-12, cut_init="range", random_state=0).fit(X, y)
    # parameters that overflow raise a clear error instead of returning garbage
    with pytest.raises(ValueError, match="diverged|lr"):
        NeurulesClassifier(n_rules=4, max_epochs=40, lr=1e30, cut_init="range", random_state=0).fit(
            X, y
        )
    # from quantile cuts the same lr leaves finite but useless parameters: warned
    with pytest.warns(ConvergenceWarning, match="predicts one class"):
        NeurulesClassifier(
            n_rules=4, max_epochs=40, lr=1e30, cut_init="quantile", random_state=0
        ).fit(X, y)
    with pytest.raises(ValueError, match="lr"):
        NeurulesClassifier(n_rules=4, max_epochs=4, lr=1e300, random_state=0).fit(X, y)


def test_fused_training_gradient_matches_autograd_oracle():
    """The closed-form backward of the fused block equals autograd on _soft_forward."""
    from sklearn_cispa.rules._neurules import _train_forward

    g = torch.Generator().manual_seed(0)
    B, F, R, K = 7, 3, 4, 3
    kw = {"dtype": torch.float64}
    x = torch.randn(B, F, generator=g, **kw) * 3
    a0 = torch.randn(F, R, generator=g, **kw) - 1
    b0 = a0 + torch.rand(F, R, generator=g, **kw) * 3
    W0 = torch.rand(R, F, generator=g, **kw) - 0.2
    p0, H0 = torch.rand(R, generator=g, **kw), torch.randn(K, R, generator=g, **kw)
    noise = torch.randn(B, R, generator=g, **kw)
    mask = torch.ones(R, F, **kw)
    mask[:, 1] = 0
    y = torch.tensor([0, 1, 2, 0, 1, 2, 0])
    out = []
    for fused in (False, True):
        a, b, W, p, H = (t.clone().requires_grad_() for t in (a0, b0, W0, p0, H0))
        tp, ts = 0.3, 0.7
        if fused:
            logits, sel = _train_forward(
                torch, x / tp, a, b, torch.relu(W) * mask, p, H, 1 / tp, ts, noise
            )
        else:
            logits, sel = _soft_forward(torch, x, a, b, W, mask, p, H, tp, ts, noise)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss = loss + 0.4 * torch.relu(0.3 - sel.mean(0)).mean()
        loss.backward()
        out.append([loss.detach()] + [t.grad.clone() for t in (a, b, W, p, H)])
    for u, v in zip(out[0], out[1]):
        assert torch.allclose(u, v, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------------------
# Issue 24: minimal list, class weights, defaults, convergence warning
# --------------------------------------------------------------------------------------
def test_minimal_list_on_real_data(breast_cancer_first_fold):
    clf, X, y, train, test = breast_cancer_first_fold
    from sklearn_cispa.rules._neurules import _firing_index, _list_predictions

    Xtr, ytr = X[train], np.searchsorted(clf.classes_, y[train])
    which = _firing_index(clf.rules_, Xtr)
    proba = list(clf._rule_proba)
    full = _list_predictions(clf.rules_, proba, Xtr, ytr, np.ones(2), 2)
    for i in range(clf.n_rules_):
        assert (which == i).any(), "a printed rule never fires first on a training row"
        rest = _list_predictions(
            clf.rules_[:i] + clf.rules_[i + 1 :],
            proba[:i] + proba[i + 1 :],
            Xtr,
            ytr,
            np.ones(2),
            2,
        )
        assert not np.array_equal(rest, full), f"rule {i} can be removed"
    # the unpruned list of the same fit is at least as long and predicts the same rows
    raw = clone_with(clf, minimal_list=False)
    raw._extract(Xtr, ytr)
    assert raw.n_rules_ >= clf.n_rules_
    assert np.array_equal(raw.predict(Xtr), clf.predict(Xtr))


def clone_with(clf, **params):
    twin = pickle.loads(pickle.dumps(clf))
    return twin.set_params(**params)


def test_minimal_list_on_planted_data():
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(400, 3))
    y = ((X[:, 0] > 0.5) & (X[:, 1] < 0.5)).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pruned = NeurulesClassifier(n_rules=8, max_epochs=200, random_state=0).fit(X, y)
    raw = clone_with(pruned, minimal_list=False)
    raw._extract(X, y)
    assert pruned.n_rules_ <= raw.n_rules_
    assert np.array_equal(pruned.predict(X), raw.predict(X))
    from sklearn_cispa.rules._neurules import _firing_index

    which = _firing_index(pruned.rules_, X)
    assert all((which == i).any() for i in range(pruned.n_rules_))
    # no rule predicts the default class at the end of the list (it would be removable)
    if pruned.rules_:
        assert pruned.rules_[-1].prediction != pruned.default_class_
    assert pruned.score(X, y) >= 0.9


def test_class_weight():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = ((X[:, 0] > 1.2) & (X[:, 1] > -0.5)).astype(int)  # about 10% positives
    kw = {"n_rules": 4, "max_epochs": 150, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = NeurulesClassifier(**kw).fit(X, y)
        balanced = NeurulesClassifier(class_weight="balanced", **kw).fit(X, y)
        as_dict = NeurulesClassifier(
            class_weight={0: 1.0, 1: len(y) / (2 * y.sum()) / (len(y) / (2 * (len(y) - y.sum())))},
            **kw,
        ).fit(X, y)

    def recall(clf):
        return np.mean(clf.predict(X)[y == 1] == 1)

    assert recall(balanced) >= recall(plain)
    assert recall(balanced) >= 0.9
    assert as_dict.n_rules_ >= 1
    with pytest.raises(ValueError, match="class_weight"):
        NeurulesClassifier(class_weight="auto", max_epochs=2).fit(X, y)


def test_default_batch_size_and_dtype():
    from sklearn_cispa.rules._neurules import _auto_batch_rows

    clf = NeurulesClassifier()
    assert clf.batch_size == "auto" and clf.dtype == "float32"
    # the step budget: ceil(1000 / E) batches per epoch, at least 2048 rows each
    assert _auto_batch_rows(15216, 10, 10, 500) == 7608  # magic: two batches per epoch
    assert _auto_batch_rows(5920, 20, 10, 500) == 2960  # ring
    assert _auto_batch_rows(4000, 8, 10, 500) == 2048  # the survey-like table
    for n in (2048, 1765, 455, 150):  # titanic, breast cancer, iris: full batch
        assert _auto_batch_rows(n, 30, 10, 500) == n
    assert _auto_batch_rows(100_000, 5, 10, 10) == 2048  # 49 batches per epoch: 490 steps
    assert _auto_batch_rows(100_000, 5, 10, 50) == 5000  # 20 batches: 1000 steps
    assert _auto_batch_rows(3000, 5, 10, 10) == 2048  # the 2048-row floor
    assert _auto_batch_rows(1000, 5, 10, 10) == 1000
    # a small remainder joins the previous batch: 2,100 rows train on one batch, as
    # 2,048 rows do (identical fits), while 4,000 rows keep two (2048 + 1952)
    X, y = noisy_planted_table(2100, 0)
    kw = {"n_rules": 3, "max_epochs": 4, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = NeurulesClassifier(**kw).fit(X, y)
        full = NeurulesClassifier(batch_size=None, **kw).fit(X, y)
    assert one.batch_size_ == 2048 and one.rules_ == full.rules_
    assert np.array_equal(one.loss_curve_, full.loss_curve_)
    # the memory bound: at most 2**24 activations per step
    assert _auto_batch_rows(10**6, 100, 10, 500) == 2**24 // 1000
    assert _auto_batch_rows(10, 10**6, 100, 500) == 1
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = NeurulesClassifier(n_rules=4, max_epochs=60, random_state=0).fit(X, y)
        b = NeurulesClassifier(n_rules=4, max_epochs=60, batch_size=2048, random_state=0).fit(X, y)
        c = NeurulesClassifier(n_rules=4, max_epochs=60, dtype="float64", random_state=0).fit(X, y)
    assert a.rules_ == b.rules_  # a batch larger than the data is a full batch
    assert c.score(X, y) >= a.score(X, y) - 0.1
    with pytest.raises(ValueError, match="dtype"):
        NeurulesClassifier(dtype="float16", max_epochs=2).fit(X, y)


def planted_list_table(n, seed):
    """The spec's planted list (section 7.4) on five U(0, 1) columns, no label noise."""
    return planted_rule_table(n, seed)


@pytest.mark.slow
def test_defaults_train_as_well_on_100000_rows_as_on_500():
    """Issue 24: the step budget of batch_size="auto" does not shrink with n.

    A 100,000-row planted-list table trained for 10 epochs (the budget gives 49 batches
    of 2048 rows per epoch, 490 steps) against its first 500 rows trained with the full
    defaults (500 full-batch steps), on the same 5,000 test rows. Thresholds: the
    100,000-row fit must reach the 500-row fit's accuracy (the issue's criterion; 0.01
    slack for a single seed); measured 0.972 / 0.967 / 0.979 (quantile initial cuts,
    the default above 2048 rows; 0.976 / 0.854 / 0.976 from the reference's) against
    0.958 / 0.802 / 0.953 for seeds 0 / 1 / 2. Full batches for the same 10 epochs make 10 steps and
    reach 0.73-0.74 (measured), below 0.85: the contrast shows the budget is what
    trains the large fit.
    """
    X, y = planted_list_table(100_000, 0)
    Xte, yte = planted_list_table(5000, 99)
    small, large = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for seed in (0, 2):
            clf = NeurulesClassifier(random_state=seed).fit(X[:500], y[:500])
            small.append(clf.score(Xte, yte))
            big = NeurulesClassifier(max_epochs=10, random_state=seed).fit(X, y)
            assert big.batch_size_ == 2048
            large.append(big.score(Xte, yte))
            assert large[-1] >= small[-1] - 0.01, (seed, small, large)
        full = NeurulesClassifier(max_epochs=10, batch_size=None, random_state=0).fit(X, y)
    assert np.mean(large) >= 0.93  # the spec's planted-list threshold (section 7.4)
    assert full.batch_size_ == 100_000 and full.score(Xte, yte) < 0.85


def test_convergence_warning_when_loss_still_falls():
    X, y = load_breast_cancer(return_X_y=True)
    # a learning rate 10x below the default leaves the loss falling at its full rate
    # (measured: 16-25% of the total progress made in the last tenth of the epochs)
    with pytest.warns(ConvergenceWarning, match="still falling"):
        NeurulesClassifier(n_rules=10, max_epochs=300, lr=1e-3, random_state=0).fit(X, y)
    # iris with enough epochs: converged, no warning (measured 4%)
    Xi, yi = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        NeurulesClassifier(n_rules=6, max_epochs=500, random_state=0).fit(Xi, yi)


def survey_table(n, seed):
    """Survey-like table: 8 ordinal, count and binary columns, about 32% positives."""
    return survey_like_table(n, seed)


def noisy_planted_table(n, seed):
    """Continuous columns in mixed units, a planted 3-rule list, 10% flipped labels."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.uniform(0, 3, n),
            rng.normal(0, 1, n),
            rng.uniform(0, 1, n),
            rng.uniform(0, 1000, n),
            rng.normal(0, 1, n),
            rng.uniform(0, 10, n),
        ]
    )
    y = np.where(
        (X[:, 0] > 1.5) & (X[:, 1] < 0),
        1,
        np.where(X[:, 2] > 0.7, 0, np.where(X[:, 3] < 300, 1, 0)),
    )
    return X, np.where(rng.random(n) < 0.1, 1 - y, y)


_SURVEY_XFAIL = (
    "issue 24 not met on the survey-like table: with the defaults (quantile cuts and "
    "checkpoints) seeds 0-8 give 0.7265 / 0.7265 / 0.731 / 0.7245 / 0.72 / 0.7285 / "
    "0.7245 / 0.695 / 0.7265 (spread 0.036; without checkpoints 0.038, seed 7 at "
    "0.6955). Not a convergence failure and not an extraction failure: seed 7's list "
    "fits its training rows as well as the seeds that generalise (training accuracy "
    "0.730 against 0.7258 for seeds 6 and 8), so neither checkpoints nor restarts "
    "selected by training accuracy can see it; its first rule, x3 > 2.5 and x5 > 50 "
    "-> 1, covers a region where the true P(y=1) is about 0.3-0.5. The reference code "
    "spreads more on this split (0.675-0.7205, four of nine seeds below majority + "
    "0.025). The issue's real survey table (Fair's affairs data) meets the target: "
    "see test_stable_accuracy_across_seeds_on_the_fair_survey and the user guide."
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "make_table, margin, seeds",
    [
        # the survey-like synthetic table: majority 0.680, CART (10 leaves) 0.7245, Bayes
        # rule 0.738. Seeds 0-8 with cut_init="range" (the former default): 0.718 /
        # 0.7265 / 0.7195 / 0.7195 / 0.698 / 0.7195 / 0.718 / 0.7175 / 0.7185
        pytest.param(
            survey_table,
            0.025,
            tuple(range(9)),
            marks=pytest.mark.xfail(strict=True, reason=_SURVEY_XFAIL),
        ),
        # continuous planted list with 10% noise: majority 0.581, CART 0.8965, the Bayes
        # rate about 0.90. Defaults, seeds 0-4: 0.8875 / 0.8905 / 0.892 / 0.889 / 0.886
        # (seeds 5-7: 0.8875 / 0.8905 / 0.8915). Without checkpoints: 0.8875 / 0.8905 /
        # 0.8905 / 0.889 / 0.878; a checkpoint every 25 epochs: seed 2 0.8935, seed 4
        # 0.878 (spread 0.0155). cut_init="range" (the former default): 0.8645 / 0.8725 /
        # 0.873 / 0.732 / 0.8615, and seeds 5 / 6 0.710 / 0.7365 (missed conjunction)
        (noisy_planted_table, 0.25, (0, 1, 2, 3, 4)),
    ],
)
def test_stable_accuracy_across_seeds_on_large_tables(make_table, margin, seeds):
    """Issue 24: stable accuracy across seeds on 5,000+ rows with the defaults.

    Thresholds: the spread bound 0.015 is the issue's acceptance figure (max - min test
    accuracy over seeds); the margins over the majority class are set below the worst
    measured seed (see the parameters), so they are regression guards that a collapse
    to a trivial list (the majority class) or a missed planted conjunction fails. The
    survey-like table does not meet them (strict xfail, measured values in the reason).
    """
    from sklearn.model_selection import train_test_split

    X, y = make_table(6000, 0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=2000, stratify=y, random_state=0)
    majority = max(np.mean(yte), 1 - np.mean(yte))
    accs = []
    for seed in seeds:
        clf = NeurulesClassifier(n_rules=10, random_state=seed)
        accs.append(clf.fit(Xtr, ytr).score(Xte, yte))
        assert clf.batch_size_ == 2048
        assert 1 <= clf.n_rules_ <= 10
    assert max(accs) - min(accs) <= 0.015, accs
    assert min(accs) >= majority + margin, (accs, majority)


def test_quantile_cut_initialisation():
    """cut_init="quantile": every rule starts as a box inside the training range, with
    its lower cut at a training value of quantile <= 0.3 and its upper cut at one of
    quantile >= 0.7; "range" is the reference's start (minimum and maximum)."""
    import torch

    from sklearn_cispa.rules._neurules import _quantile_cuts

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=500), rng.integers(0, 2, 500), rng.exponential(size=500)])
    xs = np.sort(X, axis=0)
    gen = torch.Generator().manual_seed(0)
    a, b = _quantile_cuts(torch, gen, xs, 7, {"dtype": torch.float64})
    a, b = a.numpy(), b.numpy()
    assert a.shape == b.shape == (3, 7)
    for f in range(3):
        assert np.all(np.isin(a[f], X[:, f])) and np.all(np.isin(b[f], X[:, f]))
        assert np.all(a[f] <= np.quantile(X[:, f], 0.3)) and np.all(a[f] >= X[:, f].min())
        assert np.all(b[f] >= np.quantile(X[:, f], 0.7)) and np.all(b[f] <= X[:, f].max())
    assert np.all(a <= b)
    assert len(np.unique(a[0])) == 7  # continuous column: every rule its own box
    # same generator state, same cuts; the fit draws them from random_state
    a2, _ = _quantile_cuts(torch, torch.Generator().manual_seed(0), xs, 7, {"dtype": torch.float64})
    assert np.array_equal(a, a2.numpy())
    y = (X[:, 0] > 0).astype(int)
    kw = {"n_rules": 3, "max_epochs": 2, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = NeurulesClassifier(cut_init="range", **kw).fit(X, y)
        auto = NeurulesClassifier(**kw).fit(X, y)
        quantile = NeurulesClassifier(cut_init="quantile", **kw).fit(X, y)
    # "auto": the reference's cuts up to 2048 training rows, quantile cuts above
    assert auto.cut_init_ == "range" and auto.rules_ == ref.rules_
    assert quantile.cut_init_ == "quantile"
    assert np.all(quantile._a >= ref._lo[:, None] - 0.021)
    X_big = np.repeat(X, 5, axis=0)[:2049]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        big = NeurulesClassifier(**kw).fit(X_big, (X_big[:, 0] > 0).astype(int))
    assert big.cut_init_ == "quantile"
    lo, hi = ref._lo[:, None], ref._hi[:, None]
    # two Adam steps of lr 0.01 move the reference's cuts at most 0.02 from the range
    assert np.all(np.abs(ref._a - lo) <= 0.021) and np.all(np.abs(ref._b - hi) <= 0.021)
    with pytest.raises(ValueError, match="cut_init"):
        NeurulesClassifier(cut_init="random").fit(X, y)


def test_n_init_keeps_the_most_accurate_run():
    X, y = load_iris(return_X_y=True)
    kw = {"n_rules": 4, "max_epochs": 60, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        one = NeurulesClassifier(**kw).fit(X, y)
        three = NeurulesClassifier(n_init=3, **kw).fit(X, y)
        again = NeurulesClassifier(n_init=3, **kw).fit(X, y)
    # the first of the three runs is the single run (same seed), so the best is no worse
    assert three.score(X, y) >= one.score(X, y)
    assert three.rules_ == again.rules_
    with pytest.raises(ValueError, match="n_init"):
        NeurulesClassifier(n_init=0).fit(X, y)


def test_class_head_initialisation():
    from sklearn_cispa.rules._neurules import _initial_head

    head = _initial_head(3, 7)
    assert head.shape == (3, 7)
    assert head.argmax(axis=0).tolist() == [0, 0, 0, 1, 1, 2, 2]  # contiguous blocks
    assert set(np.unique(head)) == {0.5, 10.0}
    assert _initial_head(2, 1).argmax(axis=0).tolist() == [0]
    X, y = load_breast_cancer(return_X_y=True)
    with pytest.raises(ValueError, match="head_init"):
        NeurulesClassifier(head_init="const").fit(X, y)


def test_checkpoints_keep_the_most_accurate_list(monkeypatch):
    """checkpoints=True: the kept list is the most accurate on the training rows among
    the checkpoints (every max_epochs / 50 epochs and the end), the latest among ties;
    an independent record of every checkpoint's score is the oracle."""
    X, y = load_breast_cancer(return_X_y=True)
    kw = {"n_rules": 6, "max_epochs": 100, "random_state": 1}
    seen = []
    original = NeurulesClassifier._snapshot

    def recording(self, env, run, epoch):
        original(self, env, run, epoch)
        seen.append((epoch, self.score(X, y)))  # the list _snapshot just extracted

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = NeurulesClassifier(checkpoints=False, **kw).fit(X, y)
        monkeypatch.setattr(NeurulesClassifier, "_snapshot", recording)
        kept = NeurulesClassifier(checkpoints=True, **kw).fit(X, y)
        monkeypatch.undo()
        again = NeurulesClassifier(checkpoints=True, **kw).fit(X, y)
    assert [e for e, _ in seen] == list(range(2, 101, 2))  # every 100 / 50 epochs
    best = max(s for _, s in seen)
    assert kept.score(X, y) == pytest.approx(best)
    assert kept.checkpoint_epoch_ == max(e for e, s in seen if s == pytest.approx(best))
    assert kept.score(X, y) >= plain.score(X, y)  # the final list is one of the candidates
    assert seen[-1][1] == pytest.approx(plain.score(X, y))  # same training as without
    assert plain.checkpoints_ is False and plain.checkpoint_epoch_ == 100
    assert kept.checkpoints_ is True and kept.rules_ == again.rules_
    # the printed list is still the model, and the kept temperatures are the checkpoint's
    assert np.array_equal(reference_predict(kept.rules_, kept.default_class_, X), kept.predict(X))
    if kept.checkpoint_epoch_ < 100:
        assert kept._final_temperatures[0] > 0.04
    # "auto": on above 2048 training rows (the mini-batch tables), off below
    X_big = np.repeat(X, 4, axis=0)[:2049]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        small = NeurulesClassifier(n_rules=3, max_epochs=4, random_state=0).fit(X, y)
        big = NeurulesClassifier(n_rules=3, max_epochs=4, random_state=0).fit(
            X_big, np.repeat(y, 4)[:2049]
        )
    assert small.checkpoints_ is False and big.checkpoints_ is True
    with pytest.raises(ValueError, match="checkpoints"):
        NeurulesClassifier(checkpoints="always").fit(X, y)


def fair_affairs_table():
    """Fair's affairs survey (statsmodels; 6,366 rows, 8 ordinal and count columns,
    32% positives): the issue's "real survey table". Not bundled (licence: used with
    permission, all rights reserved)."""
    sm = pytest.importorskip("statsmodels.api")
    data = sm.datasets.fair.load_pandas().data
    y = (data["affairs"] > 0).astype(int).to_numpy()
    return data.drop(columns="affairs").to_numpy(dtype=float), y


# 3-fold means over seeds 0-8 with the defaults: 0.719 / 0.7108 / 0.7149 / 0.7182 /
# 0.7193 / 0.7198 / 0.7205 / 0.7213 / 0.721 (spread 0.0105; majority 0.6775, CART with
# 10 leaves 0.7172). Without checkpoints: 0.7147 / 0.713 / 0.7034 / 0.7199 / 0.7154 /
# 0.7031 / 0.7094 / 0.6902 / 0.7199 (spread 0.030). The test runs the lowest and the
# highest seed with the defaults (1 and 7; 7 was the worst before) and seed 2 (the
# third worst before): 9 fits, about 45 CPU-s. The ASV benchmark runs all nine.
FAIR_SEEDS = (1, 7, 2)


@pytest.mark.slow
def test_stable_accuracy_across_seeds_on_the_fair_survey():
    """Issue 24 on its own table and protocol: 3-fold StratifiedKFold(shuffle=True,
    random_state=0), 10 rule slots, defaults. Thresholds are the acceptance figures:
    max - min of the 3-fold mean accuracy over seeds <= 0.015, every seed >= majority +
    0.025 (0.7025)."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    X, y = fair_affairs_table()
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    majority = 1 - y.mean()
    means = []
    for seed in FAIR_SEEDS:
        clf = NeurulesClassifier(n_rules=10, random_state=seed)
        means.append(float(np.mean(cross_val_score(clf, X, y, cv=cv))))
    assert max(means) - min(means) <= 0.015, means
    assert min(means) >= majority + 0.025, (means, majority)
