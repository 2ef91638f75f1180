"""TransformerLanguageModel: a transformers causal LM trained and scored as an estimator."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.model_selection import GridSearchCV

transformers = pytest.importorskip(
    "transformers", reason="the lm extra (transformers) is not installed"
)

from sklearn_cispa.language import CharTokenizer, TransformerLanguageModel  # noqa: E402

TINY = dict(config=dict(n_layer=1, n_embd=16, n_head=2), block_size=32, max_steps=20,
            batch_size=8, lr=3e-3, random_state=0)
DOCS = ["the cat sat on the mat.", "a dog ran in the fog.", "we sat, we ran, we won."] * 4


@pytest.fixture(scope="module")
def fitted():
    return TransformerLanguageModel(**{**TINY, "max_steps": 120,
                                       "config": dict(n_layer=1, n_embd=32, n_head=2)}).fit(DOCS)


def _by_hand(lm, doc):
    """Log-probabilities of bos+doc+eos computed directly from the model: the oracle."""
    tok = lm.tokenizer_
    ids = [tok.bos_token_id, *lm.encode(doc).tolist(), tok.eos_token_id]
    with torch.no_grad():
        logits = lm.model_(torch.tensor([ids[:-1]])).logits[0].double()
    logp = torch.log_softmax(logits, -1)
    return logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()


def test_scores_equal_the_model_by_hand(fitted):
    docs = ["the cat ran.", "", "zzz unseen qq"]
    lls = fitted.token_log_likelihoods(docs)
    for doc, ll in zip(docs, lls, strict=True):
        assert ll.shape == (len(doc) + 1,)  # every symbol and the end token
        np.testing.assert_allclose(ll, _by_hand(fitted, doc), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fitted.score_samples(docs), [ll.mean() for ll in lls])
    pooled = np.concatenate(lls).mean()
    assert fitted.score(docs) == pytest.approx(pooled)
    assert fitted.perplexity(docs) == pytest.approx(np.exp(-pooled))


def test_long_documents_are_scored_in_windows_predicting_each_token_once(fitted):
    doc = "the cat sat on the mat. " * 5  # 120 symbols: four windows of 32
    [ll] = fitted.token_log_likelihoods([doc])
    assert ll.shape == (len(doc) + 1,)
    assert np.all(ll <= 0) and np.all(np.isfinite(ll))
    # the first window equals the model on the first 33 tokens by hand
    np.testing.assert_allclose(ll[:32], _by_hand(fitted, doc[:32])[:32], rtol=1e-6)


def test_it_learns_and_completes_what_it_memorised(fitted):
    assert fitted.complete("the cat sat on the ", 4) == "mat."
    held_out = ["the fog sat on a dog.", "ran we, sat we."]
    assert fitted.score(DOCS) > fitted.score(held_out) + 0.3
    assert fitted.loss_curve_[-1] < fitted.loss_curve_[0] - 1.0
    assert fitted.n_steps_ == 120 == len(fitted.loss_curve_)


def test_fixed_random_state_reproduces_weights_and_training_order_bit_for_bit():
    a = TransformerLanguageModel(**TINY).fit(DOCS)
    b = TransformerLanguageModel(**TINY).fit(DOCS)
    c = TransformerLanguageModel(**{**TINY, "random_state": 1}).fit(DOCS)
    for pa, pb in zip(a.model_.parameters(), b.model_.parameters(), strict=True):
        assert torch.equal(pa, pb)
    np.testing.assert_array_equal(a.training_order_, b.training_order_)
    assert a.loss_curve_ == b.loss_curve_
    assert not all(torch.equal(p, q) for p, q in zip(a.model_.parameters(),
                                                      c.model_.parameters(), strict=True))


def test_training_order_is_the_last_step_a_document_was_drawn():
    docs = [f"doc {i} " + "x" * i for i in range(20)]
    lm = TransformerLanguageModel(**{**TINY, "max_steps": 3, "batch_size": 4}).fit(docs)
    order = lm.training_order_
    assert order.shape == (20,)
    # 3 steps of 4 windows drawn without replacement: 12 documents seen, 4 per step
    assert np.sum(order >= 0) == 12
    np.testing.assert_array_equal(np.bincount(order[order >= 0]), [4, 4, 4])
    lm = TransformerLanguageModel(**{**TINY, "max_steps": 12, "batch_size": 4}).fit(docs)
    assert np.all(lm.training_order_ >= 0)  # over two passes every document is seen
    assert lm.training_order_.max() == 11


@pytest.mark.parametrize("arch, config", [
    ("gpt_neox", dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                      intermediate_size=32)),
    ("llama", dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                   num_key_value_heads=1, intermediate_size=32)),
    ("opt", dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2, ffn_dim=32,
                 word_embed_proj_dim=16)),
    ("phi", dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                 intermediate_size=32)),
    ("qwen2", dict(num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                   num_key_value_heads=1, intermediate_size=32)),
])
def test_other_architectures_build_train_and_score(arch, config):
    lm = TransformerLanguageModel(arch, config=config, block_size=16, max_steps=3,
                                  batch_size=4, random_state=0).fit(DOCS)
    assert lm.model_.config.model_type == arch
    assert lm.score_samples(DOCS[:2]).shape == (2,)
    assert isinstance(lm.complete("the ", 3), str)


def test_local_checkpoint_and_tokenizer_directories(tmp_path, fitted):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    # a word-level tokenizer trained offline on the documents, saved as transformers does
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(DOCS, trainers.WordLevelTrainer(
        special_tokens=["[UNK]", "<|endoftext|>"]))
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>",
        bos_token="<|endoftext|>")
    fast.save_pretrained(tmp_path / "tok")
    lm = TransformerLanguageModel(tokenizer=str(tmp_path / "tok"), **TINY).fit(DOCS)
    assert len(lm.encode("the cat sat")) == 3  # words, not characters
    assert lm.score_samples(DOCS[:2]).shape == (2,)
    with pytest.raises(TypeError, match="strings"):
        lm.score_samples([[1, 2, 3]])
    # a checkpoint directory is loaded offline and trained on from its weights
    fitted.model_.save_pretrained(tmp_path / "ckpt")
    zero = TransformerLanguageModel(str(tmp_path / "ckpt"), tokenizer=fitted.tokenizer_,
                                    max_steps=1, lr=1e-12, block_size=32).fit(DOCS)
    np.testing.assert_allclose(zero.score_samples(DOCS[:3]), fitted.score_samples(DOCS[:3]),
                               rtol=1e-5)


def test_an_instance_is_trained_on_from_its_weights_and_left_untouched(fitted):
    before = [p.detach().clone() for p in fitted.model_.parameters()]
    lm = TransformerLanguageModel(fitted.model_, tokenizer=fitted.tokenizer_, max_steps=5,
                                  batch_size=4, lr=1e-3, block_size=32,
                                  random_state=0).fit(DOCS)
    for p, q in zip(fitted.model_.parameters(), before, strict=True):
        assert torch.equal(p, q)
    assert lm.model_ is not fitted.model_
    assert lm.score(DOCS) > fitted.score(DOCS) - 0.5  # starts from the trained weights


def test_shared_tokenizer_gives_one_vocabulary(fitted):
    other = TransformerLanguageModel(tokenizer=fitted.tokenizer_, **TINY).fit(["zzz"])
    np.testing.assert_array_equal(other.encode("the cat"), fitted.encode("the cat"))
    assert isinstance(fitted.tokenizer_, CharTokenizer)
    assert fitted.decode(fitted.encode("the cat")) == "the cat"


def test_pickle_round_trip_scores_the_same(fitted):
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.score_samples(DOCS[:3]), fitted.score_samples(DOCS[:3]))
    assert again.complete("the cat sat on the ", 4) == "mat."


def test_grid_search_over_config_and_lr_scored_by_score():
    grid = GridSearchCV(
        TransformerLanguageModel(block_size=32, max_steps=30, batch_size=8, random_state=0),
        {"config": [dict(n_layer=1, n_embd=16, n_head=2)], "lr": [1e-5, 3e-3]}, cv=2,
    ).fit(DOCS)
    assert grid.best_params_["lr"] == 3e-3  # 30 steps at 1e-5 barely move the model
    assert np.isfinite(grid.best_score_)


@pytest.mark.parametrize("params, X, match", [
    (dict(model="surely_not_an_arch"), DOCS, "architecture name"),
    (dict(tokenizer="/no/such/dir"), DOCS, "tokenizer"),
    (dict(block_size=2048), DOCS, "positions"),
    (dict(), "one string", "single string"),
    (dict(), [], "empty"),
])
def test_bad_input_gets_a_clear_error(params, X, match):
    lm = TransformerLanguageModel(**{**TINY, "max_steps": 1, **params})
    with pytest.raises(ValueError, match=match):
        lm.fit(X)


def test_bad_calls_on_a_fitted_model(fitted):
    with pytest.raises(ValueError, match="max_new_tokens"):
        fitted.complete("the", -1)
    with pytest.raises(ValueError, match="token ids"):
        fitted.decode([10_000])
    with pytest.raises(ValueError, match="config overrides"):
        TransformerLanguageModel(fitted.model_, config={"n_layer": 2}, max_steps=1).fit(DOCS)
    assert fitted.complete("", 0) == ""


def test_divergence_raises():
    with pytest.raises(ValueError, match="diverged"):
        TransformerLanguageModel(**{**TINY, "lr": 1e30, "max_steps": 5}).fit(DOCS)


@pytest.mark.gpu
def test_trains_and_scores_on_cuda():
    lm = TransformerLanguageModel(**{**TINY, "device": "cuda"}).fit(DOCS)
    assert next(lm.model_.parameters()).device.type == "cuda"
    assert lm.score_samples(DOCS[:2]).shape == (2,)


def test_encode_with_special_tokens_is_the_prefix_complete_reads(fitted):
    ids = fitted.encode("the cat", add_special_tokens=True)
    assert ids[0] == fitted.tokenizer_.bos_token_id
    np.testing.assert_array_equal(ids[1:], fitted.encode("the cat"))
