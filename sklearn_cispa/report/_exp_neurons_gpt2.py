"""Report row of CriticalNeuronLocator on a transformer: planted canaries in a character
GPT-2 built by TransformerLanguageModel (issue 38)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._neurons_eval import (
    canary_benchmark,
    canary_transformer_setting,
    nothing_memorised_result,
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
    cost=(17, 1200),  # seconds alone on 2 cores: quick measured, full estimated
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
    gloc = [r for r in mem if r.get("greedy_localized")]
    gsmall = [r for r in gloc if not r["greedy_extracted_after"] and r["greedy_units"] <= 8]
    nan = float("nan")

    def mean(key, among):
        vals = [r[key] for r in among if key in r]
        return float(np.nanmean(vals)) if vals else nan

    return dict(
        memorized=len(mem) / len(rows),
        stopped_le_8=len(small) / len(mem) if mem else 0.0,
        units=float(np.median([r["units"] for r in loc])) if loc else nan,
        oracle_calls=float(np.median([r["n_oracle_calls"] for r in loc])) if loc else nan,
        ppl=100 * mean("ppl_change", loc),
        control_stopped=(float(np.mean([1 - r["control_extracted"] for r in loc]))
                         if loc else nan),
        kept=mean("others_kept", loc),
        act_rank_stopped=(float(np.mean([not r["act_rank_extracted_after"] for r in loc]))
                          if loc else nan),
        greedy_le_8=len(gsmall) / len(mem) if mem else 0.0,
        greedy_units=float(np.median([r["greedy_units"] for r in gloc])) if gloc else nan,
        greedy_calls=(float(np.median([r["greedy_oracle_calls"] for r in gloc]))
                      if gloc else nan),
        greedy_kept=mean("greedy_others_kept", gloc),
        ga_stopped=(float(np.mean([not r["ga_extracted_after"] for r in loc]))
                    if loc else nan),
        ga_kept=mean("ga_others_kept", loc),
        ga_forget_ppl=100 * mean("ga_forget_ppl_change", loc),
        ga_forget_kept=mean("ga_forget_others_kept", loc),
    )


def _run(*, quick, out_dir, random_state):
    setting = canary_transformer_setting(quick)

    n_seeds = 3
    per_seed, first = [], None
    for i in range(n_seeds):
        lm, heldout, canaries = train_canary_transformer(random_state + i, **setting)
        out = canary_benchmark(lm, heldout, canaries, random_state=random_state + i,
                               minimal=False, greedy=True, editing=True,
                               n_controls=1 if quick else 5,
                               editing_steps=10 if quick else 30)
        if first is None and any(r["localized"] for r in out["rows"]):
            first = (random_state + i, out)  # the figure's seed: the first that localises
        if any(r["memorized"] for r in out["rows"]):
            per_seed.append(summarise(out["rows"]))
    # seeds that memorise no canary have nothing to localise: left out of the means, counted
    n_none = n_seeds - len(per_seed)
    # a seed that memorises but localises none has no unit count etc.: left out of those
    stats = ({k: mean_sd([s[k] for s in per_seed if np.isfinite(s[k])]) for k in per_seed[0]}
             if per_seed else None)

    wide = None
    if not quick:  # one block of width 1024: the threshold search against greedy
        wide_units, wide_greedy, wide_calls = [], [], []
        for i in range(n_seeds):
            lm, heldout, canaries = train_canary_transformer(
                random_state + i, **dict(setting, n_layer=1, n_inner=1024))
            out = canary_benchmark(lm, heldout, canaries, random_state=random_state + i,
                                   minimal=False, greedy=True, n_controls=1)
            rows = [r for r in out["rows"] if r["localized"] and r.get("greedy_localized")]
            wide_units += [r["units"] for r in rows]
            wide_greedy += [r["greedy_units"] for r in rows]
            wide_calls += [r["n_oracle_calls"] for r in rows]
        wide = (dict(units=float(np.median(wide_units)),
                     greedy=float(np.median(wide_greedy)),
                     calls=float(np.median(wide_calls)), n=len(wide_units))
                if wide_units else dict(n=0))

    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        if first is None:
            ax.text(0.5, 0.5, f"no canary localised in any of the {n_seeds} seeds",
                    ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        else:
            seed, out = first
            rows = [r for r in out["rows"] if r["localized"]]
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
            ax.set_title(f"2-block character GPT-2, seed {seed}")
        fig.tight_layout()
        figures = save_figure(fig, out_dir, "neurons_gpt2_canaries.png")

    settings = (
        f"make_canary_corpus + TransformerLanguageModel('gpt2', n_layer=2, n_embd=64, "
        f"n_head=4, n_inner=256, char tokenizer) {setting}, locator defaults "
        f"(method='threshold'), X_ref = "
        f"held-out text; greedy margin search (method='greedy'); gradient ascent "
        f"(language.gradient_ascent_unlearning, Adam lr 1e-4, up to 30 steps, 10 in "
        f"quick mode) at most "
        f"the mask's perplexity cost; {n_seeds} seeds"
        + ("" if quick else "; width 1024: the same with n_layer=1, n_inner=1024")
    )
    if stats is None:
        return nothing_memorised_result(
            "memorised canaries stopped by <= 8 located units", n_seeds, settings,
            _target(quick), figures)

    stopped, ppl = stats["stopped_le_8"][0], stats["ppl"][0]
    control, kept = stats["control_stopped"][0], stats["kept"][0]
    calls = stats["oracle_calls"][0]
    # nan (nothing localised) fails every comparison: the target is then not met
    met = bool(stopped >= 0.8 and ppl < 1.0 and control <= 0.05 and kept >= 0.8
               and calls <= 100)
    none = (f" {n_none} of {n_seeds} seeds memorise no canary and are left out of the "
            f"means." if n_none else "")
    verdict = (
        f"{100 * stopped:.0f}% of memorised canaries are stopped by <= 8 located units "
        f"(median {_f(stats['units'][0], '.0f')} units, {_f(calls, '.0f')} oracle calls) "
        f"at {_f(ppl, '+.2f')}% held-out perplexity; matched random controls stop "
        f"{_f(100 * control, '.0f')}%, {_f(100 * kept, '.0f')}% of the other canaries "
        f"stay extractable. "
        f"Greedy margin search: {100 * stats['greedy_le_8'][0]:.0f}% by <= 8 units "
        f"(median {_f(stats['greedy_units'][0], '.0f')}). Gradient ascent on the canary "
        f"at the mask's perplexity cost stops {_f(100 * stats['ga_stopped'][0], '.0f')}% "
        f"and keeps {_f(100 * stats['ga_kept'][0], '.0f')}% of the others." + none
    )
    if wide is not None:
        if wide["n"]:
            met = met and wide["units"] <= 2 * wide["greedy"]
            verdict += (
                f" One block of width 1024: median {wide['units']:.0f} units against "
                f"greedy's {wide['greedy']:.0f} ({wide['calls']:.0f} oracle calls)."
            )
        else:
            met = False
            verdict += " One block of width 1024: no canary localised by both searches."
    verdict = ("Reproduces the target: " if met else "Does not reproduce the target: "
               ) + verdict
    return ExperimentResult(
        metric="memorised canaries stopped by <= 8 located units",
        value=stopped,
        value_sd=stats["stopped_le_8"][1],
        peer="activation ranking at the same unit budget (in-library baseline)",
        peer_value=stats["act_rank_stopped"][0],
        peer_sd=stats["act_rank_stopped"][1],
        n_runs=len(per_seed),
        settings=settings,
        details=(
            f"seeds with a memorised canary {len(per_seed)} of {n_seeds}; memorised "
            f"{stats['memorized'][0]:.2f}; perplexity change {_f(ppl, '+.2f')} ± "
            f"{_f(stats['ppl'][1], '.2f')}%; random controls stop {_f(control, '.2f')}; "
            f"other canaries kept {_f(kept, '.2f')}; median units "
            f"{_f(stats['units'][0], '.1f')}, oracle calls {_f(calls, '.0f')}; greedy: "
            f"<= 8 units {stats['greedy_le_8'][0]:.2f}, median units "
            f"{_f(stats['greedy_units'][0], '.1f')}, calls "
            f"{_f(stats['greedy_calls'][0], '.0f')}, kept "
            f"{_f(stats['greedy_kept'][0], '.2f')}; gradient ascent at equal cost: stopped "
            f"{_f(stats['ga_stopped'][0], '.2f')}, kept {_f(stats['ga_kept'][0], '.2f')}; "
            f"until forgotten: {_f(stats['ga_forget_ppl'][0], '+.2f')}% perplexity, kept "
            f"{_f(stats['ga_forget_kept'][0], '.2f')}"
            + ("; width 1024 not run in quick mode" if wide is None else
               "; width 1024: no canary localised by both" if not wide["n"] else
               f"; width 1024 (n={wide['n']}): median units {wide['units']:.0f} vs greedy "
               f"{wide['greedy']:.0f}, calls {wide['calls']:.0f}")
        ),
        target=_target(quick),
        verdict=verdict,
        reproduced=met,
        outcome="reproduced" if met else "not reproduced",
        figures=figures,
    )


def _f(x, spec):
    """``format(x, spec)``, or "n/a" where nothing was measured (nan)."""
    return format(x, spec) if np.isfinite(x) else "n/a"


def _target(quick):
    return (
        "issue 38, over 3 seeds: >= 80% of memorised canaries stopped by <= 8 located "
        "units, held-out perplexity +< 1%, matched random controls (same count per "
        "layer) stop <= 5%, >= 80% of the other canaries kept, median oracle calls per "
        "canary <= 100"
        + ("" if quick else "; one block of width 1024: the locator's median units "
           "within 2x of the greedy margin search's")
    )
