"""gradient_ascent_unlearning: the editing baseline of issue 38 (fast tests)."""

import numpy as np
import pytest
import torch

from sklearn_cispa.language import CharMLPLanguageModel, gradient_ascent_unlearning

DOCS = ["id: 4711. la lu. id: 4711. lu la."] * 10


@pytest.fixture(scope="module")
def lm():
    return CharMLPLanguageModel(context=6, hidden=16, max_epochs=20, lr=1e-2,
                                random_state=0).fit(DOCS)


def _secret_nll(lm, prefix, secret):
    """Teacher-forced mean cross-entropy of the secret, computed independently of the
    routine (from the model's next-character distribution)."""
    text, nll = prefix, 0.0
    module = lm.module_
    for ch in secret:
        ids = torch.as_tensor(lm.encode(text)[None, :])
        with torch.no_grad():
            logp = torch.log_softmax(module(ids)[0].double(), dim=-1)
        nll -= float(logp[int(lm.encode(ch)[0])])
        text += ch
    return nll / len(secret)


def test_ascent_raises_the_secret_loss_and_leaves_the_original(lm):
    before = {k: v.clone() for k, v in lm.module_.state_dict().items()}
    nll0 = _secret_nll(lm, "id: ", "4711")
    # a small first step raises the loss (first order: Adam's step follows the sign)
    one = gradient_ascent_unlearning(lm, "id: ", "4711", n_steps=1, lr=1e-4)
    assert _secret_nll(one, "id: ", "4711") > nll0
    many = gradient_ascent_unlearning(lm, "id: ", "4711", n_steps=20, lr=1e-2)
    assert many.complete("id: ", 4) != "4711"
    # the caller's model is untouched, bit for bit
    for k, v in lm.module_.state_dict().items():
        assert torch.equal(v, before[k])
    assert lm.complete("id: ", 4) == "4711"


def test_callback_sees_every_step_and_stops(lm):
    seen = []

    def stop_when_forgotten(step, model):
        seen.append(step)
        return model.complete("id: ", 4) != "4711"

    edited = gradient_ascent_unlearning(lm, "id: ", "4711", n_steps=50, lr=1e-2,
                                        callback=stop_when_forgotten)
    assert seen == list(range(1, len(seen) + 1)) and len(seen) < 50
    assert edited.complete("id: ", 4) != "4711"
    # deterministic: the same call gives the same weights
    again = gradient_ascent_unlearning(lm, "id: ", "4711", n_steps=len(seen), lr=1e-2)
    for a, b in zip(edited.module_.parameters(), again.module_.parameters(), strict=True):
        assert torch.equal(a, b)


def test_bad_input(lm):
    with pytest.raises(ValueError, match="secret is empty"):
        gradient_ascent_unlearning(lm, "id: ", "")
    with pytest.raises(ValueError, match="prefix is empty"):
        gradient_ascent_unlearning(lm, "", "4711")
    with pytest.raises(TypeError, match="fitted TransformerLanguageModel"):
        gradient_ascent_unlearning(object(), "id: ", "4711")
    with pytest.raises(ValueError, match="diverged"):
        gradient_ascent_unlearning(lm, "id: ", "4711", n_steps=3, lr=1e300)
    with pytest.raises(ValueError, match="n_steps"):
        gradient_ascent_unlearning(lm, "id: ", "4711", n_steps=0)


def test_transformer_substrate():
    pytest.importorskip("transformers")
    from sklearn_cispa.language import TransformerLanguageModel

    docs = ["code 1234. la lu la."] * 8
    tlm = TransformerLanguageModel(
        "gpt2", config=dict(n_layer=1, n_embd=16, n_head=2, n_inner=32), block_size=32,
        max_steps=60, batch_size=8, lr=1e-2, random_state=0).fit(docs)
    assert tlm.complete("code ", 4) == "1234"
    ll0 = tlm.score(["code 1234."])
    edited = gradient_ascent_unlearning(tlm, "code ", "1234", n_steps=10, lr=1e-2)
    assert edited.complete("code ", 4) != "1234"
    assert edited.score(["code 1234."]) < ll0
    assert tlm.complete("code ", 4) == "1234"
    assert np.isfinite(edited.perplexity(["la lu la."]))
