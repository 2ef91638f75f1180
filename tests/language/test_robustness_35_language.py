"""Issue 35: right or refused on every input (CharMLPLanguageModel)."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_cispa.language import CharMLPLanguageModel

DOCS = ["abcabcabcabc abc", "abc abcabc abcabcabc"] * 5


def _lm(**params):
    params = {"context": 4, "hidden": 16, "max_epochs": 20, "random_state": 0, **params}
    return CharMLPLanguageModel(**params)


@pytest.mark.parametrize("lr", [1e5, 1e10])
def test_huge_lr_raises_diverged(lr):
    # the training loss is finite but its perplexity overflows (was: perplexity inf)
    lm = _lm(lr=lr)
    with pytest.raises(ValueError, match="diverged.*lr"):
        lm.fit(DOCS)
    with pytest.raises(NotFittedError):
        lm.perplexity(DOCS)


def test_lr_beyond_float32_raises_clear_error():
    # was: torch's "value cannot be converted to type float without overflow"
    lm = _lm(lr=1e300)
    with pytest.raises(ValueError, match="lr=1e\\+300 is too large"):
        lm.fit(DOCS)
    with pytest.raises(NotFittedError):
        lm.perplexity(DOCS)


def test_huge_alpha_raises_clear_error():
    with pytest.raises(ValueError, match="alpha=1e\\+300 is too large"):
        _lm(alpha=1e300).fit(DOCS)


def test_large_alpha_within_float32_still_fits():
    # alpha in float32's range pins the weights: no error, the stall warning at most
    with pytest.warns(Warning):
        lm = _lm(alpha=1e30).fit(DOCS)
    assert np.isfinite(lm.perplexity(DOCS))


@pytest.mark.parametrize("docs", [[None, "abc"], ["abc", 3], [3, 4], [None], None, 5])
def test_none_and_ints_are_not_documents(docs):
    with pytest.raises(TypeError, match="docs"):
        _lm(max_epochs=1).fit(docs)


def test_scoring_refuses_non_documents():
    lm = _lm(max_epochs=2, lr=1e-2).fit(DOCS)
    with pytest.raises(TypeError, match=r"docs\[1\]"):
        lm.perplexity(["abc", None])
    with pytest.raises(TypeError, match="prefix"):
        lm.complete(None, 3)
    with pytest.raises(TypeError, match="prefix"):
        lm.complete(3, 3)
    # sequences of symbols are still documents
    assert len(lm.complete(list("abc"), 2)) == 2


def test_transformer_lr_beyond_the_dtype_range_is_a_clear_error():
    pytest.importorskip("transformers")
    from sklearn_cispa.language import TransformerLanguageModel

    cfg = dict(n_layer=1, n_embd=8, n_head=2)
    for kw in ({"lr": 1e300}, {"lr": 1.0, "weight_decay": 1e300}):
        model = TransformerLanguageModel(config=cfg, max_steps=2, block_size=8, **kw)
        with pytest.raises(ValueError, match="too large: the model trains in torch.float32"):
            model.fit(["abc def", "ghi"])
