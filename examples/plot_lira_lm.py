"""
=====================================================================
Membership inference against language models trained on text
=====================================================================

LiRA's paper at scale (Hayes et al., NeurIPS 2025) audits GPT-2 models trained on web
text. Here the same attack runs at laptop size: the candidate pool is 128 paragraphs of
English prose from the Python language reference (:func:`~sklearn_cispa.datasets.load_python_docs`,
shipped with Python, so nothing is downloaded), and every reference and target is a
1-block character GPT-2 (:class:`~sklearn_cispa.language.TransformerLanguageModel`,
built from its config with random initialisation) trained on a random half of it.

:class:`~sklearn_cispa.privacy.LiRAMembershipInference` takes the list of documents as
it is: the language model has no ``predict_proba``, so ``statistic="auto"`` uses its
``score_samples``, the mean token log-likelihood of each document (minus the
per-sequence loss, the paper's statistic), and no labels are needed. One character
vocabulary is shared by all models.

The left panel compares LiRA (online and offline) with the loss attack, which
thresholds the target's log-likelihood alone, on log-log ROC axes: long or formulaic
paragraphs are likely under every model, so a global threshold confuses "easy" with
"member", while LiRA compares each paragraph with its own IN and OUT references. The
right panel shows the scores of members and non-members.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

from sklearn_cispa.datasets import load_python_docs
from sklearn_cispa.language import CharTokenizer, TransformerLanguageModel
from sklearn_cispa.metrics import tpr_at_fpr
from sklearn_cispa.privacy import LiRAMembershipInference

# %%
# A pool of paragraphs and a small character GPT-2
# ------------------------------------------------
docs = load_python_docs()
rng = np.random.default_rng(0)
pool = [docs[i] for i in rng.choice(len(docs), size=128, replace=False)]
tokenizer = CharTokenizer.from_documents(docs)  # one vocabulary for every model
lm = TransformerLanguageModel(
    "gpt2", config=dict(n_layer=1, n_embd=32, n_head=4, n_inner=128),
    tokenizer=tokenizer, block_size=64, batch_size=16, max_steps=200, lr=3e-3,
    warmup_steps=20,
)
lira = LiRAMembershipInference(lm, n_reference=8, n_targets=2, n_jobs=2, random_state=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    lira.fit(pool)
print(f"statistic in use: {lira.statistic_!r}")

# %%
# LiRA against the loss attack
# ----------------------------
result = lira.evaluate(fprs=(0.01,))
print(f"LiRA AUC {result['auc']:.3f}, TPR at 1% FPR {result['tpr_at_fpr'][0.01]:.3f}")
print(f"loss attack AUC {result['baseline_auc']:.3f}, "
      f"TPR at 1% FPR {result['baseline_tpr_at_fpr'][0.01]:.3f}")

membership = result["membership"].ravel()
offline = np.concatenate([
    lira.set_params(online=False).score_samples(pool, target=t) for t in lira.targets_])
lira.set_params(online=True)
curves = {
    "LiRA online": result["scores"].ravel(),
    "LiRA offline": offline,
    "loss threshold": lira.target_stats_.mean(axis=2).ravel(),
}
fig, axes = plt.subplots(1, 2, figsize=(10, 4))
for name, scores in curves.items():
    fpr, tpr, _ = roc_curve(membership, scores)
    auc = roc_auc_score(membership, scores)
    axes[0].plot(fpr, tpr, label=f"{name} (AUC {auc:.2f}, "
                 f"TPR@1% {tpr_at_fpr(membership, scores, fpr=0.01):.2f})")
axes[0].plot([1e-3, 1], [1e-3, 1], ls=":", color="gray")
axes[0].set(xscale="log", yscale="log", xlim=(1e-2, 1), ylim=(1e-2, 1),
            xlabel="false-positive rate", ylabel="true-positive rate")
axes[0].legend(fontsize=8)
scores = result["scores"].ravel()
bins = np.linspace(scores.min(), scores.max(), 30)
axes[1].hist(scores[~membership], bins=bins, alpha=0.6, label="non-members")
axes[1].hist(scores[membership], bins=bins, alpha=0.6, label="members")
axes[1].set(xlabel="LiRA score (log-likelihood ratio)", ylabel="paragraphs")
axes[1].legend()
fig.suptitle("character GPT-2 on Python-docs paragraphs: 8 references, 2 targets")
fig.tight_layout()
plt.show()
