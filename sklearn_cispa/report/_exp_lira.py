"""Report row of LiRAMembershipInference: LiRA against the loss attack on digits (issue 19)."""

import warnings

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._stats import fmt_pm, mean_sd, paired_difference

# the spec's setting (section 7) and a smaller one for the quick report
FULL = {"n_pool": 500, "hidden": (256,), "max_iter": 400, "n_reference": 32, "n_targets": 4}
QUICK = {"n_pool": 300, "hidden": (64,), "max_iter": 200, "n_reference": 16, "n_targets": 4}
VARIANTS = {
    "online, fixed sigma": {},
    "online, per-example sigma": {"fix_variance": False},
    "offline, one-sided": {"online": False},
    "offline, two-sided": {"online": False, "offline_test": "two-sided"},
}


def lira_digits_audit(seed, *, n_pool=500, hidden=(256,), max_iter=400, n_reference=32,
                      n_targets=4, n_jobs=None):
    """Fit LiRA on a random digits pool with unregularised MLP references and targets.

    Returns the fitted :class:`~sklearn_cispa.privacy.LiRAMembershipInference`; its
    ``evaluate`` gives LiRA's and the loss attack's metrics, and ``lira_scores`` on
    ``ref_stats_`` gives the other variants and smaller numbers of references.
    """
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    from sklearn_cispa.privacy import LiRAMembershipInference

    X, y = load_digits(return_X_y=True)
    rows = np.random.default_rng(seed).permutation(len(y))[:n_pool]
    X, y = X[rows] / 16.0, y[rows]
    est = MLPClassifier(hidden_layer_sizes=hidden, alpha=0.0, max_iter=max_iter)
    lira = LiRAMembershipInference(est, n_reference=n_reference, n_targets=n_targets,
                                   n_jobs=n_jobs, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLP convergence warnings at max_iter
        lira.fit(X, y)
    return lira


def variant_metrics(lira, n_reference=None, fpr=0.01, **kw):
    """Pooled AUC and TPR at ``fpr`` of a LiRA variant using the first references."""
    from sklearn.metrics import roc_auc_score

    from sklearn_cispa.metrics import tpr_at_fpr
    from sklearn_cispa.privacy import lira_scores

    m = lira.n_reference if n_reference is None else n_reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # examples without IN references at small M
        scores = np.concatenate(
            [lira_scores(lira.keep_[:m], lira.ref_stats_[:m], s, **kw)
             for s in lira.target_stats_]
        )
    labels = lira.target_keep_.ravel()
    return roc_auc_score(labels, scores), tpr_at_fpr(labels, scores, fpr=fpr), scores, labels


@register_experiment(
    "lira",
    title="LiRAMembershipInference",
    description="TPR at 1% FPR of online LiRA against the loss attack, digits MLP targets",
    claim=(
        "Reference-model LiRA beats the global loss threshold at low FPR, and more "
        "reference models help (LiRA paper; Hayes et al. at LLM scale: 1 -> 256 IN "
        "references raise AUC 0.540 -> 0.680). Spec checks on digits, M = 32: AUC >= 0.70 "
        "and TPR at 1% FPR >= 5x the loss attack's; AUC(M=32) - AUC(M=4) >= 0.03."
    ),
    cost=(6, 120),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Random digits pools, unregularised MLP references and targets, 3 seeds.

    Quick: 300 examples, MLP(64), 16 references; full: the spec's 500, MLP(256), 32.
    """
    cfg = QUICK if quick else FULL
    n_seeds = 3
    tpr, tpr_loss, auc, auc_loss, auc_small = [], [], [], [], []
    first = None
    for i in range(n_seeds):
        lira = lira_digits_audit(random_state + i, **cfg)
        res = lira.evaluate(fprs=(0.01,))
        tpr.append(res["tpr_at_fpr"][0.01])
        tpr_loss.append(res["baseline_tpr_at_fpr"][0.01])
        auc.append(res["auc"])
        auc_loss.append(res["baseline_auc"])
        auc_small.append(variant_metrics(lira, 4)[0])
        first = first or lira
    gain = paired_difference(tpr, tpr_loss)
    more = paired_difference(auc, auc_small)
    m_tpr, s_tpr = mean_sd(tpr)
    m_loss, s_loss = mean_sd(tpr_loss)
    ratio = m_tpr / max(m_loss, 1e-12)
    figures = ()
    plt = get_pyplot()
    if plt is not None:
        from sklearn.metrics import roc_curve

        fig, ax = plt.subplots(figsize=(5, 4))
        for name, kw in VARIANTS.items():
            a, _, scores, labels = variant_metrics(first, **kw)
            fpr, tp, _ = roc_curve(labels, scores)
            ax.plot(fpr, tp, label=f"LiRA {name} (AUC {a:.3f})")
        res = first.evaluate(fprs=(0.01,))
        base = first.target_stats_.mean(axis=2).ravel()
        fpr, tp, _ = roc_curve(first.target_keep_.ravel(), base)
        ax.plot(fpr, tp, ls="--", label=f"loss threshold (AUC {res['baseline_auc']:.3f})")
        ax.plot([1e-5, 1], [1e-5, 1], ls=":", color="gray")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(1e-3, 1)
        ax.set_ylim(1e-3, 1)
        ax.set_xlabel("false-positive rate")
        ax.set_ylabel("true-positive rate")
        ax.set_title(f"digits MLP, M = {cfg['n_reference']} (seed {random_state})")
        ax.legend(fontsize=7)
        figures = save_figure(fig, out_dir, "lira_roc.png")
    beats = gain["resolved"] and gain["mean"] > 0 and ratio >= 5
    helps = more["resolved"] and more["mean"] >= 0.03
    verdict = (
        f"TPR at 1% FPR {fmt_pm(m_tpr, s_tpr)} against {fmt_pm(m_loss, s_loss)} for the loss "
        f"attack ({ratio:.1f}x); AUC {fmt_pm(*mean_sd(auc))} against "
        f"{fmt_pm(*mean_sd(auc_loss))}; AUC(M={cfg['n_reference']}) - AUC(M=4) = "
        f"{more['mean']:+.3f} ± {more['sd']:.3f}. "
    )
    if beats and helps:
        verdict = "Reproduces: " + verdict
        reproduced = True
    else:
        verdict = "Does not fully reproduce: " + verdict
        # a gain in the right direction that the spread does not resolve is within noise;
        # a resolved gain that misses the 5x or the +0.03 target is not reproduced
        reproduced = None if (gain["mean"] > 0 and not gain["resolved"]) else False
    return ExperimentResult(
        metric="TPR at 1% FPR (higher = stronger attack)",
        value=m_tpr,
        value_sd=s_tpr,
        peer="loss (global threshold) attack",
        peer_value=m_loss,
        peer_sd=s_loss,
        n_runs=n_seeds,
        settings=(
            f"load_digits, random pool of {cfg['n_pool']} per seed, "
            f"MLPClassifier{cfg['hidden']} alpha=0 max_iter={cfg['max_iter']}, "
            f"{cfg['n_reference']} references + {cfg['n_targets']} targets (balanced design), "
            f"online LiRA with fixed sigma, statistic='logit'; {n_seeds} seeds"
        ),
        details=f"AUC {fmt_pm(*mean_sd(auc))}; loss-attack AUC {fmt_pm(*mean_sd(auc_loss))}",
        target=(
            f"TPR at 1% FPR >= 5x the loss attack's (gain beyond 2 standard errors) and "
            f"AUC(M={cfg['n_reference']}) - AUC(M=4) >= 0.03"
        ),
        verdict=verdict,
        reproduced=reproduced,
        figures=figures,
    )
