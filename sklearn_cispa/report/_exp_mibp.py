"""Report row of MIBPCertifier: certified accuracy of the exact step program vs intervals."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._stats import mean_sd, paired_difference
from sklearn_cispa.utils import spawn_seeds

BOUNDS = ("interval", "lp", "mibp")


def _one_seed(seed, n_train, n_epochs, eps):
    from sklearn.datasets import make_moons

    from sklearn_cispa.certification import MIBPCertifier

    X, y = make_moons(n_samples=n_train + 200, noise=0.1, random_state=seed)
    X_tr, y_tr, X_te, y_te = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    out = {}
    for bound in BOUNDS:
        fit = MIBPCertifier(
            epsilon=eps,
            max_epochs=n_epochs,
            lr=0.5,
            bound=bound,
            # the whole fit's budget (issue 35): 10 s per solve, 6 solves per step
            time_limit=60.0 * n_epochs,
            random_state=seed,
        ).fit(X_tr, y_tr)
        hist = fit.bounds_history_
        out[bound] = {
            "acc": fit.certified_accuracy(X_te, y_te),
            "clean": fit.score(X_te, y_te),
            "width": np.sum(hist[:, 1] - hist[:, 0], axis=1),
            "status": [s["status"] for s in getattr(fit, "solver_stats_", [])],
        }
    return out


@register_experiment(
    "mibp",
    title="MIBPCertifier",
    description="two moons, linear hinge model: certified accuracy, MIBP (SCIP) vs intervals",
    claim=(
        "Exact mixed-integer bounds certify more test points than interval bounds "
        "(paper, secondary summary: TwoMoons, 100 training rows, epsilon 0.01, 81.4% vs "
        "FullCert 69-71.5%). Spec re-implementation, linear model, 40 rows, epsilon 0.01: "
        "total box width at step 10 interval 5.25 vs MIBP 0.50."
    ),
    cost=(29, 600),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    """Certified accuracy on two moons, ``bound="mibp"`` beside ``"interval"`` and ``"lp"``.

    Quick: 30 training rows, 6 steps, epsilon 0.03, 3 seeds (the MIBP - interval gap is
    resolved from 3 seeds; the spec's 40 rows and 10 steps take 3-10 times longer on a
    shared 2-core machine). Full: 100 training rows (the paper's TwoMoons size), 10 steps,
    epsilon 0.01, 5 seeds. The linear model is the spec's re-implementation setup (the
    paper's MLP runs take 10-100 times longer).
    """
    if quick:
        n_train, n_epochs, eps, n_seeds = 30, 6, 0.03, 3
    else:
        n_train, n_epochs, eps, n_seeds = 100, 10, 0.01, 5
    seeds = spawn_seeds(random_state, n_seeds)
    runs = [_one_seed(seed, n_train, n_epochs, eps) for seed in seeds]
    acc = {b: [r[b]["acc"] for r in runs] for b in BOUNDS}
    width = {b: [float(r[b]["width"][-1]) for r in runs] for b in BOUNDS}
    statuses = [s for r in runs for s in r["mibp"]["status"]]
    n_opt = sum(s in ("optimal", "gaplimit") for s in statuses)

    figures = []
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        for b, color in zip(BOUNDS, ("tab:gray", "tab:orange", "tab:blue")):
            ax.plot(runs[0][b]["width"], marker="o", color=color, label=b)
        ax.set(
            xlabel="training step",
            ylabel="total box width",
            title=f"epsilon={eps}, n_train={n_train} (first seed)",
        )
        ax.legend()
        figures.extend(save_figure(fig, out_dir, "mibp_box_width.png"))

    diff = paired_difference(acc["mibp"], acc["interval"])
    ratio = np.mean(width["interval"]) / np.mean(width["mibp"])
    parts = (
        f"MIBP - interval certified accuracy = {diff['mean']:+.3f} ± {diff['sd']:.3f} over "
        f"{n_seeds} seeds; final box width interval/MIBP = {ratio:.1f}x"
    )
    if diff["resolved"] and diff["mean"] > 0:
        verdict, reproduced = f"Reproduces: {parts}.", True
    elif not diff["resolved"] and diff["mean"] >= 0 and ratio > 1:
        verdict = (
            f"Partly: the MIBP box is tighter, but the accuracy gain is not resolved at this "
            f"size ({parts})."
        )
        reproduced = None
    else:
        verdict, reproduced = f"Does not reproduce at this size: {parts}.", False
    mibp, interval = mean_sd(acc["mibp"]), mean_sd(acc["interval"])
    return ExperimentResult(
        metric="certified accuracy",
        value=mibp[0],
        value_sd=mibp[1],
        peer="interval bounds (FullCert)",
        peer_value=interval[0],
        peer_sd=interval[1],
        n_runs=n_seeds,
        settings=(
            f"make_moons(n_train={n_train} + 200 test, noise=0.1) per seed, linear hinge "
            f"model, full-batch GD lr 0.5, {n_epochs} steps, epsilon={eps} on every row, "
            f"SCIP time limit 10 s per solve; {n_seeds} seeds"
        ),
        details=(
            f"lp {np.mean(acc['lp']):.3f}; "
            f"clean {np.mean([r['mibp']['clean'] for r in runs]):.3f}; "
            f"final box width mibp/lp/interval {np.mean(width['mibp']):.3g}/"
            f"{np.mean(width['lp']):.3g}/{np.mean(width['interval']):.3g}; "
            f"{n_opt}/{len(statuses)} SCIP solves optimal"
        ),
        target=(
            "MIBP certified accuracy above interval bounds' beyond 2 standard errors over the "
            "seeds (a tighter final box with a gain not resolved: within noise)"
        ),
        verdict=verdict,
        reproduced=reproduced,
        figures=tuple(figures),
    )
