"""
======================================================================
Graphon limit of pruning-at-initialisation masks and their NTK spectra
======================================================================

Pruning at initialisation (PaI) picks a 0/1 mask per layer before training. Read as a
bipartite graph, a mask has a large-width limit, a *graphon*: the connection probability
between two neurons at relative positions u and v.
:class:`~sklearn_cispa.pruning.GraphonEstimator` estimates it by sorting rows and
columns by degree and averaging over a K x K grid (the SAS estimator).

The left panel shows the estimated graphons of Random, SNIP and Synflow masks of the
second hidden layer of a 64-n-n-n-10 MLP at 80% sparsity: Random is flat at p = 0.2,
SNIP smooth and denser among high-degree neurons, Synflow block-like with removed
neurons. The middle panel plots the distance of each mask's histogram to the widest
one's against the width (log axes): it falls for every method. The right panel gives the
top-5 energy of the empirical neural tangent kernel
(:func:`~sklearn_cispa.pruning.empirical_ntk`) against sparsity, the paper's proxy for
fast early training.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.pruning import (
    GraphonEstimator,
    empirical_ntk,
    make_graphon_mlp,
    ntk_spectrum_stats,
    prune_at_init,
)

X, y = load_digits(return_X_y=True)
rows = np.random.RandomState(0).choice(len(X), 512, replace=False)
X, y = StandardScaler().fit_transform(X[rows]), y[rows]
Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
METHODS = ("random", "snip", "synflow")


def hidden_mask(method, width, sparsity=0.8, seed=0):
    net = make_graphon_mlp(64, (width,) * 3, n_outputs=10, random_state=seed)
    masks = prune_at_init(net, method, sparsity, X=Xt, y=yt, random_state=seed + 1)
    return masks["layers.1.weight"]


# %%
# Graphons at 80% sparsity and convergence with the width
# --------------------------------------------------------
widths = (64, 128, 256, 512)
graphons, distances = {}, {}
for method in METHODS:
    masks = [hidden_mask(method, n) for n in widths]
    ref = GraphonEstimator(n_blocks=16).fit(masks[-1])
    graphons[method] = ref.graphon_
    distances[method] = ref.distance(masks[:-1])
    print(f"{method:8s} block std {ref.block_std_:.3f}  distances {np.round(distances[method], 3)}")

# %%
# Top-5 energy of the empirical NTK against sparsity
# ---------------------------------------------------
sparsities = (0.5, 0.8, 0.9, 0.95)
base = make_graphon_mlp(64, (128,) * 3, n_outputs=10, random_state=0)
energy = {m: [] for m in METHODS}
for s in sparsities:
    for method in METHODS:
        masks = prune_at_init(base, method, s, X=Xt, y=yt, random_state=1)
        net = make_graphon_mlp(64, (128,) * 3, n_outputs=10, masks=masks, random_state=0)
        kernel = empirical_ntk(net, X[:64], output=0)
        energy[method].append(ntk_spectrum_stats(kernel)["top_energy"])
dense = ntk_spectrum_stats(empirical_ntk(base, X[:64], output=0))["top_energy"]

fig = plt.figure(figsize=(12, 3.4))
grid = fig.add_gridspec(1, 5, width_ratios=[1, 1, 1, 1.4, 1.4])
for i, method in enumerate(METHODS):
    ax = fig.add_subplot(grid[0, i])
    ax.imshow(graphons[method], vmin=0, vmax=0.6, cmap="viridis")
    ax.set_title(f"{method} (n={widths[-1]})")
    ax.set_xticks([])
    ax.set_yticks([])
ax = fig.add_subplot(grid[0, 3])
for method in METHODS:
    ax.plot(widths[:-1], distances[method], "o-", label=method)
ax.set(xscale="log", yscale="log", xlabel="width n", ylabel=f"RMS distance to n={widths[-1]}")
ax.legend()
ax = fig.add_subplot(grid[0, 4])
for method in METHODS:
    ax.plot(sparsities, energy[method], "o-", label=method)
ax.axhline(dense, color="k", ls="--", lw=1, label="dense")
ax.set(xlabel="sparsity", ylabel="top-5 energy of the NTK")
ax.legend()
fig.tight_layout()
plt.show()
