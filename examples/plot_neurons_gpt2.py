"""
=====================================================================
Critical neurons of a memorised secret in a small GPT-2
=====================================================================

A 2-block character GPT-2 (``transformers``, built from its config with random
initialisation: nothing is downloaded) is trained by
:class:`~sklearn_cispa.language.TransformerLanguageModel` on pseudo-text with planted
"canaries" (:func:`~sklearn_cispa.memorization.make_canary_corpus`), sentences such as
``"zara pin: 427898."`` repeated many times. The fitted estimator goes to
:class:`~sklearn_cispa.memorization.CriticalNeuronLocator` as it is; ``layers="auto"``
hooks the GELU of each MLP block.

For every memorised canary the example compares

- the default method (NeMo's threshold search and refinement) and the greedy margin
  search baseline (``method="greedy"``): units kept and held-out perplexity change;
- gradient ascent on the canary
  (:func:`~sklearn_cispa.language.gradient_ascent_unlearning`), the editing baseline,
  run until the canary is no longer extracted: its perplexity change.

The model here is trained briefly so that the example runs in seconds; the user guide
gives the figures at the report's full size.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

from sklearn_cispa.language import TransformerLanguageModel, gradient_ascent_unlearning
from sklearn_cispa.memorization import CriticalNeuronLocator, make_canary_corpus

torch.set_num_threads(1)

# %%
# Train the character GPT-2 on the corpus with planted canaries
# -------------------------------------------------------------
train, heldout, canaries = make_canary_corpus(
    n_chars=3000, n_canaries=5, n_copies=25, heldout_chars=1500, random_state=0
)
lm = TransformerLanguageModel(
    "gpt2", config=dict(n_layer=2, n_embd=64, n_head=4, n_inner=256), block_size=48,
    max_steps=150, batch_size=16, lr=5e-3, warmup_steps=10, random_state=0,
).fit(train)
memorised = [(p, s) for p, s in canaries if lm.complete(p, len(s)) == s]
print(f"memorised {len(memorised)} of {len(canaries)} canaries")

# %%
# Localise every memorised canary with both methods
# -------------------------------------------------
ids = np.concatenate([lm.encode(doc + " ") for doc in heldout])
X_ref = ids[: len(ids) // 64 * 64].reshape(-1, 64)
prefixes = [lm.encode(p, add_special_tokens=True) for p, _ in memorised]
targets = [lm.encode(s) for _, s in memorised]
base = lm.perplexity(heldout)
figures = {}
for method in ("threshold", "greedy"):
    loc = CriticalNeuronLocator(lm, method=method).fit(X_ref)
    units, ppl = [], []
    for (p, s), res in zip(memorised, loc.localize(prefixes, targets), strict=True):
        with loc.deactivate(res["neurons"]):
            assert lm.complete(p, len(s)) != s  # extraction stopped
            ppl.append(100 * (lm.perplexity(heldout) / base - 1))
        units.append(len(res["neurons"]))
    figures[method] = (units, ppl)
    print(f"{method}: units {units}, perplexity change (%) {np.round(ppl, 2)}")
print("layers hooked:", loc.layers_)

# %%
# The editing baseline: gradient ascent until the canary is forgotten
# -------------------------------------------------------------------
edit_ppl = []
for p, s in memorised:
    edited = gradient_ascent_unlearning(
        lm, p, s, n_steps=30, lr=1e-4,
        callback=lambda step, model, p=p, s=s: model.complete(p, len(s)) != s)
    edit_ppl.append(100 * (edited.perplexity(heldout) / base - 1))
print("gradient ascent, perplexity change (%):", np.round(edit_ppl, 2))

# %%
# Units kept and perplexity cost per canary
# -----------------------------------------
names = [p.split(" ")[0] for p, _ in memorised]
x = np.arange(len(names))
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
axes[0].bar(x - 0.2, figures["threshold"][0], 0.4, label="default (threshold)")
axes[0].bar(x + 0.2, figures["greedy"][0], 0.4, label="greedy margin search")
axes[0].axhline(8, color="grey", ls=":", label="8 units")
axes[0].set_xticks(x, names)
axes[0].set_ylabel("units switched off")
axes[0].legend(fontsize=8)
axes[1].bar(x - 0.27, figures["threshold"][1], 0.27, label="default mask")
axes[1].bar(x, figures["greedy"][1], 0.27, label="greedy mask")
axes[1].bar(x + 0.27, edit_ppl, 0.27, label="gradient ascent")
axes[1].set_xticks(x, names)
axes[1].set_ylabel("held-out perplexity change (%)")
axes[1].legend(fontsize=8)
fig.tight_layout()
plt.show()
