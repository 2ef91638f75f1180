"""Report row of CriticalNeuronLocator: planted canaries in a character model (issues 21, 38)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._neurons_eval import (
    canary_benchmark,
    canary_ci_setting,
    nothing_memorised_result,
    train_canary_model,
)
from sklearn_cispa.report._stats import mean_sd

# quick: a smaller corpus, model and training (all canaries are still memorised)
QUICK_SETTING = dict(n_chars=6000, n_canaries=5, n_copies=15, heldout_chars=3000,
                     max_epochs=5, alpha=1e-4, hidden=128)

TARGET = (
    "issue 38 on this window MLP, whose exact smallest zeroing set is computable: "
    "for >= 80% of memorised canaries the located set stops extraction, has <= "
    "1.5x the exact minimum's units and costs <= 1.5x its held-out perplexity "
    "change; matched random controls keep extraction in >= 80%; >= 70% of the "
    "other canaries kept (NeMo's <= 8 units is the GPT-2 row's target: it is "
    "below this model's exact minimum)"
)


@register_experiment(
    "neurons",
    title="CriticalNeuronLocator",
    description=(
        "planted canaries in a character MLP: extraction stopped by the located units, "
        "perplexity change, matched random control, activation-ranking baseline"
    ),
    claim=(
        "NeMo (NeurIPS 2024; no CISPA language-model paper was identified) reports that "
        "in many cases single neurons carry a memorised sample and deactivating them "
        "stops its reproduction. Issue 38's target on this window MLP, where the exact "
        "smallest zeroing set is computable: for >= 80% of memorised canaries the located "
        "set stops extraction within 1.5x of the exact minimum's units at <= 1.5x its "
        "held-out perplexity cost (NeMo's few-neuron budget is the GPT-2 row's target)."
    ),
    cost=(7, 60),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Planted-canary benchmark over 3 seeds (quick: a smaller corpus).

    Runs with one torch thread (restored afterwards): the model is tiny, and on a
    shared 2-core machine more threads only spin.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(quick=quick, out_dir=out_dir, random_state=random_state)
    finally:
        torch.set_num_threads(threads)


def _run(*, quick, out_dir, random_state):
    setting = QUICK_SETTING if quick else canary_ci_setting()
    n_seeds = 3
    per_seed = {k: [] for k in ("memorized", "stopped", "units", "ppl", "kept", "control",
                                "act_rank_stopped", "act_rank_ppl", "min_units",
                                "control_ppl", "min_le_8", "near_min")}
    first, n_none, n_near, n_mem = None, 0, 0, 0
    for i in range(n_seeds):
        lm, heldout, canaries = train_canary_model(random_state + i, **setting)
        out = canary_benchmark(lm, heldout, canaries, random_state=random_state + i)
        rows = out["rows"]
        mem = [r for r in rows if r["memorized"]]
        loc = [r for r in mem if r["localized"]]
        if first is None and loc:
            first = (random_state + i, out)  # the figure's seed: the first that localises
        if not mem:  # nothing to localise: left out of the means, counted
            n_none += 1
            continue
        per_seed["memorized"].append(len(mem) / len(rows))
        per_seed["stopped"].append(
            np.mean([r["localized"] and not r["extracted_after"] for r in mem]) if mem else 0
        )
        if loc:
            per_seed["units"].append(np.mean([r["units"] for r in loc]))
            per_seed["ppl"].append(100 * np.mean([r["ppl_change"] for r in loc]))
            per_seed["kept"].append(np.nanmean([r["others_kept"] for r in loc]))
            per_seed["control"].append(np.mean([r["control_extracted"] for r in loc]))
            per_seed["control_ppl"].append(
                100 * np.mean([r["control_ppl_change"] for r in loc]))
            per_seed["min_units"].append(np.mean([r["min_units"] for r in loc]))
            per_seed["min_le_8"].append(np.mean([r["min_units"] <= 8 for r in loc]))
            # issue 38's target, over the memorised canaries: the located set stops
            # extraction, has <= 1.5x the exact minimum's units and costs <= 1.5x its
            # held-out perplexity change
            near = [r["localized"] and not r["extracted_after"]
                    and r["units"] <= 1.5 * r["min_units"]
                    and r["ppl_change"] <= 1.5 * max(r.get("min_set_ppl_change", 0.0), 0.0)
                    for r in mem]
            per_seed["near_min"].append(np.mean(near))
            n_near, n_mem = n_near + sum(near), n_mem + len(mem)
            per_seed["act_rank_stopped"].append(
                np.mean([not r["act_rank_extracted_after"] for r in loc]))
            per_seed["act_rank_ppl"].append(
                100 * np.mean([r["act_rank_ppl_change"] for r in loc]))
    stats = {k: mean_sd(v) for k, v in per_seed.items()}

    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        seed, out = first if first is not None else (random_state, None)
        rows = [r for r in out["rows"] if r["localized"]] if out is not None else []
        if out is None:
            for ax in axes:
                ax.text(0.5, 0.5, f"no canary localised in any of the {n_seeds} seeds",
                        ha="center", va="center", transform=ax.transAxes)
                ax.set_axis_off()
        else:
            names = [r["canary"] for r in rows]
            x = np.arange(len(rows))
            axes[0].bar(x - 0.3, [r["units"] for r in rows], 0.3, label="units kept")
            axes[0].bar(x, [r["min_units"] for r in rows], 0.3, color="tab:green",
                        label="exact minimum")
            ax2 = axes[0].twinx()
            ax2.bar(x + 0.3, [100 * r["ppl_change"] for r in rows], 0.3,
                    color="tab:orange", label="held-out perplexity change (%)")
            # headroom above the bars for the legend of both axes
            axes[0].set_ylim(0, 1.4 * max(max(r["units"] for r in rows), 1))
            ax2.set_ylim(0, 1.4 * max(max(100 * r["ppl_change"] for r in rows), 1e-3))
            h0, l0 = axes[0].get_legend_handles_labels()
            h1, l1 = ax2.get_legend_handles_labels()
            ax2.legend(h0 + h1, l0 + l1, fontsize=7, loc="upper left", ncol=2)
            axes[0].set_xticks(np.arange(len(rows)), names)
            axes[0].set_ylabel("units kept")
            ax2.set_ylabel("perplexity change (%)")
            axes[0].set_title(f"per canary (seed {seed})")
            for key, style in (("located", "-o"), ("random", "--s")):
                axes[1].plot(out["scales"], out["scale_curve"][key], style,
                             label=f"{key} units")
            axes[1].set_xlabel("scale of the masked units")
            axes[1].set_ylabel("extraction rate (all canaries)")
            axes[1].legend()
        fig.tight_layout()
        figures = save_figure(fig, out_dir, "neurons_canaries.png")

    settings = (
        f"make_canary_corpus + CharMLPLanguageModel {setting}, locator defaults "
        f"(signed max-z, theta 8 -> 1 by 0.5, refinement), X_ref = held-out text; "
        f"{n_seeds} seeds"
    )
    if not per_seed["memorized"]:
        return nothing_memorised_result(
            "memorised canaries whose extraction the located units stop", n_seeds, settings,
            TARGET, figures)
    stopped, units, ppl = stats["stopped"][0], stats["units"][0], stats["ppl"][0]
    near_min, kept = stats["near_min"][0], stats["kept"][0]
    control_ok = stats["control"][0] >= 0.8
    met = bool(near_min >= 0.8 and stopped >= 0.8 and control_ok and kept >= 0.7)
    verdict = (
        f"for {_f(100 * near_min, '.0f')}% of memorised canaries the located set stops "
        f"extraction within 1.5x of the exact smallest zeroing set ({_f(units, '.1f')} units "
        f"against {_f(stats['min_units'][0], '.1f')} on average) at <= 1.5x its perplexity "
        f"cost; the located units stop {100 * stopped:.0f}% in all, matched random "
        f"controls keep extraction in {_f(100 * stats['control'][0], '.0f')}%, "
        f"{_f(100 * kept, '.0f')}% of the other canaries stay extractable, and the "
        f"activation-ranking baseline at the same budget stops "
        f"{_f(100 * stats['act_rank_stopped'][0], '.0f')}%. NeMo's budget of <= 8 units is "
        f"not this row's target: the exact minimum itself has <= 8 units for only "
        f"{_f(100 * stats['min_le_8'][0], '.0f')}% of the canaries (the window MLP's dense hidden "
        f"code spreads a canary over many units; the GPT-2 row checks that budget). The "
        f"located sets cost {_f(ppl, '+.1f')}% held-out perplexity (as many random units: "
        f"{_f(stats['control_ppl'][0], '+.1f')}%)."
    )
    verdict += f" ({n_near} of {n_mem} memorised canaries within 1.5x of the minimum.)"
    if quick:
        # issue 38, item 3: the quick model (128 units, 5 epochs, 15 copies) has smaller
        # exact minima (2-10 units on seeds 0-2) than the full one (17-22): a set one or
        # a few units above such a minimum already exceeds 1.5x (measured 10 of 15 on
        # seeds 0-2, 2026-12-05); same locator defaults
        verdict += (" Quick mode: a 128-unit model with smaller exact minima, where one "
                    "extra unit can exceed 1.5x; the full-size setting (256 units, "
                    "canary_ci_setting) measured 21 of 25 canaries (84%) on seeds 0-4 "
                    "(tests/memorization/test_canary_benchmark.py, user guide).")
    if n_none:
        verdict += (f" {n_none} of {n_seeds} seeds memorise no canary and are left out "
                    "of the means.")
    verdict = ("Reproduces the target: " if met else "Does not reproduce the target: ") + verdict
    return ExperimentResult(
        metric="memorised canaries whose extraction the located units stop",
        value=stats["stopped"][0],
        value_sd=stats["stopped"][1],
        peer="activation ranking at the same unit budget (in-library baseline)",
        peer_value=stats["act_rank_stopped"][0],
        peer_sd=stats["act_rank_stopped"][1],
        n_runs=len(per_seed["memorized"]),
        settings=settings,
        details=(
            f"seeds with a memorised canary {len(per_seed['memorized'])} of {n_seeds}; "
            f"memorised {_f(stats['memorized'][0], '.2f')} ± "
            f"{_f(stats['memorized'][1], '.2f')}; units {_f(units, '.1f')} ± "
            f"{_f(stats['units'][1], '.1f')}; perplexity change {_f(ppl, '+.1f')} ± "
            f"{_f(stats['ppl'][1], '.1f')}% (activation ranking "
            f"{_f(stats['act_rank_ppl'][0], '+.1f')}%); other canaries kept "
            f"{_f(stats['kept'][0], '.2f')}; random control still extracts "
            f"{_f(stats['control'][0], '.2f')} at {_f(stats['control_ppl'][0], '+.1f')}% "
            f"perplexity; exact minimal zeroing set {_f(stats['min_units'][0], '.1f')} ± "
            f"{_f(stats['min_units'][1], '.1f')} units; within 1.5x of it at <= 1.5x its "
            f"perplexity cost {_f(near_min, '.2f')} ± {_f(stats['near_min'][1], '.2f')}"
        ),
        target=TARGET,
        verdict=verdict,
        reproduced=met,
        outcome="reproduced" if met else "not reproduced",
        figures=figures,
    )


def _f(x, spec):
    """``format(x, spec)``, or "n/a" where nothing was measured (nan)."""
    return format(x, spec) if np.isfinite(x) else "n/a"
