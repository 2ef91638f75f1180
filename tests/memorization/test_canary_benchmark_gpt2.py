"""Issue 38's canary target on a 2-block character GPT-2, at CI size, over 3 seeds.

A 2-block GPT-2 (n_embd 32, 2 heads, n_inner 128) built by TransformerLanguageModel from
its config with random initialisation, trained for 400 AdamW steps (windows of 48
characters) on a 6000-character ``make_canary_corpus`` with 5 canaries of 80 copies.
The earlier CI setting (20000 characters, 100 copies, 300 steps) memorised 1, 3 and 0
of 5 canaries on seeds 0-2, so it tested seed 1 only; a denser corpus (more canary
copies per character of text) and 100 more steps memorise 5, 5 and 4 (scratch sweep,
2026-12-05: 8000 characters/100 copies/lr 5e-3 memorised 5/5/5 too, but 3 of its 15
canaries needed more than 8 units). Measured on this setting, pooled over seeds 0-2:
12 of 14 memorised canaries stopped by <= 8 units (1-12 units), held-out perplexity
+0.11% on average, matched random controls (5 draws each) stopped none, 90% of the other
canaries kept. The issue's thresholds are asserted pooled over the 3 seeds; the full
setting (800 steps, n_embd 64) is the report row ``neurons_gpt2``.
"""

import numpy as np
import pytest

pytest.importorskip("transformers", reason="the lm extra (transformers) is not installed")

from sklearn_cispa.report._neurons_eval import (  # noqa: E402
    canary_benchmark,
    train_canary_transformer,
)

SETTING = dict(n_chars=6000, n_canaries=5, n_copies=80, heldout_chars=2000,
               max_steps=400, block_size=48, batch_size=16, lr=3e-3, warmup_steps=20,
               n_embd=32, n_inner=128, n_head=2)
SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def per_seed():
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = {}
        for seed in SEEDS:
            lm, heldout, canaries = train_canary_transformer(seed, **SETTING)
            out[seed] = canary_benchmark(lm, heldout, canaries, random_state=seed,
                                         minimal=False, n_controls=5)["rows"]
    finally:
        torch.set_num_threads(threads)
    return out


@pytest.fixture(scope="module")
def rows(per_seed):
    return [r for seed in SEEDS for r in per_seed[seed]]


def test_every_seed_memorises_some_canaries(per_seed):
    # the target needs memorised canaries in each seed (measured 5, 5, 4 of 5)
    for seed in SEEDS:
        assert sum(r["memorized"] for r in per_seed[seed]) >= 2, seed


def test_memorised_canaries_stopped_by_at_most_8_units(rows):
    mem = [r for r in rows if r["memorized"]]
    # issue 38: >= 80% of memorised canaries stopped by <= 8 located units (pooled)
    small = [r["localized"] and not r["extracted_after"] and r["units"] <= 8 for r in mem]
    assert np.mean(small) >= 0.8


def test_perplexity_rise_below_one_percent(rows):
    loc = [r for r in rows if r["memorized"] and r["localized"]]
    # issue 38: held-out perplexity rises < 1%
    assert np.mean([r["ppl_change"] for r in loc]) < 0.01


def test_matched_random_controls_stop_at_most_5_percent(rows):
    loc = [r for r in rows if r["memorized"] and r["localized"]]
    # issue 38: matched random controls (same count per layer, 5 draws) stop <= 5%
    assert np.mean([1.0 - r["control_extracted"] for r in loc]) <= 0.05


def test_other_canaries_kept(rows):
    loc = [r for r in rows if r["memorized"] and r["localized"]]
    # issue 38: >= 80% of the other canaries stay extractable on average
    assert np.nanmean([r["others_kept"] for r in loc]) >= 0.8
