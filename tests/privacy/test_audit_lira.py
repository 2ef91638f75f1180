"""Audit: LiRA on real tables with the models users audit (trees, k-NN, GaussianNB).

Each test failed on the code before the audit fix it names, except the closed-form
checks at the end, which pin behaviour that was already right.
"""

import copy

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from sklearn_cispa.privacy import LiRAMembershipInference

X, Y = load_breast_cancer(return_X_y=True)


@pytest.mark.parametrize("model", [DecisionTreeClassifier(random_state=5),
                                   KNeighborsClassifier(1)])
def test_a_saturated_target_is_not_taken_for_a_reference(model):
    # a grown tree (or 1-NN) gives probability 1 on most rows, so its statistic is the
    # clipped 103.6 there, like most references: scoring a few rows raised "target gives
    # exactly the statistics of reference model 0 ... it is (a copy of) a reference"
    lira = LiRAMembershipInference(DecisionTreeClassifier(), n_reference=8,
                                   random_state=0).fit(X, Y)
    target = model.fit(X[:200], Y[:200])
    scores = lira.score_samples(X[:5], Y[:5], target)
    assert scores.shape == (5,) and np.all(np.isfinite(scores))


def test_a_copy_of_a_reference_is_still_caught():
    lira = LiRAMembershipInference(
        make_pipeline(StandardScaler(), LogisticRegression()), n_reference=4,
        keep_estimators=True, random_state=0).fit(X, Y)
    copied = copy.deepcopy(lira.estimators_[1])
    with pytest.raises(ValueError, match="copy of"):
        lira.score_samples(X[:3], Y[:3], copied)


def test_float_labels_find_integer_labelled_pool_rows():
    # the label entered the row key as its repr, so y=1.0 did not match a pool fitted
    # with y=1: "5 of 5 row(s) are not in the pool"
    lira = LiRAMembershipInference(GaussianNB(), n_reference=4, random_state=0).fit(X, Y)
    target = GaussianNB().fit(X[:300], Y[:300])
    a = lira.score_samples(X[:5], Y[:5], target)
    b = lira.score_samples(X[:5], Y[:5].astype(float), target)
    np.testing.assert_array_equal(a, b)


def test_a_pool_too_small_for_the_models_raises_a_clear_error():
    # a model with no training row ended in GaussianNB's "Found array with 0 sample(s)"
    with pytest.raises(ValueError, match="too small"):
        LiRAMembershipInference(GaussianNB(), n_reference=8, n_targets=1,
                                random_state=0).fit(X[[0, -1]], [0, 1])


@pytest.mark.parametrize("model", [DummyClassifier(),
                                   make_pipeline(StandardScaler(), LogisticRegression(C=1e-8))])
def test_a_model_that_cannot_memorise_gives_chance_auc(model):
    # closed form: the class prior (or a near-constant logistic model) carries almost no
    # per-example information, so LiRA's AUC is 0.5 up to noise (measured 0.50 +- 0.015
    # over 6 seeds with 16 references and 8 targets)
    auc = [LiRAMembershipInference(model, n_reference=16, n_targets=8, random_state=s)
           .fit(X, Y).evaluate(fprs=(0.01,))["auc"] for s in range(2)]
    assert abs(np.mean(auc) - 0.5) < 0.05


@pytest.mark.parametrize("scale", [1e-6, 1e6])
def test_units_do_not_change_a_scale_invariant_model(scale):
    # GaussianNB is equivariant to a common rescaling of the features: same attack
    base = LiRAMembershipInference(GaussianNB(), n_reference=4, n_targets=2,
                                   random_state=0).fit(X, Y).evaluate(fprs=(0.01,))
    scaled = LiRAMembershipInference(GaussianNB(), n_reference=4, n_targets=2,
                                     random_state=0).fit(X * scale, Y).evaluate(fprs=(0.01,))
    assert scaled["auc"] == pytest.approx(base["auc"], abs=0.01)


@pytest.mark.parametrize("online, test", [(True, "one-sided"), (False, "one-sided"),
                                          (False, "two-sided")])
def test_lira_scores_of_huge_statistics_are_finite_and_scale_free(online, test):
    # statistics of order 1e300 (a callable statistic in other units) overflowed the
    # squared residuals: every score was NaN, with numpy's overflow warning only
    from sklearn_cispa.privacy import lira_scores

    rng = np.random.default_rng(0)
    keep = rng.random((8, 40)) < 0.5
    stats = rng.normal(size=(8, 40)) + 2.0 * keep
    target = stats[0] + 0.1
    base = lira_scores(keep, stats, target, online=online, offline_test=test)
    big = lira_scores(keep, stats * 2.0**996, target * 2.0**996, online=online,
                      offline_test=test)
    assert np.all(np.isfinite(big))
    shift = 996 * np.log(2.0) if test == "two-sided" and not online else 0.0
    np.testing.assert_allclose(big, base + shift, rtol=1e-9, atol=1e-9)


def _noise_statistic(model, X, y):
    # a statistic independent of membership: the exact null of a model that memorises
    # nothing (seeded by the model's own random_state, which LiRA sets per model)
    return np.random.default_rng(model.random_state).normal(size=len(y))


def test_the_balanced_design_does_not_bias_the_null_auc():
    # references and targets in one balanced design made a target's membership shift the
    # references' IN count (M//2 - 1 vs M//2), so the IN median of a member was noisier
    # and members scored lower: AUC 0.478 +- 0.002 at M = 8 for a statistic that carries
    # no membership at all (0.492 at M = 16); balanced apart it is 0.497 +- 0.002
    rng = np.random.default_rng(0)
    Xn, yn = rng.normal(size=(3000, 2)), rng.integers(0, 2, 3000)
    auc = [LiRAMembershipInference(DummyClassifier(), n_reference=8, n_targets=4,
                                   statistic=_noise_statistic, random_state=s)
           .fit(Xn, yn).evaluate(fprs=(0.01,))["auc"] for s in range(3)]
    assert abs(np.mean(auc) - 0.5) < 0.01


def test_balanced_design_counts_apart():
    lira = LiRAMembershipInference(DummyClassifier(), n_reference=7, n_targets=1,
                                   statistic=_noise_statistic, random_state=0).fit(X, Y)
    assert np.all(lira.keep_[:7].sum(axis=0) == 3)
    assert 0.4 < lira.target_keep_.mean() < 0.6     # a fair coin for a single target
