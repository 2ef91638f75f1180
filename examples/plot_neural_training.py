"""
===============================================================
Training tricks through skorch: MaxSup, NanoAdam and Sign-In
===============================================================

Three training methods, each compared with the baseline a practitioner would use, on
the digits data set with the same seeds, initialisations and masks:

1. :class:`~sklearn_cispa.neural.MaxSupLoss` against label smoothing and plain
   cross-entropy, through :class:`~sklearn_cispa.neural.MLPNetClassifier`: both
   regularisers make the network far less confident on the test digits it gets wrong.
2. :class:`~sklearn_cispa.neural.NanoAdam` against ``torch.optim.AdamW`` for continual
   learning (digits 0-4, then 5-9 with a new head): updating only the smallest weights
   forgets less of the first task, with a fraction of AdamW's optimizer memory.
3. Sign-In (:func:`~sklearn_cispa.neural.apply_sign_in`) against plain masked weights at
   90% sparsity from one random pruning-at-initialisation mask: the fraction of kept
   weights whose sign flips during training, and the test accuracy.

The sizes are reduced (fewer epochs than the benchmarks) so that the example runs in
well under a minute on a laptop CPU.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.neural import MLPNetClassifier

# the continual-learning and sparse-training loops are plain torch; they live in a
# small helper module of the library so that the benchmarks run the same code
from sklearn_cispa.report import sign_in_comparison, split_digits

torch.set_num_threads(1)

# %%
# MaxSup vs label smoothing vs cross-entropy
# ------------------------------------------
# The smoothing weight ramps from 0.1 to 0.2 over the epochs for both regularisers;
# one ``random_state`` gives every fit the same initialisation and batch order.
X, y = load_digits(return_X_y=True)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
losses = {}
for loss in ["cross_entropy", "label_smoothing", "maxsup"]:
    clf = make_pipeline(
        StandardScaler(),
        MLPNetClassifier(hidden_layer_sizes=(128,), loss=loss, label_smoothing=0.1,
                         label_smoothing_end=0.2,
                         optimizer="sgd", lr=0.05, max_epochs=15, random_state=0),
    ).fit(X_tr, y_tr)
    proba = clf.predict_proba(X_te)
    wrong = proba.argmax(axis=1) != y_te
    losses[loss] = {"accuracy": 1 - wrong.mean(), "conf_err": proba.max(axis=1)[wrong].mean()}
    print(f"{loss:16s} accuracy {losses[loss]['accuracy']:.3f}  "
          f"confidence on errors {losses[loss]['conf_err']:.2f}")

# %%
# NanoAdam vs AdamW on split digits
# ---------------------------------
# Fine-tune the body and a fresh head on digits 5-9 after pretraining on 0-4; the head
# of task 1 is then evaluated on digits 0-4 again.
configs = {"AdamW 1e-3": ("adamw", 1e-3)}
for k in (0.01, 0.03, 0.1):
    configs[f"NanoAdam k={k}"] = ("nanoadam", 3e-3, k, 20)
split = split_digits(configs, random_state=0, pre_epochs=10, ft_epochs=10)
for name in configs:
    r = split[name]
    print(
        f"{name:16s} forgetting {r['forgetting']:.3f}  task 2 {r['task2']:.3f}  "
        f"state {r['state_bytes'] / 1024:.0f} KiB"
    )

# %%
# Sign-In vs plain sparse training
# --------------------------------
sparse = sign_in_comparison(random_state=0, sparsity=0.9, epochs=15)
for name, r in sparse.items():
    print(f"{name:8s} accuracy {r['accuracy']:.3f}  sign flips {r['sign_flips']:.3f}")

# %%
# Figures
# -------
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
names = ["CE", "label smoothing", "MaxSup"]
axes[0].bar(names, [losses[k]["conf_err"] for k in losses], color=["#999", "#4c72b0", "#dd8452"])
axes[0].set_ylabel("mean confidence on test errors")
axes[0].set_title("MaxSup: confidence on errors")
for i, k in enumerate(losses):
    axes[0].text(i, 0.02, f"acc {losses[k]['accuracy']:.3f}", ha="center", color="white")

labels = list(configs)
forgetting = [split[k]["forgetting"] for k in labels]
state_kib = [split[k]["state_bytes"] / 1024 for k in labels]
x = np.arange(len(labels))
axes[1].bar(x - 0.2, forgetting, 0.4, label="task-1 forgetting", color="#c44e52")
axes[1].set_ylabel("task-1 accuracy lost")
axes[1].set_xticks(x, [lbl.replace(" ", "\n", 1) for lbl in labels], fontsize=8)
ax2 = axes[1].twinx()
ax2.bar(x + 0.2, state_kib, 0.4, label="optimizer state", color="#8172b2")
ax2.set_ylabel("optimizer state (KiB)")
axes[1].set_title("NanoAdam vs AdamW (split digits)")
handles = axes[1].get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
axes[1].legend(handles, [h.get_label() for h in handles], loc="upper center", fontsize=8)

variants = ["plain", "sign_in"]
axes[2].bar(["plain masked", "Sign-In"], [sparse[v]["sign_flips"] for v in variants],
            color=["#999", "#55a868"])
axes[2].set_ylabel("kept weights with flipped sign")
axes[2].set_title("90% sparse MLP from one random mask")
for i, v in enumerate(variants):
    axes[2].text(i, 0.005, f"acc {sparse[v]['accuracy']:.3f}", ha="center", color="white")
fig.tight_layout()
plt.show()
