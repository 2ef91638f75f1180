"""Report rows of the neural field: MaxSup vs label smoothing, NanoAdam vs AdamW on
split digits, Sign-In vs plain sparse training (one row each)."""

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.utils import spawn_seeds


def _bar(out_dir, name, labels, values, ylabel, title):
    plt = get_pyplot()
    if plt is None:
        return ()
    fig, ax = plt.subplots(figsize=(4.5, 3))
    ax.bar(labels, values, color=["#999999", "#4c72b0", "#dd8452", "#55a868"][: len(labels)])
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return save_figure(fig, out_dir, f"{name}.png")


@register_experiment(
    "maxsup",
    title="MaxSupLoss",
    description="digits MLP (SGD): CE vs label smoothing vs MaxSup, alpha 0.1 -> 0.2",
)
def run_maxsup(*, quick, out_dir, random_state):
    from sklearn_cispa.report._neural_experiments import loss_comparison

    seed = spawn_seeds(random_state, 1)[0] % 1000
    if quick:
        res = loss_comparison(seed, hidden=(128,), max_epochs=15)
    else:
        res = loss_comparison(seed, hidden=(256, 256), max_epochs=40)
    ce, ls, ms = res["cross_entropy"], res["label_smoothing"], res["maxsup"]
    figs = _bar(
        out_dir,
        "maxsup_confidence_on_errors",
        ["CE", "LS", "MaxSup"],
        [ce["conf_err"], ls["conf_err"], ms["conf_err"]],
        "mean confidence on test errors",
        "digits MLP",
    )
    return ExperimentResult(
        metric="test accuracy",
        value=ms["accuracy"],
        peer="label smoothing (same ramp)",
        peer_value=ls["accuracy"],
        details=(
            f"CE acc {ce['accuracy']:.4f}; conf. on errors CE/LS/MaxSup "
            f"{ce['conf_err']:.2f}/{ls['conf_err']:.2f}/{ms['conf_err']:.2f}; "
            f"NLL {ce['nll']:.3f}/{ls['nll']:.3f}/{ms['nll']:.3f}"
        ),
        figures=figs,
    )


@register_experiment(
    "nanoadam",
    title="NanoAdam",
    description="split-digits continual learning: task-1 forgetting, NanoAdam vs AdamW",
)
def run_nanoadam(*, quick, out_dir, random_state):
    from sklearn_cispa.report._neural_experiments import split_digits

    seed = spawn_seeds(random_state, 1)[0] % 1000
    epochs = 10 if quick else 30
    res = split_digits(
        {"AdamW": ("adamw", 1e-3), "NanoAdam": ("nanoadam", 3e-3, 0.01, 20)},
        random_state=seed,
        pre_epochs=epochs,
        ft_epochs=epochs,
    )
    aw, na = res["AdamW"], res["NanoAdam"]
    figs = _bar(
        out_dir,
        "nanoadam_forgetting",
        ["AdamW 1e-3", "NanoAdam k=0.01"],
        [aw["forgetting"], na["forgetting"]],
        "task-1 accuracy lost",
        "split digits 0-4 -> 5-9",
    )
    return ExperimentResult(
        metric="task-1 forgetting",
        value=na["forgetting"],
        peer="torch AdamW (lr 1e-3)",
        peer_value=aw["forgetting"],
        details=(
            f"task-2 acc {na['task2']:.3f} vs {aw['task2']:.3f}; state bytes "
            f"{na['state_bytes']} vs {aw['state_bytes']}; step time ratio "
            f"{na['step_time'] / aw['step_time']:.2f}; body touched {na['touched']:.2f}"
        ),
        figures=figs,
    )


@register_experiment(
    "sign_in",
    title="SignIn",
    description="digits MLP at 90% random PaI sparsity: Sign-In vs plain masked training",
)
def run_sign_in(*, quick, out_dir, random_state):
    from sklearn_cispa.report._neural_experiments import sign_in_comparison

    seed = spawn_seeds(random_state, 1)[0] % 1000
    res = sign_in_comparison(seed, sparsity=0.9, epochs=15 if quick else 60)
    plain, si = res["plain"], res["sign_in"]
    figs = _bar(
        out_dir,
        "sign_in_flips",
        ["plain", "Sign-In"],
        [plain["sign_flips"], si["sign_flips"]],
        "kept weights with flipped sign",
        "90% sparse digits MLP",
    )
    return ExperimentResult(
        metric="test accuracy (90% sparse)",
        value=si["accuracy"],
        peer="masked weights (torch prune)",
        peer_value=plain["accuracy"],
        details=(
            f"sign flips {si['sign_flips']:.3f} vs {plain['sign_flips']:.3f}; "
            f"merge max |diff| {si['merge_error']:.1e}"
        ),
        figures=figs,
    )
