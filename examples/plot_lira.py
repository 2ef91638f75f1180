"""
=====================================================================
Auditing a model's training set with LiRA membership inference
=====================================================================

:class:`~sklearn_cispa.privacy.LiRAMembershipInference` trains reference models, clones of
the audited classifier, each on a random half of a pool of candidate examples. For each
example, the models that trained on it (IN) and those that did not (OUT) give two
Gaussians of the model's confidence; a target model's confidence on the example is then
scored by its likelihood ratio. Here the pool is 500 digits, the models are
unregularised MLPs that reach 100% training accuracy, and 4 held-out targets are audited.

The left panel shows the ROC curves on log-log axes, where the low false-positive rates
that matter for privacy are visible: online LiRA with a fixed (pooled) or per-example
sigma, offline LiRA (OUT Gaussian only) with the paper's one-sided test and the reference
code's two-sided density, and the loss attack that thresholds the target's confidence
alone. The right panel shows the AUC against the number of reference models M (the
first M of the same fit): per-example sigmas need many references, the fixed sigma works
with a few.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.neural_network import MLPClassifier

from sklearn_cispa.metrics import tpr_at_fpr
from sklearn_cispa.privacy import LiRAMembershipInference, lira_scores

# %%
# Train 32 references and 4 targets on random halves of the pool
# ---------------------------------------------------------------
X, y = load_digits(return_X_y=True)
rows = np.random.default_rng(0).permutation(len(y))[:500]
X, y = X[rows] / 16.0, y[rows]
mlp = MLPClassifier(hidden_layer_sizes=(256,), alpha=0.0, max_iter=400)
lira = LiRAMembershipInference(mlp, n_reference=32, n_targets=4, random_state=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # MLP convergence warnings
    lira.fit(X, y)
result = lira.evaluate(fprs=(0.001, 0.01))
print(f"online LiRA: AUC {result['auc']:.3f}, TPR at 1% FPR {result['tpr_at_fpr'][0.01]:.3f}")
print(f"loss attack: AUC {result['baseline_auc']:.3f}, "
      f"TPR at 1% FPR {result['baseline_tpr_at_fpr'][0.01]:.3f}")

# %%
# Score every variant on the same statistics
# ------------------------------------------
variants = {
    "online, fixed sigma": {},
    "online, per-example sigma": {"fix_variance": False},
    "offline, one-sided": {"online": False},
    "offline, two-sided": {"online": False, "offline_test": "two-sided"},
}
labels = lira.target_keep_.ravel()


def pooled_scores(m, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few examples lack IN references at small M
        return np.concatenate(
            [lira_scores(lira.keep_[:m], lira.ref_stats_[:m], s, **kw)
             for s in lira.target_stats_]
        )


fig, (ax_roc, ax_m) = plt.subplots(1, 2, figsize=(11, 4.5))
for name, kw in variants.items():
    scores = pooled_scores(32, **kw)
    fpr, tpr, _ = roc_curve(labels, scores)
    ax_roc.plot(fpr, tpr, label=f"{name} (AUC {roc_auc_score(labels, scores):.3f}, "
                f"TPR@1% {tpr_at_fpr(labels, scores, fpr=0.01):.3f})")
loss = lira.target_stats_.mean(axis=2).ravel()
fpr, tpr, _ = roc_curve(labels, loss)
ax_roc.plot(fpr, tpr, ls="--", color="k",
            label=f"loss threshold (AUC {roc_auc_score(labels, loss):.3f})")
ax_roc.plot([1e-5, 1], [1e-5, 1], ls=":", color="gray")
ax_roc.set(xscale="log", yscale="log", xlim=(1e-3, 1), ylim=(1e-3, 1),
           xlabel="false-positive rate", ylabel="true-positive rate",
           title="ROC at M = 32 references (4 targets pooled)")
ax_roc.legend(fontsize=7, loc="lower right")

# %%
# AUC against the number of reference models
# -------------------------------------------
ms = [2, 4, 8, 16, 32]
for name in ("online, fixed sigma", "online, per-example sigma", "offline, one-sided"):
    aucs = [roc_auc_score(labels, pooled_scores(m, **variants[name])) for m in ms]
    ax_m.plot(ms, aucs, marker="o", label=name)
ax_m.axhline(roc_auc_score(labels, loss), ls="--", color="k", label="loss threshold")
ax_m.set(xscale="log", xlabel="reference models M", ylabel="AUC", title="More references help")
ax_m.set_xticks(ms, [str(m) for m in ms])
ax_m.minorticks_off()
ax_m.legend(fontsize=8)
fig.tight_layout()
plt.show()
