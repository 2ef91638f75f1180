"""Report row of RCP1Conformal: attacked coverage and set size beside vanilla CP and BinCP."""

import warnings

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._stats import mean_sd, paired_difference
from sklearn_cispa.utils import parallel_map, spawn_seeds

ALPHA, SIGMA, RADIUS = 0.1, 0.25, 0.12


def _vanilla_sets(model, X_cal, y_cal, X_test, alpha):
    """Split CP with the tps score on clean inputs (the unprotected baseline)."""
    classes = model.classes_
    idx = np.searchsorted(classes, y_cal)
    scores = model.predict_proba(X_cal)[np.arange(len(y_cal)), idx]
    k = int(np.floor(alpha * (len(y_cal) + 1)))
    q = np.partition(scores, k - 1)[k - 1]
    return model.predict_proba(X_test) >= q


def _one_split(model, X, y, tr, rest, split_key, seed):
    """Attacked coverage and set size of vanilla CP, RCP1 and BinCP on one split."""
    from sklearn_cispa.conformal import RCP1Conformal, SmoothedConformal, eot_pgd_l2_attack

    p = np.random.default_rng(split_key).permutation(rest)
    cal, te = p[:400], p[400:]
    X_adv = eot_pgd_l2_attack(model, X[te], y[te], radius=RADIUS, sigma=SIGMA, random_state=seed)
    X_adv0 = eot_pgd_l2_attack(model, X[te], y[te], radius=RADIUS, sigma=0.0)
    sets = {"vanilla": _vanilla_sets(model, X[cal], y[cal], X_adv0, ALPHA)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        rcp = RCP1Conformal(model, radius=RADIUS, prefit=True, random_state=seed + 1)
        sets["rcp1"] = rcp.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_set(X_adv)
        bin_ = SmoothedConformal(
            model, n_draws=100, radius=RADIUS, prefit=True, random_state=seed + 2
        )
        sets["bincp"] = bin_.fit(X[tr], y[tr]).calibrate(X[cal], y[cal]).predict_set(X_adv)
    rows = np.arange(len(te))
    return {
        name: {"cov": float(s[rows, y[te]].mean()), "size": float(s.sum(axis=1).mean())}
        for name, s in sets.items()
    }


@register_experiment(
    "rcp1",
    title="RCP1Conformal",
    description="digits, EOT-PGD-l2 attack at r=0.12: attacked coverage vs vanilla CP and BinCP",
    claim=(
        "One noisy forward pass gives sets that keep coverage under attack, smaller than those "
        "of smoothing methods using about 100 passes (paper). Spec, digits re-implementation "
        "at r=0.12, 20 splits: RCP1 attacked coverage 0.94 (worst split 0.903), size 1.50; "
        "vanilla CP 0.84; checks: RCP1 >= 0.89, vanilla < 0.87."
    ),
    cost=(12, 60),  # seconds alone on 2 cores: quick measured, full estimated
)
def run(*, quick, out_dir, random_state):
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    from sklearn_cispa.conformal import RCP1Conformal

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(len(y))
    tr, rest = perm[:718], perm[718:]
    n_splits = 5 if quick else 20
    n_copies = 10 if quick else 20
    base = RCP1Conformal(
        LogisticRegression(max_iter=1000),
        sigma=SIGMA,
        noise_augmentation=n_copies,
        random_state=random_state,
    ).fit(X[tr], y[tr])
    model = base.estimator_
    seeds = spawn_seeds(random_state, n_splits)
    tasks = [(model, X, y, tr, rest, [random_state, i], seed) for i, seed in enumerate(seeds)]
    rows = parallel_map(_one_split, tasks)
    res = {m: {k: [r[m][k] for r in rows] for k in ("cov", "size")} for m in rows[0]}
    mean = {m: {k: float(np.mean(v)) for k, v in d.items()} for m, d in res.items()}
    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(4.5, 3))
        names = ["vanilla", "rcp1", "bincp"]
        ax.bar(names, [mean[m]["cov"] for m in names], color=["tab:gray", "tab:blue", "tab:orange"])
        ax.axhline(1 - ALPHA, color="k", ls="--", lw=1)
        ax.set_ylim(0.5, 1.0)
        ax.set_ylabel(f"attacked coverage (r={RADIUS})")
        for i, m in enumerate(names):
            ax.text(i, 0.52, f"size {mean[m]['size']:.2f}", ha="center", fontsize=8)
        figures = save_figure(fig, out_dir, "rcp1_attacked_coverage.png")
    cov_rcp1, cov_van = mean_sd(res["rcp1"]["cov"]), mean_sd(res["vanilla"]["cov"])
    size_vs_bin = paired_difference(res["rcp1"]["size"], res["bincp"]["size"])
    covered = cov_rcp1[0] >= 0.89 and min(res["rcp1"]["cov"]) >= 1 - ALPHA - 0.02
    bites = paired_difference(res["vanilla"]["cov"], res["rcp1"]["cov"])
    attack_ok = cov_van[0] < 0.87 and bites["resolved"] and bites["mean"] < 0
    size_word = (
        f"RCP1 - BinCP(N=100) set size = {size_vs_bin['mean']:+.2f} ± {size_vs_bin['sd']:.2f} "
        f"({'resolved' if size_vs_bin['resolved'] else 'not resolved'})"
    )
    if covered and attack_ok:
        verdict = (
            f"Reproduces: the attack drops vanilla CP to {cov_van[0]:.3f}, RCP1 keeps "
            f"{cov_rcp1[0]:.3f} (worst split {min(res['rcp1']['cov']):.3f}) with one pass. "
            f"On set size, the paper's 'smaller than smoothing': {size_word}."
        )
        reproduced = True
    else:
        verdict = (
            f"Does not reproduce at this size: RCP1 attacked coverage {cov_rcp1[0]:.3f} "
            f"(worst {min(res['rcp1']['cov']):.3f}), vanilla {cov_van[0]:.3f}; {size_word}."
        )
        reproduced = False
    return ExperimentResult(
        metric="attacked coverage",
        value=cov_rcp1[0],
        value_sd=cov_rcp1[1],
        peer="vanilla split CP",
        peer_value=cov_van[0],
        peer_sd=cov_van[1],
        n_runs=n_splits,
        settings=(
            f"load_digits / 16, LogisticRegression on {n_copies} noisy copies (sigma={SIGMA}); "
            f"718 train, 400 calibration, the rest attacked by EOT-PGD-l2 (30 steps x 8 draws, "
            f"r={RADIUS}); alpha={ALPHA}; {n_splits} random calibration/test splits"
        ),
        details=(
            f"set size RCP1 {mean['rcp1']['size']:.2f} (1 pass) vs vanilla "
            f"{mean['vanilla']['size']:.2f}; BinCP(N=100 passes) coverage "
            f"{mean['bincp']['cov']:.3f}, size {mean['bincp']['size']:.2f}"
        ),
        target=(
            "RCP1 attacked coverage >= 0.89 on average and >= 0.88 on every split; vanilla CP "
            "< 0.87 under the same attack and below RCP1 beyond 2 standard errors"
        ),
        verdict=verdict,
        reproduced=reproduced,
        figures=figures,
    )
