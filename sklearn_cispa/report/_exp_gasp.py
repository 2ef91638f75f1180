"""Report row of LatentBOSuffixSearch: its defaults against the random subset at equal
unique calls on the toy benchmarks (issues 22 and 36)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._gasp_eval import (
    ARMS,
    ablation_summary,
    benchmark_rates,
    loop_ablation,
    paired_difference,
)

BENCHMARKS = {
    "smooth": "best",  # P(best found), 6 unique calls
    "rough": "best",  # the guard: no gain expected
    "keyword": "asr",  # ASR@10, clustered candidates
    "keyword-unique": "asr",  # ASR@10, the spec's one-word variants
}


@register_experiment(
    "gasp",
    title="LatentBOSuffixSearch (GASP search)",
    description="default search against a random subset at equal unique calls, toy benchmarks",
    claim=(
        "GASP's latent Bayesian optimisation finds good suffixes in fewer queries than "
        "random. The paper's ASR figures (LLM targets, LLM judge) are out of scope; issue "
        "36: the default beats random by >= 3 SE on the smooth landscape and the keyword "
        "target and stays within noise on the rough landscape."
    ),
    cost=(11, 300),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Default ``LatentBOSuffixSearch`` (char TF-IDF or the given embeddings, no
    reduction, PI, numpy Matern 5/2 GP) against ``RandomSubsetSearch``.

    Seeds are in blocks of 20; the values' spread is over blocks, the differences'
    standard errors are over seeds (paired: both searches see the same landscape).
    Quick: 3 blocks; full: 10 blocks (200 seeds per benchmark) and the paper's loop ablation
    (:func:`~sklearn_cispa.report._gasp_eval.loop_ablation` at its defaults: the class
    keyword target, LBO over the generator's hidden states with one random initial
    query, ORPO with 8 passes over each round's pairs; seeds 1000-1039, held out from
    the 0-39 that chose its setting:
    ASR@10 of the four arms and the suffix perplexity under a held-out reference model;
    the verdict names the measured order and which adjacent steps are >= 3 SE).
    """
    n_blocks, per_block = (3, 20) if quick else (10, 20)
    rows, seed_diff = {}, {}
    for bench, key in BENCHMARKS.items():
        ours, rand, diff = [], [], []
        for b in range(n_blocks):
            seeds = range(random_state + b * per_block, random_state + (b + 1) * per_block)
            o = benchmark_rates(bench, seeds, "discrete")
            r = benchmark_rates(bench, seeds, "random-subset")
            ours.append(o[key])
            rand.append(r[key])
            diff.append(o["per_seed"][key] - r["per_seed"][key])
        rows[bench] = (np.array(ours), np.array(rand))
        seed_diff[bench] = np.concatenate(diff)  # paired: the same landscape per seed

    def ms(v):
        return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))

    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(7, 3.5))
        x = np.arange(len(rows))
        for off, idx, label in ((-0.2, 0, "default LBO"), (0.2, 1, "random subset")):
            vals = [ms(r[idx]) for r in rows.values()]
            ax.bar(x + off, [v[0] for v in vals], 0.4, yerr=[v[1] for v in vals],
                   label=label)
        ax.set_xticks(x, [f"{b}\n({BENCHMARKS[b]})" for b in rows])
        ax.set_ylim(0, 1)
        ax.set_title(f"equal unique calls, {n_blocks * per_block} seeds per benchmark")
        ax.legend(fontsize=8)
        figures = save_figure(fig, out_dir, "gasp_default_vs_random.png")
    parts, gaps = [], {}
    for bench, (o, r) in rows.items():
        d = seed_diff[bench]  # SE over seeds (the blocks are too few for their spread)
        se = float(d.std(ddof=1) / np.sqrt(len(d)))
        gaps[bench] = (float(d.mean()), se)
        parts.append(f"{bench} {BENCHMARKS[bench]}: {o.mean():.2f} vs {r.mean():.2f} "
                     f"({d.mean():+.2f} ± {se:.2f})")
    # seeds 0-39 chose the ablation's setting (user guide); the row runs held-out ones
    ablation = (None if quick else
                loop_ablation(seeds=range(random_state + 1000, random_state + 1040)))
    means, resolved = [], []
    ablation_note = (" The loop ablation (40 held-out seeds, a few minutes) runs in full "
                     "mode only." if quick else "")
    if ablation is not None:
        summ = ablation_summary(ablation)
        arms = "; ".join(
            f"{a} {summ[a]['asr'][0]:.2f} ± {summ[a]['asr'][1]:.2f} (perplexity "
            f"{summ[a]['perplexity'][0]:.1f} ± {summ[a]['perplexity'][1]:.1f})" for a in ARMS)
        # the order's adjacent steps, paired over the same seeds
        steps = list(zip(ARMS[:-1], ARMS[1:]))
        gaps_ab = {(a, b): paired_difference(ablation, a, b) for a, b in steps}
        parts.append(
            "loop ablation (class keyword target, generator-state LBO with 1 initial "
            "random query, ORPO 8 passes per round, lr 3e-3, lambda 0.1), ASR@10 over 40 "
            f"held-out seeds: {arms}; paired: "
            + ", ".join(
                f"{a} - {b} {m:+.3f} ± {se:.3f}" for (a, b), (m, se) in gaps_ab.items())
        )
        means = [summ[a]["asr"][0] for a in ARMS]
        resolved = [se > 0 and m >= 3 * se for m, se in gaps_ab.values()]
        order = " > ".join(a for a in sorted(ARMS, key=lambda a: -summ[a]["asr"][0]))
        ok = [f"{a} > {b}" for (a, b), r in zip(steps, resolved) if r]
        ablation_note = (
            f" Loop ablation: measured order {order}; paired steps >= 3 SE: "
            + (", ".join(ok) if ok else "none")
            + ("; under 3 SE: " + ", ".join(
                f"{a} > {b}" for (a, b), r in zip(steps, resolved) if not r)
               if not all(resolved) else "")
            + "."
        )
        if plt is not None:
            fig, ax = plt.subplots(figsize=(6, 3.5))
            for a in ARMS:
                ax.plot(range(1, len(summ[a]["curve"]) + 1), summ[a]["curve"], marker="o",
                        label=a)
            ax.set_xlabel("queries per held-out goal (k)")
            ax.set_ylabel("ASR@k")
            ax.set_ylim(0, 1.05)
            ax.set_title("GASP loop ablation, toy class keyword target, 40 held-out seeds")
            ax.legend(fontsize=8)
            figures = tuple(figures) + tuple(save_figure(fig, out_dir, "gasp_ablation.png"))
    s_o, s_r = rows["smooth"]

    def beats(bench):  # >= 3 SE over the blocks
        m, se = gaps[bench]
        return m > 0 and m >= 3 * se

    search_in_mean = gaps["smooth"][0] > 0 and gaps["keyword"][0] > 0
    guard = abs(gaps["rough"][0]) < 3 * max(gaps["rough"][1], 1e-12)
    search_resolved = beats("smooth") and beats("keyword") and guard
    order_holds = ablation is None or (means[0] > means[1] > means[2] > means[3]
                                       and all(resolved))
    if not search_in_mean:
        reproduced = False
    elif search_resolved and order_holds:
        reproduced = True
    else:
        reproduced = None
    search_note = (
        ". The default beats random by >= 3 SE on the smooth and keyword benchmarks and "
        "stays within noise on the rough one" if search_resolved else
        ". The default beats random in the mean on the smooth and keyword benchmarks, "
        "not by 3 SE on both (or the rough guard fails) at these seeds" if search_in_mean
        else ". The default does not beat random on both benchmarks at these seeds")
    return ExperimentResult(
        metric="P(best found), smooth landscape, 6 unique calls",
        value=ms(s_o)[0],
        value_sd=ms(s_o)[1],
        peer="RandomSubsetSearch (same unique calls)",
        peer_value=ms(s_r)[0],
        peer_sd=ms(s_r)[1],
        n_runs=n_blocks,
        settings=(
            "LatentBOSuffixSearch defaults (reducer=None, acq_func='PI', numpy Matern 5/2 "
            "GP); smooth/rough: make_toy_landscape, precomputed 32-d embeddings, 6 calls; "
            f"keyword: ToyKeywordTarget + ToyRubricJudge, 30 candidates, 10 calls; "
            f"{n_blocks} x {per_block} seeds"
        ),
        details="; ".join(parts),
        target=(
            "the default beats RandomSubsetSearch at equal unique calls by >= 3 SE on the "
            "smooth landscape (P(best)) and the keyword target (ASR@10), and is within 3 SE "
            "of it on the rough landscape; full mode also: loop ablation ASR@10 full loop > "
            "no ORPO > no LBO > random candidates at the same target queries on the class "
            "keyword target, over 40 held-out seeds, each adjacent step >= 3 SE (paired)"
        ),
        verdict="; ".join(parts) + search_note + "." + ablation_note,
        reproduced=reproduced,
        figures=figures,
    )
