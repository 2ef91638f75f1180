"""
============================================================================
Latent Bayesian optimisation over candidate suffixes: duplicates and P(best)
============================================================================

:class:`~sklearn_cispa.redteam.LatentBOSuffixSearch` is the search machinery of GASP:
the candidates are embedded, mapped to a 2-D latent space, and a Gaussian process over
that map picks which candidate to send to the (user's) objective next. Lower scores are
better. This example uses only the benign synthetic landscape of
:func:`~sklearn_cispa.redteam.make_toy_landscape`: 20 candidates with 32-d embeddings
and a score that is a smooth function of the embedding.

The top panels show the latent map coloured by score, with the query order numbered.
The reference strategy ("skopt": scikit-optimize's ``gp_minimize`` over the bounding box,
decoded to the nearest candidate) proposes some candidates twice; a repeat costs a call
but brings no new score (red rings). The library's default "discrete" strategy picks
only unqueried candidates, so all 6 calls reach new candidates.

The bottom panel is the spec's protocol at a small size: the probability that the best
candidate is among the 6 queried, and that one of the best three is, per strategy,
against the random subset (dashed line: 6/20 = 0.30 for the best).
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_cispa.redteam import LatentBOSuffixSearch, make_toy_landscape
from sklearn_cispa.report import hit_rates
from sklearn_cispa.utils import is_available

# %%
# Query order on one latent map
# -----------------------------
candidates, E, objective = make_toy_landscape(random_state=3)
scores = np.array([objective.scores[c] for c in candidates])
strategies = ["skopt", "discrete"] if is_available("skopt") else ["discrete"]
fig, axes = plt.subplots(1, len(strategies), figsize=(5 * len(strategies), 4.2),
                         squeeze=False)
for ax, strategy in zip(axes[0], strategies):
    search = LatentBOSuffixSearch(objective, embedder="precomputed", reducer="tsne",
                                  strategy=strategy, random_state=0)
    search.fit(candidates, embeddings=E)
    Z = search.latent_
    sc = ax.scatter(Z[:, 0], Z[:, 1], c=scores, cmap="viridis_r", s=60, vmin=0, vmax=2)
    best = int(np.argmin(scores))
    ax.scatter(*Z[best], marker="*", s=250, facecolor="none", edgecolor="k")
    for h in search.history_:
        x = Z[h["candidate"]]
        ax.annotate(str(h["step"] + 1), x, xytext=(4, 4 + 8 * h["duplicate"]),
                    textcoords="offset points", color="red" if h["duplicate"] else "k")
        if h["duplicate"]:
            ax.scatter(*x, s=180, facecolor="none", edgecolor="red")
    ax.set_title(f"{strategy}: {search.n_queries_} unique of {search.n_proposals_} "
                 f"proposals")
    ax.set_xticks([])
    ax.set_yticks([])
fig.colorbar(sc, ax=axes[0].tolist(), label="score (lower is better)")

# %%
# P(best found) per strategy
# --------------------------
seeds = range(60)
configs = {
    "discrete raw 32-d": ("discrete", {"reducer": None}),
    "discrete PCA 2-d": ("discrete", {"reducer": "pca"}),
    "random subset": ("random-subset", {}),
}
rates = {name: hit_rates("smooth", seeds, strategy, **params)
         for name, (strategy, params) in configs.items()}
fig, ax = plt.subplots(figsize=(7, 3.5))
x = np.arange(len(rates))
ax.bar(x - 0.2, [r["best"] for r in rates.values()], 0.4, label="P(best found)")
ax.bar(x + 0.2, [r["top3"] for r in rates.values()], 0.4, label="P(top-3 hit)")
ax.axhline(0.30, ls="--", color="k", lw=1, label="random: 6/20")
ax.set_xticks(x, list(rates))
ax.set_ylim(0, 1)
ax.set_title(f"smooth landscape, 6 unique calls, {len(seeds)} seeds")
ax.legend(fontsize=8)
plt.show()
