"""Sampling, continuation log-likelihoods and the ORPO update (issue 36)."""

import numpy as np
import pytest

from sklearn_cispa.language import (
    TransformerLanguageModel,
    continuation_log_likelihoods,
    orpo_update,
    sample_continuations,
)

pytest.importorskip("transformers")

DOCS = ["paint it red.", "paint it blue.", "draw a red cat.", "draw a blue dog."] * 4


@pytest.fixture(scope="module")
def lm():
    return TransformerLanguageModel(
        "gpt2",
        config=dict(n_layer=1, n_embd=16, n_head=2),
        block_size=24,
        max_steps=40,
        batch_size=8,
        lr=3e-3,
        random_state=0,
    ).fit(DOCS)


def test_top_1_sampling_is_greedy_completion(lm):
    # oracle: with top_k=1 every draw is the argmax, i.e. the greedy completion
    out = sample_continuations(
        lm, ["paint it ", "draw a "], n_samples=2, max_new_tokens=6, top_k=1, random_state=3
    )
    assert out[0] == [lm.complete("paint it ", 6)] * 2
    assert out[1] == [lm.complete("draw a ", 6)] * 2


def test_sampling_is_seeded(lm):
    def draw(seed):
        return sample_continuations(
            lm, ["paint it "], n_samples=6, max_new_tokens=8, temperature=2.0, random_state=seed
        )

    assert draw(0) == draw(0)
    assert draw(0) != draw(1)
    with pytest.raises(ValueError, match="temperature"):
        sample_continuations(lm, ["a"], temperature=float("nan"))


def test_continuation_log_likelihood_matches_token_scores(lm):
    # oracle: the document's token log-likelihoods after the prefix, end token included
    prefix, cont = "paint it ", "blue."
    per_token = lm.token_log_likelihoods([prefix + cont])[0]
    ll, n = continuation_log_likelihoods(lm, [prefix], [cont])
    assert int(n[0]) == len(cont) + 1
    assert float(ll[0]) == pytest.approx(per_token[-(len(cont) + 1) :].sum(), abs=1e-6)


def test_orpo_update_raises_the_margin_and_refuses_bad_pairs(lm):
    import copy

    model = copy.deepcopy(lm)
    info = orpo_update(
        model,
        ["paint it "] * 4,
        ["blue."] * 4,
        ["red."] * 4,
        beta=1.0,
        lr=3e-3,
        n_steps=4,
        random_state=0,
    )
    assert info["margin_after"] > info["margin_before"]
    assert len(info["loss"]) == 4 and np.all(np.isfinite(info["loss"]))
    with pytest.raises(ValueError, match="differ in length"):
        orpo_update(model, ["a", "b"], ["x"], ["y", "z"])
    with pytest.raises(ValueError, match="no preference pair"):
        orpo_update(model, [], [], [])
    with pytest.raises(ValueError, match="prefix per continuation"):
        continuation_log_likelihoods(model, ["a"], ["x", "y"])
