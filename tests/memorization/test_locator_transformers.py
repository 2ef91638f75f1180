"""CriticalNeuronLocator and NeuronMask on the language models users bring (issue 38):
transformers models of several architectures (tiny random-init configs built offline) and
a fitted TransformerLanguageModel."""

import numpy as np
import pytest
import torch

transformers = pytest.importorskip(
    "transformers", reason="the lm extra (transformers) is not installed"
)

from sklearn_cispa.language import TransformerLanguageModel  # noqa: E402
from sklearn_cispa.memorization import (  # noqa: E402
    CriticalNeuronLocator,
    NeuronMask,
    extraction_rate,
    greedy_extraction_oracle,
)

VOCAB = 40
ARCHS = {
    "gpt2": (dict(n_layer=2, n_embd=16, n_head=2, n_inner=24), "transformer.h.{}.mlp.act", 24),
    "gpt_neox": (dict(num_hidden_layers=2, hidden_size=16, num_attention_heads=2,
                      intermediate_size=24), "gpt_neox.layers.{}.mlp.act", 24),
    "opt": (dict(num_hidden_layers=2, hidden_size=16, num_attention_heads=2, ffn_dim=24,
                 word_embed_proj_dim=16), "model.decoder.layers.{}.activation_fn", 24),
    "llama": (dict(num_hidden_layers=2, hidden_size=16, num_attention_heads=2,
                   num_key_value_heads=1, intermediate_size=24), "model.layers.{}.mlp.act_fn",
              24),
    "qwen2": (dict(num_hidden_layers=2, hidden_size=16, num_attention_heads=2,
                   num_key_value_heads=1, intermediate_size=24), "model.layers.{}.mlp.act_fn",
              24),
    "mistral": (dict(num_hidden_layers=2, hidden_size=16, num_attention_heads=2,
                     num_key_value_heads=1, intermediate_size=24),
                "model.layers.{}.mlp.act_fn", 24),
    "phi": (dict(num_hidden_layers=2, hidden_size=16, num_attention_heads=2,
                 intermediate_size=24), "model.layers.{}.mlp.activation_fn", 24),
}


def _tiny(arch):
    config, _, _ = ARCHS[arch]
    cfg = transformers.AutoConfig.for_model(arch, vocab_size=VOCAB, **config)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(cfg).eval()


def _no_hooks(model):
    return all(not m._forward_hooks for m in model.modules())


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_auto_finds_the_mlp_activations_of_each_architecture(arch):
    model = _tiny(arch)
    _, pattern, width = ARCHS[arch]
    X = np.random.default_rng(0).integers(0, VOCAB, size=(4, 12))
    loc = CriticalNeuronLocator(model).fit(X)  # ModelOutput forward: no wrapper needed
    assert loc.layers_ == [pattern.format(0), pattern.format(1)]
    assert loc.n_units_ == {pattern.format(i): width for i in range(2)}
    [res] = loc.localize([X[0, :5]], [X[0, 5:8]])
    assert isinstance(res["memorized_before"], bool)
    # a mask validates units against the layer's width when built, and leaves no hook
    with pytest.raises(ValueError, match="out of range"):
        NeuronMask(model, [(pattern.format(0), 0), (pattern.format(1), width)])
    assert _no_hooks(model)
    before = model(torch.as_tensor(X[:1])).logits
    with NeuronMask(model, [(pattern.format(0), width - 1)]):
        masked = model(torch.as_tensor(X[:1])).logits
    assert not torch.equal(before, masked)
    assert torch.equal(model(torch.as_tensor(X[:1])).logits, before) and _no_hooks(model)


def test_explicit_layers_on_a_model_output_no_longer_crash():
    model = _tiny("gpt2")
    X = np.random.default_rng(1).integers(0, VOCAB, size=(3, 10))
    loc = CriticalNeuronLocator(model, layers=["transformer.h.1.mlp.c_fc"]).fit(X)
    assert loc.n_units_ == {"transformer.h.1.mlp.c_fc": 24}


def test_auto_says_why_it_found_nothing():
    class Functional(torch.nn.Module):  # F.gelu: nothing to hook
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 4)
            self.out = torch.nn.Linear(4, 5)

        def forward(self, ids):
            return self.out(torch.nn.functional.gelu(self.emb(ids)))

    with pytest.raises(ValueError, match="found no activation module.*functional"):
        CriticalNeuronLocator(Functional()).fit(np.zeros((2, 3), dtype=int))


@pytest.fixture(scope="module")
def memorised():
    docs = ["la la lu. code 4711. la lu la.", "lu la la. la lu. la la."] * 10
    lm = TransformerLanguageModel(
        "gpt2", config=dict(n_layer=2, n_embd=32, n_head=2, n_inner=64), block_size=64,
        max_steps=200, batch_size=8, lr=3e-3, random_state=0,
    ).fit(docs)
    return lm


def test_a_fitted_transformer_language_model_is_located_directly(memorised):
    lm = memorised
    assert lm.complete("la la lu. code ", 4) == "4711"
    ref = np.stack([lm.encode("lu la la. la lu. la la. la lu la.")] * 4)
    loc = CriticalNeuronLocator(lm).fit(ref)
    assert loc.layers_ == ["transformer.h.0.mlp.act", "transformer.h.1.mlp.act"]
    prefix = lm.encode("la la lu. code ", add_special_tokens=True)
    [res] = loc.localize([prefix], [lm.encode("4711")])
    assert res["memorized_before"] and res["localized"]
    assert 1 <= len(res["neurons"]) <= 64
    with loc.deactivate():
        assert lm.complete("la la lu. code ", 4) != "4711"
        assert not greedy_extraction_oracle(lm, prefix, lm.encode("4711"))
    assert lm.complete("la la lu. code ", 4) == "4711" and _no_hooks(lm.model_)
    assert extraction_rate(lm, [("la la lu. code ", "4711")]) == 1.0
    # a NeuronMask on the estimator hooks its model_
    with NeuronMask(lm, res["neurons"]):
        assert extraction_rate(lm, [("la la lu. code ", "4711")]) == 0.0


def test_a_pair_that_is_not_memorised_needs_no_units(memorised):
    lm = memorised
    ref = np.stack([lm.encode("lu la la. la lu. la la. la lu la.")] * 2)
    loc = CriticalNeuronLocator(lm).fit(ref)
    [res] = loc.localize([lm.encode("la ", add_special_tokens=True)], [lm.encode("9999")])
    assert not res["memorized_before"] and res["neurons"] == [] and not res["localized"]


def test_bad_oracles_and_ids_get_clear_errors(memorised):
    lm = memorised
    ref = np.stack([lm.encode("lu la la. la lu.")] * 2)
    loc = CriticalNeuronLocator(lm, oracle=lambda model, p, t: None).fit(ref)
    with pytest.raises(TypeError, match="oracle must return a bool"):
        loc.localize([lm.encode("la ")], [lm.encode("lu")])
    loc = CriticalNeuronLocator(lm).fit(ref)
    with pytest.raises(ValueError, match="token ids must lie in"):
        loc.localize([[10_000]], [lm.encode("lu")])
    with pytest.raises(ValueError, match="non-empty"):
        loc.localize([[]], [lm.encode("lu")])
    with pytest.raises(ValueError, match="token ids must lie in"):
        greedy_extraction_oracle(lm, [1, 2], [10_000])
    with pytest.raises(TypeError, match="fitted TransformerLanguageModel"):
        CriticalNeuronLocator(TransformerLanguageModel()).fit(ref)


@pytest.mark.gpu
def test_locator_on_a_cuda_model_matches_the_cpu_statistics():
    """device="cuda" (issue 38): the reference pass and a mask run on the GPU; the
    statistics agree with the CPU ones to float32 accuracy."""
    model = _tiny("gpt2")
    X = np.random.default_rng(0).integers(0, VOCAB, size=(4, 12))
    cpu = CriticalNeuronLocator(model).fit(X)
    gpu_model = _tiny("gpt2").to("cuda")
    gpu = CriticalNeuronLocator(gpu_model, device="cuda").fit(X)
    for layer in cpu.layers_:
        np.testing.assert_allclose(gpu.mu_[layer], cpu.mu_[layer], rtol=1e-4, atol=1e-5)
    [res] = gpu.localize([X[0, :5]], [X[0, 5:8]])
    assert isinstance(res["memorized_before"], bool)
    ids = torch.as_tensor(X[:1], device="cuda")
    before = gpu_model(ids).logits
    with NeuronMask(gpu_model, [(cpu.layers_[0], 0)]):
        gpu_model(ids)
    assert torch.equal(gpu_model(ids).logits, before) and _no_hooks(gpu_model)
