"""
=====================================================================
Locating the neurons that make a language model reproduce a secret
=====================================================================

:func:`~sklearn_cispa.memorization.make_canary_corpus` writes pseudo-text with five
planted "canaries", sentences such as ``"zara pin: 427898."`` repeated 20 times.
A :class:`~sklearn_cispa.memorization.CharMLPLanguageModel` trained on it reproduces
every secret from its prefix by greedy decoding.

:class:`~sklearn_cispa.memorization.CriticalNeuronLocator` records the mean and spread
of each hidden unit on held-out text. For each canary it scores the units by how far
above that range they fire while the model writes the secret. It then lowers a
threshold on the score until switching the units above it off stops the extraction,
and prunes that set greedily.

The three panels show:

- left: the number of units kept per canary, the exact smallest number of units whose
  zeroing stops the extraction (computed from the weights of this one-hidden-layer
  model by ``sklearn_cispa.report.minimal_zero_set``), and the held-out perplexity
  change when the kept units are switched off;
- middle: the z-scores of one canary, with the selected units highlighted;
- right: the extraction rate of all canaries when the located units are scaled by a
  factor between 0 and 1, and the same for a matched random set of units.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

from sklearn_cispa.memorization import (
    CharMLPLanguageModel,
    CriticalNeuronLocator,
    extraction_rate,
    make_canary_corpus,
)
from sklearn_cispa.report import minimal_zero_set

torch.set_num_threads(1)

# %%
# Train the character model on the corpus with planted canaries
# -------------------------------------------------------------
train, heldout, canaries = make_canary_corpus(
    n_chars=10000, n_copies=20, heldout_chars=4000, random_state=0
)
lm = CharMLPLanguageModel(hidden=128, max_epochs=5, random_state=0).fit(train)
print("canaries extracted before:", extraction_rate(lm, canaries))
print("held-out perplexity:", round(lm.perplexity(heldout), 3))

# %%
# Reference statistics on held-out text, then localisation per canary
# -------------------------------------------------------------------
ids = np.concatenate([lm.encode(doc + " ") for doc in heldout])
X_ref = ids[: len(ids) // 64 * 64].reshape(-1, 64)
loc = CriticalNeuronLocator(lm.module_, random_state=0).fit(X_ref)
results = loc.localize([lm.encode(p) for p, _ in canaries], [lm.encode(s) for _, s in canaries])

base = lm.perplexity(heldout)
names, units, minimum, ppl = [], [], [], []
for (prefix, secret), res in zip(canaries, results, strict=True):
    with loc.deactivate(res["neurons"]):
        change = 100 * (lm.perplexity(heldout) / base - 1)
        after = lm.complete(prefix, len(secret))
    names.append(prefix.split(" ")[0])
    units.append(len(res["neurons"]))
    minimum.append(minimal_zero_set(lm, prefix, secret)[0])
    ppl.append(change)
    print(f"{prefix}{secret}: {len(res['neurons'])} units (smallest possible "
          f"{minimum[-1]}), writes {after!r} when off, perplexity {change:+.1f}%")

# %%
# Extraction against the scale of the located units, and a matched random control
# -------------------------------------------------------------------------------
scales = [0.0, 0.25, 0.5, 0.75, 1.0]
control = loc.random_control(loc.neurons_)
curves = {"located units": [], "random units (same count per layer)": []}
for s in scales:
    for key, neurons in zip(curves, (loc.neurons_, control), strict=True):
        with loc.deactivate(neurons, scale=s):
            curves[key].append(extraction_rate(lm, canaries))
# removing the mask restores the model exactly
assert extraction_rate(lm, canaries) == 1.0

# %%
# Plot
# ----
fig, axes = plt.subplots(1, 3, figsize=(14, 4))
x = np.arange(len(names))
axes[0].bar(x - 0.3, units, 0.3, label="units kept")
axes[0].bar(x, minimum, 0.3, color="tab:green", label="smallest possible")
twin = axes[0].twinx()
twin.bar(x + 0.3, ppl, 0.3, color="tab:orange", label="perplexity change (%)")
axes[0].set_xticks(x, names)
axes[0].set_ylabel("units")
axes[0].set_ylim(0, 1.4 * max(units))
twin.set_ylim(0, 1.4 * max(max(ppl), 1e-3))
twin.set_ylabel("held-out perplexity change (%)", color="tab:orange")
handles = [*axes[0].get_legend_handles_labels()[0], *twin.get_legend_handles_labels()[0]]
twin.legend(handles, [h.get_label() for h in handles], fontsize=7, loc="upper left", ncol=2)
axes[0].set_title("per canary")

z = results[0]["z"]["act"]
chosen = [u for _, u in results[0]["neurons"]]
axes[1].scatter(np.arange(len(z)), np.clip(z, -5, 50), s=8, color="grey", label="units")
axes[1].scatter(chosen, np.clip(z[chosen], -5, 50), s=30, color="red", label="selected")
axes[1].axhline(results[0]["theta"], ls="--", color="k", lw=1, label="theta at break")
axes[1].set_xlabel("hidden unit")
axes[1].set_ylabel("z-score (clipped at 50)")
axes[1].set_title(f"canary '{names[0]}'")
axes[1].legend(fontsize=8)

for (key, values), style in zip(curves.items(), ("-o", "--s"), strict=True):
    axes[2].plot(scales, values, style, label=key)
axes[2].set_xlabel("scale of the masked units")
axes[2].set_ylabel("extraction rate (all canaries)")
axes[2].set_ylim(-0.05, 1.05)
axes[2].legend(fontsize=8)
fig.tight_layout()
plt.show()
