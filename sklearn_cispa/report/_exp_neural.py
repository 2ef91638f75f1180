"""Report rows of the neural field: MaxSup vs label smoothing, NanoAdam vs AdamW on
split digits, Sign-In vs plain sparse training (one row each, 3 seeds in quick)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.report._stats import fmt_pm, mean_sd, paired_difference, seed_bars
from sklearn_cispa.utils import spawn_seeds


def _seeds(random_state, n):
    # the experiments add small offsets to their seed, so keep them small
    return [s % 1000 for s in spawn_seeds(random_state, n)]


def _bars(out_dir, name, labels, per_seed, ylabel, title):
    """Bar per method with the per-seed values as dots (the spread is visible)."""
    plt = get_pyplot()
    if plt is None:
        return ()
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    colors = ["#999999", "#4c72b0", "#dd8452", "#55a868"]
    seed_bars(ax, list(zip(labels, per_seed)), colors)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return save_figure(fig, out_dir, f"{name}.png")


def _word(diff, unit=""):
    mean = round(diff["mean"], 4) + 0.0  # no "-0.0000"
    return f"{mean:+.4f} ± {diff['sd']:.4f}{unit} over {diff['n']} seeds"


@register_experiment(
    "maxsup",
    title="MaxSupLoss",
    description="digits MLP (SGD): CE vs label smoothing vs MaxSup, alpha 0.1 -> 0.2",
    claim=(
        "MaxSup beats label smoothing, which beats CE, in top-1 accuracy (paper: ImageNet "
        "ResNet-50 76.41 / 76.91 / 77.69, CIFAR-100 ResNet-18 76.16 / 77.05 / 77.82). Spec, "
        "digits MLP on CPU: CE 97.78, LS 99.14, MaxSup 99.20 (MaxSup ~ LS expected there); "
        "confidence on test errors .76 / .36 / .37."
    ),
    cost=(3, 60),  # seconds alone on 2 cores: quick measured, full estimated
)
def run_maxsup(*, quick, out_dir, random_state):
    from sklearn_cispa.report._neural_experiments import loss_comparison

    n_seeds = 3
    hidden, epochs = ((128,), 15) if quick else ((256, 256), 40)
    runs = [
        loss_comparison(seed, hidden=hidden, max_epochs=epochs)
        for seed in _seeds(random_state, n_seeds)
    ]
    acc = {k: [r[k]["accuracy"] for r in runs] for k in runs[0]}
    conf = {k: [r[k]["conf_err"] for r in runs] for k in runs[0]}
    ms_ls = paired_difference(acc["maxsup"], acc["label_smoothing"])
    ls_ce = paired_difference(acc["label_smoothing"], acc["cross_entropy"])
    conf_ratio = np.mean(conf["maxsup"]) / np.mean(conf["cross_entropy"])
    figs = _bars(
        out_dir,
        "maxsup_confidence_on_errors",
        ["CE", "LS", "MaxSup"],
        [conf["cross_entropy"], conf["label_smoothing"], conf["maxsup"]],
        "mean confidence on test errors",
        f"digits MLP {hidden}, {epochs} epochs",
    )
    if ms_ls["resolved"] and ms_ls["mean"] > 0:
        verdict, reproduced = "Reproduces: MaxSup above LS by " + _word(ms_ls) + ".", True
    else:
        verdict = (
            f"Not resolvable at this size: the accuracy gain over label smoothing is MaxSup - "
            f"LS = {_word(ms_ls)} (the spec expects MaxSup ~ LS on digits, where training "
            f"error is near 0). LS - CE = {_word(ls_ce)}. What does reproduce: both cut the "
            f"confidence on test errors (MaxSup/CE = {conf_ratio:.2f})."
        )
        reproduced = False if (ms_ls["resolved"] and ms_ls["mean"] < 0) else None
    ce, ls, ms = (mean_sd(acc[k]) for k in ("cross_entropy", "label_smoothing", "maxsup"))
    return ExperimentResult(
        metric="test accuracy",
        value=ms[0],
        value_sd=ms[1],
        peer="label smoothing (same alpha ramp)",
        peer_value=ls[0],
        peer_sd=ls[1],
        n_runs=n_seeds,
        settings=(
            f"load_digits 70/30, MLPNetClassifier hidden={hidden}, SGD lr 0.05, batch 64, "
            f"{epochs} epochs, alpha 0.1 -> 0.2; {n_seeds} seeds"
        ),
        details=(
            f"CE acc {fmt_pm(*ce, 4)}; confidence on errors CE/LS/MaxSup "
            f"{np.mean(conf['cross_entropy']):.2f}/{np.mean(conf['label_smoothing']):.2f}/"
            f"{np.mean(conf['maxsup']):.2f}"
        ),
        target=(
            "MaxSup ~ LS within the seed-to-seed spread on digits (the spec's tie: training error "
            "is near 0 there); a resolved MaxSup - LS > 0 would reproduce the paper's gain"
        ),
        verdict=verdict,
        reproduced=reproduced,
        figures=figs,
    )


@register_experiment(
    "nanoadam",
    title="NanoAdam",
    description="split-digits continual learning: task-1 forgetting, NanoAdam vs AdamW",
    claim=(
        "NanoAdam forgets much less than AdamW when fine-tuning (paper: CIFAR-10 -> Flowers102, "
        "ViT-L forgetting 0.02 vs 0.69). Spec, split digits on CPU: NanoAdam (lr 3e-3, k 0.01) "
        "loses < 0.5 point on task 1 and less than AdamW 1e-3 (0.996 vs 0.978 after), with "
        "task 2 within 2 points of AdamW's."
    ),
    cost=(4, 40),  # seconds alone on 2 cores: quick measured, full estimated
)
def run_nanoadam(*, quick, out_dir, random_state):
    from sklearn_cispa.report._neural_experiments import split_digits

    n_seeds = 3 if quick else 5
    epochs = 30
    runs = [
        split_digits(
            {"AdamW": ("adamw", 1e-3), "NanoAdam": ("nanoadam", 3e-3, 0.01, 20)},
            random_state=seed,
            pre_epochs=epochs,
            ft_epochs=epochs,
        )
        for seed in _seeds(random_state, n_seeds)
    ]
    forget = {k: [r[k]["forgetting"] for r in runs] for k in ("AdamW", "NanoAdam")}
    task2 = {k: [r[k]["task2"] for r in runs] for k in ("AdamW", "NanoAdam")}
    d_forget = paired_difference(forget["NanoAdam"], forget["AdamW"])
    d_task2 = paired_difference(task2["NanoAdam"], task2["AdamW"])
    figs = _bars(
        out_dir,
        "nanoadam_forgetting",
        ["AdamW 1e-3", "NanoAdam k=0.01"],
        [forget["AdamW"], forget["NanoAdam"]],
        "task-1 accuracy lost",
        "split digits 0-4 -> 5-9",
    )
    less = d_forget["resolved"] and d_forget["mean"] < 0
    small = max(forget["NanoAdam"]) < 0.005
    task2_ok = d_task2["mean"] > -0.02
    parts = (
        f"NanoAdam - AdamW forgetting = {_word(d_forget)} "
        f"({'resolved' if d_forget['resolved'] else 'not resolved'}); NanoAdam loses at most "
        f"{max(forget['NanoAdam']):.4f}; task-2 accuracy NanoAdam - AdamW = {_word(d_task2)}"
    )
    if less and small and task2_ok:
        verdict, reproduced = "Reproduces: " + parts + ".", True
    elif less and small:
        verdict = (
            "Not reproduced at this size: forgetting reproduces, but task 2 is more than 2 "
            f"points below AdamW (the target). {parts}."
        )
        reproduced = False
    else:
        verdict, reproduced = "Does not reproduce at this size: " + parts + ".", False
    state = [(r["NanoAdam"]["state_bytes"], r["AdamW"]["state_bytes"]) for r in runs]
    return ExperimentResult(
        metric="task-1 forgetting (lower is better)",
        value=mean_sd(forget["NanoAdam"])[0],
        value_sd=mean_sd(forget["NanoAdam"])[1],
        peer="torch AdamW (lr 1e-3)",
        peer_value=mean_sd(forget["AdamW"])[0],
        peer_sd=mean_sd(forget["AdamW"])[1],
        n_runs=n_seeds,
        settings=(
            f"digits 0-4 pretrain (Adam 1e-3) then 5-9, MLP 64-256-256, {epochs}+{epochs} "
            f"epochs, batch 64; NanoAdam lr 3e-3, density 0.01, mask interval 20; "
            f"{n_seeds} seeds"
        ),
        details=(
            f"task-2 acc {fmt_pm(*mean_sd(task2['NanoAdam']))} vs "
            f"{fmt_pm(*mean_sd(task2['AdamW']))}; optimizer state bytes {state[0][0]} vs "
            f"{state[0][1]}"
        ),
        target=(
            "NanoAdam forgets less than AdamW (beyond 2 standard errors), loses < 0.5 point on "
            "task 1, and is within 2 points of AdamW on task 2"
        ),
        verdict=verdict,
        reproduced=reproduced,
        figures=figs,
    )


@register_experiment(
    "sign_in",
    title="SignIn",
    description="digits MLP at 90% random PaI sparsity: Sign-In vs plain masked training",
    claim=(
        "Sign-In raises the accuracy of sparse training from a random pruning-at-init mask by "
        "+0.25 to +1.6 points (paper, third-party summary: CIFAR-10 ResNet-20 at 90% sparsity "
        "86.25 -> 87.83). Spec, digits MLP on CPU: 96.37 vs 96.37 at 90%, 'not resolvable at "
        "this scale'."
    ),
    cost=(3, 40),  # seconds alone on 2 cores: quick measured, full estimated
)
def run_sign_in(*, quick, out_dir, random_state):
    from sklearn_cispa.report._neural_experiments import sign_in_comparison

    n_seeds = 3 if quick else 5
    epochs = 15 if quick else 60
    runs = [
        sign_in_comparison(seed, sparsity=0.9, epochs=epochs)
        for seed in _seeds(random_state, n_seeds)
    ]
    acc = {k: [r[k]["accuracy"] for r in runs] for k in ("plain", "sign_in")}
    flips = {k: [r[k]["sign_flips"] for r in runs] for k in ("plain", "sign_in")}
    diff = paired_difference(acc["sign_in"], acc["plain"])
    figs = _bars(
        out_dir,
        "sign_in_accuracy",
        ["plain", "Sign-In"],
        [acc["plain"], acc["sign_in"]],
        "test accuracy (90% sparse)",
        f"digits MLP 64-256-256-10, {epochs} epochs",
    )
    if diff["resolved"] and diff["mean"] > 0:
        verdict, reproduced = "Reproduces: Sign-In - plain = " + _word(diff) + ".", True
    else:
        lead = (
            "Does not reproduce at this size (resolved, in the wrong direction)"
            if diff["resolved"]
            else "Not resolvable at this size"
        )
        verdict = (
            f"{lead}: Sign-In - plain = {_word(diff)}; the spec found the gain unresolvable "
            "on digits too (the paper's gains are +0.25 to +1.6 points on CIFAR/ImageNet "
            "networks)."
        )
        reproduced = False if diff["resolved"] else None
    return ExperimentResult(
        metric="test accuracy (90% sparse)",
        value=mean_sd(acc["sign_in"])[0],
        value_sd=mean_sd(acc["sign_in"])[1],
        peer="masked weights (torch prune)",
        peer_value=mean_sd(acc["plain"])[0],
        peer_sd=mean_sd(acc["plain"])[1],
        n_runs=n_seeds,
        settings=(
            f"load_digits 70/30, MLP 64-256-256-10, one random PaI mask at 90% per seed, SGD "
            f"lr 0.05 momentum 0.9 wd 5e-4, {epochs} epochs, beta 1, reset every 10 epochs; "
            f"{n_seeds} seeds"
        ),
        details=(
            f"kept weights with flipped sign {np.mean(flips['sign_in']):.3f} vs "
            f"{np.mean(flips['plain']):.3f}"
        ),
        target=(
            "Sign-In - plain accuracy > 0 beyond 2 standard errors; the spec found the gain "
            "unresolvable on digits (96.37 vs 96.37)"
        ),
        verdict=verdict,
        reproduced=reproduced,
        figures=figs,
    )
