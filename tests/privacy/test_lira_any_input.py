"""LiRA on any input the user's model takes: documents, DataFrames, images, unlabelled
models (issue 39), with the scores checked against a computation by hand from the same
references."""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_digits
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KernelDensity
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_cispa.privacy import LiRAMembershipInference, lira_scores, logit_confidence
from sklearn_cispa.privacy._lira import _train_one

_WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi "
          "omicron pi rho sigma tau upsilon phi chi psi omega").split()


def _documents(n, seed=0):
    """Short random documents with a label that depends on their words (and noise)."""
    rng = np.random.default_rng(seed)
    docs, labels = [], []
    for _ in range(n):
        words = rng.choice(_WORDS, size=rng.integers(4, 9))
        docs.append(" ".join(words))
        score = sum(w in _WORDS[:12] for w in words) - len(words) / 2
        labels.append(int(score + rng.normal(scale=1.0) > 0))
    return docs, np.array(labels)


def _by_hand(lira, X, y, target, stat):
    """LiRA scores from the kept references, computed outside the estimator."""
    ref = np.stack([stat(est, X, y) for est in lira.estimators_]).astype(np.float32)
    t = stat(target, X, y).astype(np.float32).astype(np.float64)
    return lira_scores(lira.keep_[: lira.n_reference], ref.astype(np.float64), t,
                       online=lira.online, fix_variance=lira.fix_variance,
                       offline_test=lira.offline_test)


def _logit_stat(model, X, y):
    proba = model.predict_proba(X)
    return logit_confidence(proba=proba, y=y, classes=model.classes_)


def test_list_of_documents_through_tfidf_pipeline():
    docs, y = _documents(120)
    pipe = make_pipeline(TfidfVectorizer(), LogisticRegression(C=50, max_iter=500))
    lira = LiRAMembershipInference(pipe, n_reference=6, n_targets=2, keep_estimators=True,
                                   random_state=0).fit(docs, y)
    assert lira.statistic_ == "logit" and lira.ref_stats_.shape == (6, 120, 1)
    assert not hasattr(lira, "n_features_in_")  # documents have no feature dimension
    target = lira.targets_[0]
    scores = lira.score_samples(docs, y, target)
    np.testing.assert_allclose(scores, _by_hand(lira, docs, y, target, _logit_stat),
                               rtol=1e-10, atol=1e-12)
    # every model was fitted on its own half of the documents, chosen by position
    for est, keep in zip(lira.estimators_, lira.keep_, strict=False):
        vocab = est[0].vocabulary_
        seen = {w for d, k in zip(docs, keep, strict=True) if k for w in d.split()}
        assert set(vocab) == seen
    # documents matched by their text, in any order and as a tuple or an object array
    rows = np.random.default_rng(1).permutation(120)[:30]
    subset = [docs[i] for i in rows]
    np.testing.assert_array_equal(lira.score_samples(subset, y[rows], target), scores[rows])
    np.testing.assert_array_equal(
        lira.score_samples(np.array(subset, dtype=object), y[rows], target), scores[rows])
    np.testing.assert_array_equal(
        lira.score_samples(tuple(subset), y[rows], target, index=rows), scores[rows])
    assert lira.evaluate()["auc"] > 0.5


def test_dataframe_with_a_string_column_through_a_column_transformer():
    docs, y = _documents(120, seed=3)
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "colour": rng.choice(["red", "green", "blue"], size=120),
        "size": rng.normal(size=120) + y,
        "text": docs,
    })
    pre = ColumnTransformer([
        ("onehot", OneHotEncoder(handle_unknown="ignore"), ["colour"]),
        ("num", StandardScaler(), ["size"]),
        ("tfidf", TfidfVectorizer(), "text"),
    ])
    pipe = make_pipeline(pre, LogisticRegression(C=20, max_iter=500))
    lira = LiRAMembershipInference(pipe, n_reference=4, n_targets=1, keep_estimators=True,
                                   random_state=0).fit(frame, pd.Series(y))
    np.testing.assert_array_equal(lira.feature_names_in_, ["colour", "size", "text"])
    target = lira.targets_[0]
    scores = lira.score_samples(frame, y, target)
    np.testing.assert_allclose(scores, _by_hand(lira, frame, y, target, _logit_stat),
                               rtol=1e-10, atol=1e-12)
    rows = np.arange(0, 120, 7)
    np.testing.assert_array_equal(
        lira.score_samples(frame.iloc[rows], y[rows], target), scores[rows])
    with pytest.raises(ValueError, match="feature names"):
        lira.score_samples(frame[["size", "colour", "text"]], y, target)


def test_images_as_3d_arrays_through_a_skorch_cnn():
    torch = pytest.importorskip("torch")
    skorch = pytest.importorskip("skorch")
    X, y = load_digits(return_X_y=True)
    X = (X[:150] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = y[:150]

    class SmallCNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
            self.head = torch.nn.Linear(4 * 4 * 4, 10)

        def forward(self, x):
            h = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
            return self.head(h.flatten(1))

    net = skorch.NeuralNetClassifier(SmallCNN, criterion=torch.nn.CrossEntropyLoss,
                                     max_epochs=4, lr=0.2, train_split=None, verbose=0)
    lira = LiRAMembershipInference(net, n_reference=2, n_targets=1, keep_estimators=True,
                                   random_state=0).fit(X, y)
    assert lira.ref_stats_.shape == (2, 150, 1)
    target = lira.targets_[0]
    scores = lira.score_samples(X, y, target)
    np.testing.assert_allclose(scores, _by_hand(lira, X, y, target, _logit_stat),
                               rtol=1e-6, atol=1e-6)
    # an image is matched by its pixels
    np.testing.assert_array_equal(lira.score_samples(X[::-1], y[::-1], target), scores[::-1])


def test_unlabelled_model_scored_by_score_samples():
    X = np.random.default_rng(0).normal(size=(80, 2))
    kde = KernelDensity(bandwidth=0.3)
    lira = LiRAMembershipInference(kde, n_reference=8, n_targets=2, keep_estimators=True,
                                   random_state=0).fit(X)
    assert lira.statistic_ == "score_samples" and not hasattr(lira, "classes_")
    target = lira.targets_[0]
    scores = lira.score_samples(X, target=target)

    def stat(model, X, y):
        return model.score_samples(X)

    np.testing.assert_allclose(scores, _by_hand(lira, X, None, target, stat), rtol=1e-10)
    # a KDE's density at a training point includes its own kernel: members score higher
    assert lira.evaluate()["auc"] > 0.7
    # labels given at fit are passed to the estimator's fit but not needed to query
    labelled = LiRAMembershipInference(kde, n_reference=4, statistic="score_samples",
                                       random_state=0).fit(X, np.arange(80) % 2)
    np.testing.assert_array_equal(labelled.score_samples(X[:5], target=target),
                                  labelled.score_samples(X[:5], np.arange(5) % 2, target))


def test_parallel_task_keeps_torch_to_the_given_threads():
    torch = pytest.importorskip("torch")
    X = np.random.default_rng(0).normal(size=(20, 2))
    before = torch.get_num_threads()

    def threads(model, X, y):
        return np.full(len(X), float(torch.get_num_threads()))

    spec = (threads, None, 1, 0)
    rows = np.arange(20) % 2 == 0
    stats, _, _ = _train_one(KernelDensity(), X, None, rows, 0, None, spec, False, 1)
    assert np.all(stats == 1.0)
    assert torch.get_num_threads() == before
    stats, _, _ = _train_one(KernelDensity(), X, None, rows, 0, None, spec, False, None)
    assert np.all(stats == before)


# ----------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    docs, y = _documents(60, seed=5)
    pipe = make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=300))
    lira = LiRAMembershipInference(pipe, n_reference=4, n_targets=1, random_state=0)
    return lira.fit(docs, y), docs, y


def test_labels_the_pool_does_not_know(fitted):
    lira, docs, y = fitted
    with pytest.raises(ValueError, match=r"2 label\(s\) of y are not among the pool's"):
        lira.score_samples(docs[:3], np.array(["0", "1", 1], dtype=object), lira.targets_[0])
    with pytest.raises(ValueError, match="mix types that cannot be ordered"):
        LiRAMembershipInference(LogisticRegression(), n_reference=2).fit(
            np.zeros((4, 1)), np.array([0, "a", 1, "b"], dtype=object))
    # a target trained on other labels than the pool's
    other = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(docs, y + 5)
    with pytest.raises(ValueError, match="not among the pool's classes"):
        lira.score_samples(docs, y, other)


def test_labels_required_by_the_statistic(fitted):
    lira, docs, _ = fitted
    with pytest.raises(ValueError, match="requires y to be passed"):
        LiRAMembershipInference(LogisticRegression(), n_reference=2).fit(np.zeros((4, 1)))
    with pytest.raises(ValueError, match="requires y to be passed"):
        lira.score_samples(docs, target=lira.targets_[0])
    with pytest.raises(TypeError, match="needs target="):
        lira.score_samples(docs, np.zeros(60, dtype=int))
    with pytest.raises(TypeError, match="score_samples"):
        LiRAMembershipInference(LogisticRegression(), statistic="score_samples").fit(
            np.zeros((4, 1)), [0, 1, 0, 1])


def test_statistic_of_the_wrong_shape():
    X = np.random.default_rng(0).normal(size=(30, 2))

    def too_short(model, X, y):
        return model.score_samples(X)[:-1]

    def three_d(model, X, y):
        return np.zeros((len(X), 1, 1))

    for stat in (too_short, three_d):
        with pytest.raises(ValueError, match="statistic returned an array of shape"):
            LiRAMembershipInference(KernelDensity(), n_reference=2, statistic=stat,
                                    random_state=0).fit(X)


def test_references_that_leave_nothing_out():
    keep = np.ones((4, 10), dtype=bool)
    ref = np.random.default_rng(0).normal(size=(4, 10))
    with pytest.raises(ValueError, match="No reference model left any pool example out"):
        lira_scores(keep, ref, ref[0])
