"""CharMLPLanguageModel, make_canary_corpus and extraction_rate (fast tests)."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline

from sklearn_cispa.language import CharMLPLanguageModel
from sklearn_cispa.memorization import extraction_rate, make_canary_corpus

SMALL = dict(context=4, hidden=16, max_epochs=3, lr=1e-2, random_state=0)


@pytest.fixture(scope="module")
def corpus():
    return make_canary_corpus(n_chars=3000, n_canaries=3, n_copies=5, heldout_chars=1500,
                              random_state=0)


def test_corpus_structure(corpus):
    train, heldout, canaries = corpus
    names = [p.split(" ")[0] for p, _ in canaries]
    secrets = [s for _, s in canaries]
    assert len(set(names)) == 3 and len(set(secrets)) == 3
    for p, s in canaries:
        assert p.endswith(" pin: ") and len(s) == 6 and s.isdigit()
        assert sum(doc.count(p + s + ".") for doc in train) == 5
        assert not any(p in doc for doc in heldout)
    # no near-duplicates: secrets differ in at least half of their digits
    for i in range(3):
        for j in range(i):
            assert sum(a != b for a, b in zip(secrets[i], secrets[j], strict=True)) >= 3
    assert not any(ch.isdigit() for doc in heldout for ch in doc)
    assert 3000 <= sum(map(len, train)) - 3 * 5 * 17 <= 3300
    # paragraphs of 3-8 sentences of 5-15 words
    assert all(2 <= doc.count(" ") for doc in train)
    again = make_canary_corpus(n_chars=3000, n_canaries=3, n_copies=5, heldout_chars=1500,
                               random_state=0)
    assert again == corpus


def test_fit_vocab_score_perplexity(corpus):
    train, heldout, _ = corpus
    before = list(train)
    lm = CharMLPLanguageModel(**SMALL).fit(train)
    assert train == before
    assert lm.vocab_[:-1] == sorted(set("".join(train))) and lm.vocab_[-1] == "\ufffd"
    assert lm.module_.hidden.in_features == 4 * len(lm.vocab_)
    ppl = lm.perplexity(heldout)
    assert 1.0 < ppl < len(lm.vocab_)
    assert lm.score(heldout) == pytest.approx(-np.log(ppl))
    # closed form: the score is the mean log-probability of every character
    windows, nxt = lm._windows(heldout)
    with torch.no_grad():
        logp = torch.log_softmax(lm.module_(torch.as_tensor(windows)).double(), dim=-1)
    assert lm.score(heldout) == pytest.approx(float(logp[np.arange(len(nxt)), nxt].mean()))
    assert lm.encode("a\u263a").tolist()[1] == len(lm.vocab_) - 1


def test_reproducible_clone_pickle(corpus):
    train, heldout, _ = corpus
    a = CharMLPLanguageModel(**SMALL).fit(train)
    b = clone(a).fit(train)
    assert a.score(heldout) == b.score(heldout)
    c = pickle.loads(pickle.dumps(a))
    assert c.score(heldout) == a.score(heldout)
    assert c.complete("The ", 10) == a.complete("The ", 10)
    unfitted = CharMLPLanguageModel(hidden=7)
    assert not hasattr(unfitted, "vocab_") and clone(unfitted).get_params()["hidden"] == 7


def test_grid_search_default_scoring(corpus):
    _, heldout, _ = corpus
    search = GridSearchCV(
        CharMLPLanguageModel(context=4, max_epochs=2, lr=1e-2, random_state=0),
        {"hidden": [8, 16], "alpha": [1e-5, 1e-4]},
        cv=KFold(3),
        error_score="raise",
    ).fit(heldout)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    pipe = Pipeline([("lm", CharMLPLanguageModel(**SMALL))]).fit(heldout)
    assert np.isfinite(pipe.score(heldout))


def test_memorises_a_repeated_string():
    docs = ["we say pin: 4711. and we go."] * 15
    lm = CharMLPLanguageModel(context=8, hidden=32, max_epochs=15, lr=1e-2,
                              random_state=0).fit(docs)
    assert extraction_rate(lm, [("pin: ", "4711")]) == 1.0
    assert extraction_rate(lm, [("pin: ", "4712")]) == 0.0
    assert extraction_rate(lm, [("pin: ", "4712")], match=0.75) == 1.0


def test_symbol_sequences_and_bad_input():
    X = np.random.RandomState(0).normal(size=(20, 3))
    lm = CharMLPLanguageModel(**SMALL).fit(X)
    assert len(lm.vocab_) == 61 and np.isfinite(lm.score(X))
    with pytest.raises(ValueError, match="single string"):
        CharMLPLanguageModel().fit("just one string")
    with pytest.raises(ValueError, match="empty"):
        CharMLPLanguageModel().fit([])
    with pytest.raises(ValueError, match="every document is empty"):
        CharMLPLanguageModel().fit(["", ""])
    with pytest.raises(ValueError, match="hidden"):
        CharMLPLanguageModel(hidden=0).fit(["ab"])


@pytest.mark.parametrize("lr", [1e12, 1e30])
def test_huge_learning_rate_never_silent_nan(lr):
    docs = ["abcab cab"] * 20
    try:
        lm = CharMLPLanguageModel(context=2, hidden=4, lr=lr, max_epochs=2,
                                  random_state=0).fit(docs)
        score = lm.score(docs)
    except ValueError as exc:
        assert "diverged" in str(exc) or "not finite" in str(exc)
    else:
        assert np.isfinite(score)
