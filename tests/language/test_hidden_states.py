"""Mean-pooled hidden-state embeddings of a fitted language model (issue 36)."""

import numpy as np
import pytest

from sklearn_cispa.language import TransformerLanguageModel, hidden_state_embeddings

pytest.importorskip("transformers")

DOCS = ["paint it red.", "paint it blue.", "draw a red cat.", "draw a blue dog."] * 4
TEXTS = ["red.", "a blue dog.", "x", "paint it red and blue and red.", "cat"]


@pytest.fixture(scope="module")
def lm():
    return TransformerLanguageModel(
        "gpt2", config=dict(n_layer=2, n_embd=16, n_head=2), block_size=48,
        max_steps=30, batch_size=8, lr=3e-3, random_state=0,
    ).fit(DOCS)


def oracle(lm, text, prefix="", layer=-1):
    """One text alone, no padding: the mean hidden state of its own positions."""
    import torch

    head = [lm._adapter.bos] + [int(i) for i in lm.encode(prefix)]
    own = [int(i) for i in lm.encode(text)]
    ids = torch.as_tensor([head + own])
    lm.model_.eval()
    with torch.no_grad():
        h = lm.model_(input_ids=ids, output_hidden_states=True).hidden_states[layer]
    return h[0, len(head):].double().mean(dim=0).numpy()


@pytest.mark.parametrize("prefix", ["", "draw a ", "paint it "])
@pytest.mark.parametrize("layer", [-1, 0, 1])
def test_matches_the_one_text_oracle(lm, prefix, layer):
    E = hidden_state_embeddings(TEXTS, lm, prefix=prefix, layer=layer, batch_size=3)
    assert E.shape == (len(TEXTS), 16) and E.dtype == np.float64
    for text, row in zip(TEXTS, E):
        np.testing.assert_allclose(row, oracle(lm, text, prefix, layer), atol=1e-5)


def test_padding_and_batch_invariance(lm):
    # a text's embedding does not depend on the other texts of its batch (their lengths
    # set the padding) nor on the batch size
    alone = np.vstack([hidden_state_embeddings([t], lm, prefix="draw a ") for t in TEXTS])
    for batch_size in (1, 2, 64):
        E = hidden_state_embeddings(TEXTS, lm, prefix="draw a ", batch_size=batch_size)
        np.testing.assert_allclose(E, alone, atol=1e-5)
    reordered = hidden_state_embeddings(TEXTS[::-1], lm, prefix="draw a ")
    np.testing.assert_allclose(reordered[::-1], alone, atol=1e-5)


def test_prefix_conditions_but_is_not_pooled(lm):
    # the prefix changes the text's hidden states (it is context) ...
    a = hidden_state_embeddings(["red."], lm, prefix="paint it ")
    b = hidden_state_embeddings(["red."], lm)
    assert np.abs(a - b).max() > 1e-4
    # ... but its own positions are not averaged in: at layer 0 (token + position
    # embeddings) the text's rows are those of its tokens at the shifted positions only
    E0 = hidden_state_embeddings(["red."], lm, prefix="paint it ", layer=0)
    model = lm.model_
    head = 1 + len(lm.encode("paint it "))
    ids = [int(i) for i in lm.encode("red.")]
    wte = model.transformer.wte.weight.detach().double().numpy()
    wpe = model.transformer.wpe.weight.detach().double().numpy()
    expected = np.mean([wte[t] + wpe[head + j] for j, t in enumerate(ids)], axis=0)
    np.testing.assert_allclose(E0[0], expected, atol=1e-6)
    # the model is left in the mode it was in, and the result is deterministic
    assert not lm.model_.training
    np.testing.assert_array_equal(a, hidden_state_embeddings(["red."], lm, prefix="paint it "))


def test_bad_input(lm):
    with pytest.raises(TypeError, match="texts"):
        hidden_state_embeddings("red.", lm)
    with pytest.raises(TypeError, match="strings"):
        hidden_state_embeddings(["red.", 3], lm)
    with pytest.raises(ValueError, match="empty"):
        hidden_state_embeddings([], lm)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        hidden_state_embeddings(["red.", ""], lm)
    with pytest.raises(ValueError, match="layer"):
        hidden_state_embeddings(["red."], lm, layer=3)
    with pytest.raises(ValueError, match="layer"):
        hidden_state_embeddings(["red."], lm, layer=-4)
    with pytest.raises(ValueError, match="batch_size"):
        hidden_state_embeddings(["red."], lm, batch_size=0)
    with pytest.raises(ValueError, match="prefix"):
        hidden_state_embeddings(["red."], lm, prefix=3)
    with pytest.raises(ValueError, match="positions"):
        hidden_state_embeddings(["x" * 2000], lm)
    unfitted = TransformerLanguageModel("gpt2", config=dict(n_layer=1, n_embd=16, n_head=2))
    with pytest.raises(Exception, match="fit"):
        hidden_state_embeddings(["red."], unfitted)


def test_long_prefix_is_cut_from_the_left(lm):
    limit = lm.model_.config.n_positions
    long_prefix = "paint it " * 200
    E = hidden_state_embeddings(["red."], lm, prefix=long_prefix)
    assert E.shape == (1, 16) and np.all(np.isfinite(E))
    assert len(lm.encode(long_prefix)) + 5 > limit
