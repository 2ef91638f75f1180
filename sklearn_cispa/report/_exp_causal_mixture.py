"""Report row: CausalMixtureDiscoverer's edge F1 and group ARI beside GES on generated data."""

import time

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._stats import fmt_pm, mean_sd, paired_difference, seed_bars
from sklearn_cispa.utils import is_available


def compare_on_generated(*, n_nodes, n_samples, seeds, cmm_params, random_state=0, with_peers=True):
    """Fit the discoverer (and the peers, when causal-learn is installed) on the spec's data.

    Returns a dict of per-seed lists: ``cmm``, ``ges``, ``lingam`` (edge F1; DirectLiNGAM
    is causal-learn's implementation), ``ari`` (mean ARI of the nodes that are truly mixed,
    against their observed truth) and ``cmm_time`` (seconds per fit).
    """
    from sklearn.metrics import adjusted_rand_score
    from sklearn.preprocessing import StandardScaler

    from sklearn_cispa.causal import CausalMixtureDiscoverer
    from sklearn_cispa.datasets import make_causal_mixture
    from sklearn_cispa.report._cmm_eval import edge_f1, node_truth_labels, run_ges, run_lingam

    peers = with_peers and is_available("causallearn")
    out = {"cmm": [], "ges": [], "lingam": [], "ari": [], "cmm_time": []}
    for seed in seeds:
        X, adj, sets, Z = make_causal_mixture(
            n_samples=n_samples,
            n_nodes=n_nodes,
            mixed_fraction=0.5,
            n_mixing=2,
            random_state=seed,
        )
        X = StandardScaler().fit_transform(X)
        start = time.perf_counter()
        est = CausalMixtureDiscoverer(random_state=random_state, **cmm_params).fit(X)
        out["cmm_time"].append(time.perf_counter() - start)
        out["cmm"].append(edge_f1(est.adjacency_, adj))
        aris = []
        for j in sorted(set().union(*sets)):
            truth = node_truth_labels(j, np.flatnonzero(est.adjacency_[:, j]), adj, sets, Z)
            aris.append(adjusted_rand_score(truth, est.labels_[:, j]))
        out["ari"].append(float(np.mean(aris)) if aris else float("nan"))
        if peers:
            out["ges"].append(edge_f1(run_ges(X), adj))
            out["lingam"].append(edge_f1(run_lingam(X, random_state), adj))
    return out


TARGET = (
    "CMM - GES directed-edge F1 > 0, paired over the seeds, beyond 2 standard errors "
    "(the spec asks mean F1(CMM) >= F1(GES) - 0.05 on N = 6, n = 500); DirectLiNGAM, "
    "'a strong baseline', is reported beside it"
)


@register_experiment(
    "causal_mixture",
    title="CausalMixtureDiscoverer",
    description="edge F1 and mixed-node group ARI on generated causal mixtures, beside GES",
    claim=(
        "Causal mixture models recover the graph of mixed data better than mixture-unaware "
        "discovery (paper; its tables were not available). Spec: on the reference demo file "
        "CMM F1 0.897 vs causal-learn GES 0.375 (DirectLiNGAM 0.857); on generated data "
        "(N=6, n=500) mean F1(CMM) >= F1(GES) - 0.05; 'LiNGAM is a strong baseline'."
    ),
    cost=(5, 60),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Spec V3 protocol (N = 6, P = 0.4, C = 5, K = 2, PZ = 0.5, NZ = 2), X standardised.

    Quick: n = 500, 8 seeds, ``max_components=3, n_init=1``; the CMM - GES gap is
    resolved from 6 seeds at random_state 0 (at n = 300 or with 2 seeds it is not: the
    earlier quick row showed CMM losing, 0.50 vs 0.64). Full: 10 seeds, the defaults.
    """
    if quick:
        n_samples, n_seeds, params = 500, 8, {"max_components": 3, "n_init": 1}
    else:
        n_samples, n_seeds, params = 500, 10, {}
    res = compare_on_generated(
        n_nodes=6,
        n_samples=n_samples,
        seeds=[random_state + s for s in range(n_seeds)],
        cmm_params=params,
        random_state=random_state,
    )
    have_peers = bool(res["ges"])
    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(4.8, 3.2))
        series = [("CMM", res["cmm"])]
        if have_peers:
            series += [("GES", res["ges"]), ("DirectLiNGAM", res["lingam"])]
        seed_bars(ax, series)
        ax.set_ylabel("directed-edge F1")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"N=6, n={n_samples}, {n_seeds} seeds (dots: seeds)")
        figures = save_figure(fig, out_dir, "causal_mixture_f1.png")

    cmm = mean_sd(res["cmm"])
    settings = (
        f"make_causal_mixture(N=6, n={n_samples}, mixed_fraction=0.5, n_mixing=2), "
        f"StandardScaler; CausalMixtureDiscoverer({params or 'defaults'}); {n_seeds} seeds; "
        "CPDAG undirected edges counted both ways"
    )
    details = (
        f"mixed-node ARI {fmt_pm(*mean_sd(res['ari']), 2)}; "
        f"CMM {np.mean(res['cmm_time']):.1f} s per fit"
    )
    if not have_peers:
        return ExperimentResult(
            metric="edge F1",
            value=cmm[0],
            value_sd=cmm[1],
            peer="(none: install the report extra for causal-learn's GES)",
            peer_value=float("nan"),
            n_runs=n_seeds,
            settings=settings,
            details=details,
            target=TARGET,
            verdict="No peer ran (causal-learn is not installed), so nothing is compared.",
            reproduced=None,
            figures=figures,
        )
    vs_ges = paired_difference(res["cmm"], res["ges"])
    vs_lingam = paired_difference(res["cmm"], res["lingam"])
    lingam_word = (
        ("above" if vs_lingam["mean"] > 0 else "below")
        if vs_lingam["resolved"]
        else "not resolvably different from"
    )
    tail = (
        f" Against DirectLiNGAM (causal-learn) CMM is {lingam_word} it: "
        f"{vs_lingam['mean']:+.3f} ± {vs_lingam['sd']:.3f}."
    )
    if vs_ges["resolved"] and vs_ges["mean"] > 0:
        verdict = (
            f"Reproduces against GES: CMM - GES = {vs_ges['mean']:+.3f} ± {vs_ges['sd']:.3f} "
            f"F1 (paired over {n_seeds} seeds, beyond 2 standard errors)." + tail
        )
        reproduced = True
    else:
        verdict = (
            f"Not resolved at this size: CMM - GES = {vs_ges['mean']:+.3f} ± "
            f"{vs_ges['sd']:.3f} over {n_seeds} seeds." + tail
        )
        reproduced = False if vs_ges["resolved"] else None
    ges = mean_sd(res["ges"])
    return ExperimentResult(
        metric="edge F1",
        value=cmm[0],
        value_sd=cmm[1],
        peer="causal-learn GES (BIC)",
        peer_value=ges[0],
        peer_sd=ges[1],
        n_runs=n_seeds,
        settings=settings,
        details=f"DirectLiNGAM (causal-learn) F1 {fmt_pm(*mean_sd(res['lingam']))}; " + details,
        target=TARGET,
        verdict=verdict,
        reproduced=reproduced,
        figures=figures,
    )
