"""Evaluation helpers that the report's rows and benchmarks share, on tiny inputs, and the
package's listing helpers (utils.discovery) that only the docs build otherwise runs."""

import numpy as np
import pytest


def test_loss_step_ratio_times_every_criterion_against_cross_entropy():
    from sklearn_cispa.report._neural_experiments import loss_step_ratio

    out = loss_step_ratio(hidden=(8,), batch_size=16, steps=2, repeats=2)
    assert set(out) == {"maxsup", "label_smoothing"}
    # ratios of positive times (no wall-clock bound: only that they are finite)
    assert all(np.isfinite(v) and v > 0 for v in out.values())


def test_gmm_node_labels_picks_the_bic_best_mixture():
    from sklearn_cispa.report._cmm_eval import gmm_node_labels

    rng = np.random.default_rng(0)
    # node 1 is a clear two-component mixture given its parent 0
    x0 = rng.normal(size=200)
    z = rng.integers(0, 2, 200)
    x1 = x0 + np.where(z == 1, 8.0, -8.0) + rng.normal(scale=0.3, size=200)
    labels = gmm_node_labels(np.column_stack([x0, x1]), 1, [0], max_components=3)
    assert labels.shape == (200,)
    # the two groups are recovered up to a relabelling
    agree = np.mean(labels == z)
    assert max(agree, 1 - agree) > 0.95


def test_all_estimators_type_filter():
    from sklearn_cispa.utils import all_estimators

    every = all_estimators()
    classifiers = all_estimators(type_filter="classifier")
    assert classifiers and set(classifiers) < set(every)
    from sklearn.base import ClassifierMixin

    assert all(issubclass(cls, ClassifierMixin) for _, cls in classifiers)
    assert set(classifiers) < set(all_estimators(type_filter=["classifier", "regressor"]))
    with pytest.raises(ValueError, match="Unknown type_filter"):
        all_estimators(type_filter="nope")


def test_public_objects_by_field_documents_each_object_once():
    from sklearn_cispa.utils.discovery import FIELD_SUBPACKAGES, public_objects_by_field

    fields = public_objects_by_field()
    assert list(fields) == list(FIELD_SUBPACKAGES)
    names = [n for v in fields.values() for n in v]
    assert len(names) == len(set(names))  # a re-export is listed under its home field only
    assert "CharMLPLanguageModel" not in fields["memorization"]
    assert all(v == sorted(v) for v in fields.values())
