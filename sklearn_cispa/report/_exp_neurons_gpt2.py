"""Report row of CriticalNeuronLocator on a transformer: planted canaries in a character
GPT-2 built by TransformerLanguageModel (issue 38)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._neurons_eval import (
    canary_benchmark,
    canary_transformer_setting,
    train_canary_transformer,
)
from sklearn_cispa.report._stats import mean_sd


@register_experiment(
    "neurons_gpt2",
    title="CriticalNeuronLocator (GPT-2)",
    description=(
        "planted canaries in a 2-block character GPT-2 (transformers, random init): "
        "extraction stopped by <= 8 located units, perplexity change, matched random "
        "controls, other canaries kept"
    ),
    claim=(
        "NeMo (NeurIPS 2024) reports that few neurons carry a memorised sample; issue 38's "
        "targets on a 2-block GPT-2: >= 80% of memorised canaries stopped by <= 8 units, "
        "held-out perplexity +< 1%, matched random controls stop <= 5%, >= 80% of the "
        "other canaries kept."
    ),
    cost=(60, 700),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Planted-canary benchmark on the transformer substrate over 3 seeds.

    Runs with one torch thread (restored afterwards).
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(quick=quick, out_dir=out_dir, random_state=random_state)
    finally:
        torch.set_num_threads(threads)


def summarise(rows):
    """Per-seed figures of one canary benchmark on the transformer substrate."""
    mem = [r for r in rows if r["memorized"]]
    loc = [r for r in mem if r["localized"]]
    small = [r for r in loc if not r["extracted_after"] and r["units"] <= 8]
    out = dict(
        memorized=len(mem) / len(rows),
        stopped_le_8=len(small) / len(mem) if mem else 0.0,
        units=float(np.median([r["units"] for r in loc])) if loc else float("nan"),
        ppl=100 * float(np.mean([r["ppl_change"] for r in loc])) if loc else float("nan"),
        control_stopped=(float(np.mean([1 - r["control_extracted"] for r in loc]))
                         if loc else float("nan")),
        kept=float(np.nanmean([r["others_kept"] for r in loc])) if loc else float("nan"),
        act_rank_stopped=(float(np.mean([not r["act_rank_extracted_after"] for r in loc]))
                          if loc else float("nan")),
    )
    return out


def _run(*, quick, out_dir, random_state):
    setting = canary_transformer_setting(quick)

    n_seeds = 3
    per_seed, first = [], None
    for i in range(n_seeds):
        lm, heldout, canaries = train_canary_transformer(random_state + i, **setting)
        out = canary_benchmark(lm, heldout, canaries, random_state=random_state + i,
                               minimal=False)
        first = first or out
        per_seed.append(summarise(out["rows"]))
    stats = {k: mean_sd([s[k] for s in per_seed]) for k in per_seed[0]}

    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        rows = [r for r in first["rows"] if r["localized"]]
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r["units"] for r in rows], 0.4, label="units kept")
        ax.axhline(8, color="grey", ls=":", label="budget (8 units)")
        ax2 = ax.twinx()
        ax2.bar(x + 0.2, [100 * r["ppl_change"] for r in rows], 0.4, color="tab:orange",
                label="held-out perplexity change (%)")
        ax.set_xticks(x, [r["canary"] for r in rows])
        ax.set_ylabel("units kept")
        ax2.set_ylabel("perplexity change (%)")
        h0, l0 = ax.get_legend_handles_labels()
        h1, l1 = ax2.get_legend_handles_labels()
        ax2.legend(h0 + h1, l0 + l1, fontsize=7, loc="upper left")
        ax.set_title(f"2-block character GPT-2, seed {random_state}")
        fig.tight_layout()
        figures = save_figure(fig, out_dir, "neurons_gpt2_canaries.png")

    stopped, ppl = stats["stopped_le_8"][0], stats["ppl"][0]
    control, kept = stats["control_stopped"][0], stats["kept"][0]
    met = stopped >= 0.8 and ppl < 1.0 and control <= 0.05 and kept >= 0.8
    verdict = (
        f"{100 * stopped:.0f}% of memorised canaries are stopped by <= 8 located units "
        f"(median {stats['units'][0]:.0f} units) at {ppl:+.2f}% held-out perplexity; "
        f"matched random controls stop {100 * control:.0f}%, {100 * kept:.0f}% of the "
        f"other canaries stay extractable."
    )
    verdict = ("Reproduces: " if met else "Does not reproduce: ") + verdict
    return ExperimentResult(
        metric="memorised canaries stopped by <= 8 located units",
        value=stopped,
        value_sd=stats["stopped_le_8"][1],
        peer="activation ranking at the same unit budget (in-library baseline)",
        peer_value=stats["act_rank_stopped"][0],
        peer_sd=stats["act_rank_stopped"][1],
        n_runs=n_seeds,
        settings=(
            f"make_canary_corpus + TransformerLanguageModel('gpt2', n_layer=2, n_embd=64, "
            f"n_head=4, n_inner=256, char tokenizer) {setting}, locator defaults, X_ref = "
            f"held-out text; {n_seeds} seeds"
        ),
        details=(
            f"memorised {stats['memorized'][0]:.2f}; perplexity change {ppl:+.2f} ± "
            f"{stats['ppl'][1]:.2f}%; random controls stop {control:.2f}; other canaries "
            f"kept {kept:.2f}; median units {stats['units'][0]:.1f}"
        ),
        verdict=verdict,
        reproduced=met,
        figures=figures,
    )
