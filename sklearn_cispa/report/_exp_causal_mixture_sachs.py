"""Report row: CausalMixtureDiscoverer on the Sachs et al. (2005) protein data, beside
causal-learn GES, PC and DirectLiNGAM (issue 23)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._stats import fmt_pm, mean_sd, paired_difference, seed_bars
from sklearn_cispa.utils import is_available


def _single_condition_mixed(n_rows, params, random_state):
    """Nodes called mixed on the first ``n_rows`` rows of condition 0 (log), with the
    discoverer's defaults and with ``flexible_noise=True``."""
    from sklearn_cispa.causal import CausalMixtureDiscoverer
    from sklearn_cispa.datasets import load_sachs

    sachs = load_sachs()
    rows = np.flatnonzero(sachs.target == 0)[:n_rows]
    X = np.log(sachs.data[rows])
    out = {"rows": len(rows)}
    for name, extra in (("defaults", {}), ("flexible_noise", {"flexible_noise": True})):
        est = CausalMixtureDiscoverer(random_state=random_state, **params, **extra).fit(X)
        out[name] = int((est.n_components_ > 1).sum())
    return out


TARGET = (
    "directed-edge F1 of CMM at least the best peer's (GES, PC, DirectLiNGAM) on the same "
    "subsamples, paired (issue 23), and mixing_evidence_ ranking the five intervention "
    "targets first: AUC > 0.5 with permutation p < 0.05 on every subsample"
)


@register_experiment(
    "causal_mixture_sachs",
    title="CausalMixtureDiscoverer (Sachs)",
    description="directed-edge F1 on the Sachs protein data (7 conditions pooled) vs GES",
    claim=(
        "The paper evaluates on the Sachs et al. (2005) flow-cytometry data as a mixture of "
        "interventional data sets (targets Akt, PKC, PIP2, Mek, PIP3); its tables are not in "
        "the reference repository. Issue 23 target: directed F1 at least the best peer's (GES, PC, "
        "DirectLiNGAM) and mixed nodes that match the targets better than chance."
    ),
    cost=(12, 60),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Subsamples of ``load_sachs()`` rows (the same number per condition), log
    intensities, scored against the 18-edge consensus graph; CPDAG undirected edges
    counted both ways. Quick: 3 subsamples of 50 rows per condition,
    ``max_components=3, n_init=1``; full: 3 subsamples of 100 rows, the defaults. Also
    the nodes called mixed on the rows of one condition alone (300 rows quick, all 853
    full), with the defaults and with ``flexible_noise=True``."""
    from sklearn_cispa.report import sachs_experiment

    rows, params = (50, {"max_components": 3, "n_init": 1}) if quick else (100, {})
    seeds = tuple(random_state + s for s in range(3))
    peers = is_available("causallearn")
    res = sachs_experiment(
        seeds=seeds, rows_per_condition=rows, cmm_params=params, with_peers=peers
    )
    f1 = res["f1"]
    single = _single_condition_mixed(300 if quick else 853, params, random_state)
    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(4.8, 3.2))
        labels = {"cmm": "CMM", "ges": "GES", "pc": "PC", "lingam": "DirectLiNGAM"}
        seed_bars(ax, [(labels[m], values) for m, values in f1.items()])
        ax.set_ylabel("directed-edge F1")
        ax.set_ylim(0, 1.0)
        ax.set_title(f"Sachs, {rows} rows/condition, log (dots: subsamples)")
        figures = save_figure(fig, out_dir, "causal_mixture_sachs_f1.png")

    cmm = mean_sd(f1["cmm"])
    settings = (
        f"load_sachs(): {len(seeds)} subsamples of {rows} rows per condition (7 conditions), "
        f"numpy.log; CausalMixtureDiscoverer({params or 'defaults'}); consensus graph "
        "(18 edges); CPDAG undirected edges counted both ways"
    )
    details = (
        f"skeleton F1 {fmt_pm(*mean_sd(res['skeleton_f1']['cmm']))}, SHD "
        f"{np.mean(res['shd']['cmm']):.1f}; targeted nodes' label AMI with their condition "
        f"{np.mean(res['target_ami']):.3f} (untargeted nodes {np.mean(res['other_ami']):.3f}, "
        f"permuted {np.mean(res['null_ami']):.3f}); nodes called mixed "
        f"{np.mean([len(m) for m in res['mixed']]):.1f} of 11; AUC of mixing_evidence_ for "
        f"the 5 targets {fmt_pm(*mean_sd(res['evidence_auc']))} (chance 0.5; permutation "
        f"p over node labels {np.min(res['evidence_p']):.2f}-{np.max(res['evidence_p']):.2f}); "
        f"reference runner's F1 (forward-index directed edges only) "
        f"{np.mean(res['reference_f1']['cmm']):.3f}; on {single['rows']} rows of ONE "
        f"condition (log, no mixing of conditions possible) nodes called mixed: "
        f"{single['defaults']} of 11 with the defaults, {single['flexible_noise']} with "
        "flexible_noise=True"
    )
    if not peers:
        return ExperimentResult(
            metric="edge F1",
            value=cmm[0],
            value_sd=cmm[1],
            peer="(none: install the report extra for causal-learn)",
            peer_value=float("nan"),
            n_runs=len(seeds),
            settings=settings,
            details=details,
            target=TARGET,
            verdict="No peer ran (causal-learn is not installed), so nothing is compared.",
            reproduced=None,
            figures=figures,
        )
    best = max(("ges", "pc", "lingam"), key=lambda m: np.mean(f1[m]))
    names = {"ges": "causal-learn GES (BIC)", "pc": "causal-learn PC", "lingam": "DirectLiNGAM"}
    diff = paired_difference(f1["cmm"], f1[best])
    others = "; ".join(
        f"{names[m]} F1 {fmt_pm(*mean_sd(f1[m]))} (reference F1 "
        f"{np.mean(res['reference_f1'][m]):.3f})"
        for m in ("ges", "pc", "lingam")
        if m != best
    )
    if diff["mean"] >= 0:
        verdict = (
            f"Target met at this size: CMM - best peer ({names[best]}) = {diff['mean']:+.3f} "
            f"± {diff['sd']:.3f} F1 over {len(seeds)} subsamples"
            + (" (resolved)." if diff["resolved"] else " (not resolved).")
        )
        reproduced = True if diff["resolved"] else None
    else:
        verdict = (
            f"Target missed: CMM - best peer ({names[best]}) = {diff['mean']:+.3f} ± "
            f"{diff['sd']:.3f} F1 over {len(seeds)} subsamples"
            + (" (resolved)." if diff["resolved"] else " (not resolved).")
            + " The pooled conditions shift almost every node (the condition is a latent "
            "common cause of nearly every pair), and the search adds edges wherever a "
            "mixture lowers the BIC. On one condition's rows alone the defaults call "
            f"{single['defaults']} of 11 nodes mixed, flexible_noise=True "
            f"{single['flexible_noise']} (it prices skewed, heteroscedastic noise as one "
            "mechanism)."
        )
        reproduced = False if diff["resolved"] else None
    auc, worst_p = float(np.mean(res["evidence_auc"])), float(np.max(res["evidence_p"]))
    if auc > 0.5 and worst_p < 0.05:
        verdict += f" The mixing evidence ranks the five targets first (AUC {auc:.2f})."
    else:
        verdict += (
            f" The mixing evidence does not single out the five targets (AUC {auc:.2f}, "
            "chance 0.5): mixed nodes do not match the targets better than chance."
        )
    peer = mean_sd(f1[best])
    return ExperimentResult(
        metric="edge F1",
        value=cmm[0],
        value_sd=cmm[1],
        peer=names[best],
        peer_value=peer[0],
        peer_sd=peer[1],
        n_runs=len(seeds),
        settings=settings,
        details=f"{others}; " + details,
        target=TARGET,
        verdict=verdict,
        reproduced=reproduced,
        figures=figures,
    )
