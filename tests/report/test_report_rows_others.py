"""Report rows whose modules other contributors own (gasp, neurons, neurons_gpt2, bitmark),
run through the runner on tiny settings.

These check code paths and the report's schema, not the rows' figures: the sizes are
shrunk by wrapping the rows' helpers (``shrink``) or replacing their settings, and no
number of the rows is asserted beyond its range.
"""

import importlib

import pytest

gasp = importlib.import_module("sklearn_cispa.report._exp_gasp")
gasp_eval = importlib.import_module("sklearn_cispa.report._gasp_eval")
neurons = importlib.import_module("sklearn_cispa.report._exp_neurons")
neurons_gpt2 = importlib.import_module("sklearn_cispa.report._exp_neurons_gpt2")


@pytest.mark.parametrize("quick", [True, False])
def test_gasp_row_on_two_seeds_per_block(monkeypatch, shrink, run_row, quick):
    rates = gasp.benchmark_rates
    monkeypatch.setattr(
        gasp,
        "benchmark_rates",
        lambda bench, seeds, strategy: rates(bench, list(seeds)[:2], strategy),
    )
    # the full row's loop ablation on 2 seeds, 1 round of 8 candidates
    ablation = gasp_eval.loop_ablation
    monkeypatch.setattr(
        gasp,
        "loop_ablation",
        lambda seeds: ablation(
            seeds=list(seeds)[:2],
            n_rounds=1,
            n_candidates=8,
            n_queries=2,
            eval_candidates=8,
            eval_queries=2,
        ),
    )
    # the gasp row states no target yet (issue 32's "target" cell, owned by the gasp row)
    row = run_row("gasp", quick=quick, target=False)
    assert row["runs"] == (3 if quick else 10)
    assert 0 <= row["value"] <= 1 and 0 <= row["peer value"] <= 1
    for bench in gasp.BENCHMARKS:
        assert bench in row["details"]
    assert ("loop ablation" in row["details"]) == (not quick)
    assert len(row["figures"]) == (1 if quick else 2)


def test_neurons_row_at_its_quick_setting(monkeypatch, run_row):
    """The row at its own quick setting (every seed memorises some canary)."""
    row = run_row("neurons")
    assert row["runs"] == 3 and row["figures"]


TINY_GPT2 = dict(n_chars=1000, n_canaries=2, n_copies=6, heldout_chars=1000, max_steps=4,
                 block_size=16, batch_size=4, lr=6e-3, warmup_steps=1)
# the window MLP at this size memorises no canary (checked in the test)
TINY_MLP = dict(n_chars=1500, n_canaries=2, n_copies=3, heldout_chars=1500, max_epochs=1,
                alpha=1e-4, hidden=16)


def test_neurons_gpt2_row_with_no_memorised_canary(monkeypatch, run_row):
    """No canary memorised in any seed: the verdict says so in the fixed vocabulary, no
    nan, and the figure says that nothing was localised."""
    pytest.importorskip("transformers")
    monkeypatch.setattr(neurons_gpt2, "canary_transformer_setting",
                        lambda quick=False: dict(TINY_GPT2))
    # no canary is memorised at this size, so the peer (activation ranking) has no value
    row = run_row("neurons_gpt2", peer=False)
    assert row["outcome"] == "not reproduced" and row["reproduced"] is False
    assert "memorises a canary" in row["verdict"] and row["value"] == 0.0
    assert row["runs"] == 3 and row["figures"]


def test_neurons_row_with_no_memorised_canary(monkeypatch, run_row):
    monkeypatch.setattr(neurons, "QUICK_SETTING", dict(TINY_MLP))
    row = run_row("neurons", peer=False)
    assert row["outcome"] == "not reproduced" and row["reproduced"] is False
    assert "memorises a canary" in row["verdict"] and row["value"] == 0.0
    assert row["runs"] == 3 and row["figures"]


def test_neurons_row_leaves_out_a_seed_that_memorises_none(monkeypatch, run_row):
    """Seed 1 of 3 trained at a size that memorises no canary: it is left out of the
    means and counted; the figure uses seed 0."""
    train = neurons.train_canary_model

    def one_tiny(random_state, **setting):
        return train(random_state, **(TINY_MLP if random_state == 1 else setting))

    monkeypatch.setattr(neurons, "train_canary_model", one_tiny)
    row = run_row("neurons")
    assert "1 of 3 seeds memorise no canary" in row["verdict"]
    assert row["runs"] == 2 and "seeds with a memorised canary 2 of 3" in row["details"]


def test_bitmark_row_with_one_attack_per_family(monkeypatch, run_row):
    """The quick row with one strength per image attack (the row's own attacks)."""
    bitmark = importlib.import_module("sklearn_cispa.report._exp_bitmark")
    attacks = bitmark.image_attacks

    def one_per_family(quick):
        seen, out = set(), []
        for family, strength, attack in attacks(quick):
            if family not in seen:
                seen.add(family)
                out.append((family, strength, attack))
        return out

    monkeypatch.setattr(bitmark, "image_attacks", one_per_family)
    # (the row states no target yet: issue 32's target cell, owned by the row's module)
    row = run_row("bitmark", target=False)
    assert row["runs"] == 3 and 0 <= row["value"] <= 1 and 0 <= row["peer value"] <= 1
    assert len(row["figures"]) >= 2
