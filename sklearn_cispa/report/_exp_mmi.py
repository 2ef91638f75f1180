"""Report row of MMIUncertainty: selective prediction on digits (issue 7)."""

import numpy as np

from sklearn_cispa.report import ExperimentResult, get_pyplot, register_experiment, save_figure
from sklearn_cispa.uncertainty._iipm import (
    _entropy_bits,
    accuracy_rejection_curve,
    entropy_difference,
    generalized_hartley,
    maximum_mean_imprecision,
)
from sklearn_cispa.uncertainty._mmi import MMIUncertainty

MEASURES = ("MMI", "MMI-Lin", "GH", "E-Diff", "MI", "1 - max p", "random")


def uncertainty_scores(probas):
    """Every compared uncertainty measure on one (n, m, K) credal tensor.

    The ensemble mutual information and ``1 - max p`` are the usual alternatives (in
    bits and probability); "random" is a constant score, whose accuracy-rejection curve
    is the expected curve of a random rejector.
    """
    centroid = probas.mean(axis=1)
    scores = {
        "MMI": maximum_mean_imprecision(probas, method="exact"),
        "MMI-Lin": maximum_mean_imprecision(probas, method="linear"),
        "E-Diff": entropy_difference(probas),
        "MI": _entropy_bits(centroid) - _entropy_bits(probas).mean(axis=1),
        "1 - max p": 1.0 - centroid.max(axis=1),
        "random": np.zeros(probas.shape[0]),
    }
    if probas.shape[-1] <= 15:
        scores["GH"] = generalized_hartley(probas)
    return {k: scores[k] for k in MEASURES if k in scores}


def digits_selective_prediction(seed, n_members=10):
    """Fit the default credal ensemble on half of digits; AR curves of every measure."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.5, stratify=y, random_state=seed
    )
    model = MMIUncertainty(n_members=n_members, random_state=seed).fit(X_train, y_train)
    probas = model.predict_credal_set(X_test)
    y_pred = model.classes_[probas.mean(axis=1).argmax(axis=1)]
    scores = uncertainty_scores(probas)
    return {k: accuracy_rejection_curve(y_test, y_pred, v) for k, v in scores.items()}


@register_experiment(
    "mmi",
    title="MMIUncertainty",
    description="accuracy-rejection AUC on digits, MMI beside GH, E-Diff, MI, 1 - max p",
)
def run(*, quick, out_dir, random_state):
    n_seeds = 1 if quick else 10
    aucs = {k: [] for k in MEASURES}
    first = None
    for i in range(n_seeds):
        curves = digits_selective_prediction(random_state + i)
        first = first or curves
        for k, (_, _, auc) in curves.items():
            aucs[k].append(auc)
    mean = {k: float(np.mean(v)) for k, v in aucs.items()}
    figures = ()
    plt = get_pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(6, 4))
        for k, (rates, acc, auc) in first.items():
            ax.plot(rates, acc, label=f"{k} (AUC {auc:.4f})", ls=":" if k == "random" else "-")
        ax.set_xlabel("rejection rate")
        ax.set_ylabel("accuracy on retained points")
        ax.set_title("digits, 10 random forests")
        ax.legend(fontsize=8)
        figures = save_figure(fig, out_dir, "mmi_accuracy_rejection.png")
    others = ", ".join(f"{k} {mean[k]:.4f}" for k in MEASURES if k not in ("MMI", "MI"))
    return ExperimentResult(
        metric="AR-AUC digits",
        value=mean["MMI"],
        peer="ensemble MI",
        peer_value=mean["MI"],
        details=f"{n_seeds} seed(s), MMI sd {np.std(aucs['MMI']):.4f}; {others}",
        figures=figures,
    )
