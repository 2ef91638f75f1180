"""Report row of LatentBOSuffixSearch: P(best found) on the toy landscape (issue 22)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._gasp_eval import landscape_trial
from sklearn_cispa.report._stats import mean_sd, paired_difference

STRATEGIES = {
    "discrete, raw 32-d": ("discrete", {"reducer": None}),
    "discrete, PCA 2-d": ("discrete", {"reducer": "pca"}),
    "random subset": ("random-subset", {}),
}


@register_experiment(
    "gasp",
    title="LatentBOSuffixSearch (GASP search)",
    description="P(best candidate found) in 6 unique calls on the toy landscape, against random",
    claim=(
        "GASP's latent Bayesian optimisation finds good suffixes in few queries. The paper's "
        "ASR figures (LLM targets, LLM judge) are out of scope; spec target on the synthetic "
        "smooth landscape: P(best found) >= 0.40 with 6 unique calls, random 0.30."
    ),
    cost=(11, 40),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Smooth toy landscape (20 candidates, 32-d embeddings), 6 unique calls.

    Seeds are grouped in blocks of 20 landscapes; the spread is over blocks.
    Quick: 3 blocks; full: 10 blocks (200 landscapes, the spec's protocol).
    """
    n_blocks, per_block = (3, 20) if quick else (10, 20)
    rates = {name: [] for name in STRATEGIES}
    for b in range(n_blocks):
        seeds = [random_state + b * per_block + i for i in range(per_block)]
        for name, (strategy, params) in STRATEGIES.items():
            hits = [landscape_trial("smooth", s, strategy, **params)["best"] for s in seeds]
            rates[name].append(float(np.mean(hits)))
    stats = {k: mean_sd(v) for k, v in rates.items()}
    main, peer = "discrete, raw 32-d", "random subset"
    diff = paired_difference(rates[main], rates[peer])
    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        names = list(STRATEGIES)
        ax.bar(names, [stats[k][0] for k in names], yerr=[stats[k][1] for k in names],
               color=["C0", "C1", "C7"])
        ax.axhline(0.30, ls="--", color="k", label="random, analytic 6/20")
        ax.set_ylabel("P(best candidate found)")
        ax.set_title(f"smooth toy landscape, 6 unique calls, {n_blocks * per_block} seeds")
        ax.legend(fontsize=8)
        figures = save_figure(fig, out_dir, "gasp_p_best.png")
    target = stats[main][0] >= 0.40 - 1e-9
    verdict = (
        f"P(best) discrete (GP on the 32-d embeddings) {stats[main][0]:.2f} against random "
        f"{stats[peer][0]:.2f}: difference {diff['mean']:+.2f} ± {diff['sd']:.2f} over "
        f"{n_blocks} blocks of {per_block} landscapes "
        f"({'resolved' if diff['resolved'] else 'not resolved'}); the spec's 0.40 target is "
        f"{'met' if target else 'missed'}. With a 2-D PCA map the discrete search reaches "
        f"{stats['discrete, PCA 2-d'][0]:.2f}: the 2-D map keeps too little of the 32-d "
        "landscape at 20 candidates."
    )
    reproduced = True if (target and diff["resolved"]) else None
    return ExperimentResult(
        metric="P(best found), 6 unique calls",
        value=stats[main][0],
        value_sd=stats[main][1],
        peer="RandomSubsetSearch (same 6 unique calls)",
        peer_value=stats[peer][0],
        peer_sd=stats[peer][1],
        n_runs=n_blocks,
        settings=(
            "make_toy_landscape(kind='smooth', 20 candidates, 32 features); "
            "LatentBOSuffixSearch(embedder='precomputed', strategy='discrete', acq_func='EI', "
            f"n_calls=6, n_initial_points=2); {n_blocks} x {per_block} seeds"
        ),
        details=f"discrete with PCA 2-d: {stats['discrete, PCA 2-d'][0]:.2f}",
        verdict=verdict,
        reproduced=reproduced,
        figures=figures,
    )
