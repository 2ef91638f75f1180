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

The second figure tests that proxy. For each method and seed it computes the kernel of
the pruned network itself and the paper's *Graphon NTK*: the kernel of a network whose
masks are drawn from the graphons estimated from the pruned one (fresh weights), and
plots both spectra and their top-5 energy against the early training loss of the
pruned network. The pruned networks' own top-5 energy tracks the early loss (so does
their scale); the graphon-drawn kernels barely differ across methods and do not. The
analytic :func:`~sklearn_cispa.pruning.graphon_ntk` from the hidden graphons is the
dense kernel times a constant (a bias-free ReLU MLP is positively homogeneous), so it
cannot tell methods apart at all; with every layer's graphon
(:func:`~sklearn_cispa.pruning.network_graphons`, the input layer's varying along the
pixels) it is no longer a rescaled dense kernel, but its top-5 energy stays within a few
hundredths of the dense one for every method.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy.stats import spearmanr
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from sklearn_cispa.pruning import (
    GraphonEstimator,
    empirical_ntk,
    graphon_ntk,
    make_graphon_mlp,
    network_graphons,
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

# %%
# Does the spectrum explain early training?
# -----------------------------------------


def early_loss(net, steps=20, lr=1.0):
    """Mean full-batch cross-entropy over the first SGD steps, relative to the first."""
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(Xt), yt)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.mean(losses) / losses[0]


def graphon_drawn(masks, seed):
    """Masks of the same shapes drawn from each layer's estimated graphon."""
    out = {}
    for i, (key, m) in enumerate(masks.items()):
        sort = "rows" if i == 0 else "degree"  # the input layer keeps its pixels
        k = m.shape[0] if i == len(masks) - 1 else 16
        est = GraphonEstimator(n_blocks=k, sort=sort).fit(m)
        out[key] = est.sample_mask(tuple(m.shape), random_state=seed + i)
    return out


records = []
for seed in (0, 1):
    for method in METHODS:
        base = make_graphon_mlp(64, (128,) * 3, n_outputs=10, random_state=seed)
        masks = prune_at_init(base, method, 0.8, X=Xt, y=yt, random_state=seed + 1)
        net = make_graphon_mlp(64, (128,) * 3, n_outputs=10, masks=masks, random_state=seed)
        drawn = make_graphon_mlp(
            64, (128,) * 3, n_outputs=10, masks=graphon_drawn(masks, seed), random_state=seed
        )
        K, Kg = empirical_ntk(net, X[:64], output=0), empirical_ntk(drawn, X[:64], output=0)
        records.append(
            {
                "method": method,
                "K": ntk_spectrum_stats(K),
                "Kg": ntk_spectrum_stats(Kg),
                "early": early_loss(net),
            }
        )
        if seed == 0:
            hidden = [
                GraphonEstimator(16).fit(masks[f"layers.{i}.weight"]).graphon_ for i in (1, 2)
            ]
            ratio = graphon_ntk(X[:64], graphons=[None, *hidden, None]) / graphon_ntk(
                X[:64], graphons=[None] * 4
            )
            # every layer's graphon, the input layer's along the pixels: no longer the
            # dense kernel rescaled, but its spectrum barely moves
            Ka = graphon_ntk(X[:64], graphons=network_graphons(masks, n_blocks=16))
            print(
                f"{method:8s} analytic / dense kernel: spread {np.ptp(ratio):.1e}; with "
                f"every layer's graphon top-5 energy {ntk_spectrum_stats(Ka)['top_energy']:.3f}"
                f" (dense {ntk_spectrum_stats(graphon_ntk(X[:64]))['top_energy']:.3f})"
            )

early = [r["early"] for r in records]
print(
    "Spearman(top-5 energy, early loss), pruned nets:",
    round(spearmanr([r["K"]["top_energy"] for r in records], early)[0], 2),
    " graphon-drawn:",
    round(spearmanr([r["Kg"]["top_energy"] for r in records], early)[0], 2),
)

fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
for i, method in enumerate(METHODS):
    mine = [r for r in records if r["method"] == method]
    for ax, key in ((axes[0], "K"), (axes[1], "Kg")):
        ev = np.mean([r[key]["eigenvalues"] / r[key]["eigenvalues"].sum() for r in mine], 0)
        ax.loglog(np.arange(1, len(ev) + 1), np.maximum(ev, 1e-16), color=f"C{i}", label=method)
    axes[2].scatter(
        [r["K"]["top_energy"] for r in mine],
        [r["early"] for r in mine],
        color=f"C{i}",
        label=f"{method}, pruned",
    )
    axes[2].scatter(
        [r["Kg"]["top_energy"] for r in mine],
        [r["early"] for r in mine],
        color=f"C{i}",
        marker="x",
        label=f"{method}, graphon-drawn",
    )
axes[0].set(title="pruned networks", xlabel="k", ylabel="lambda_k / trace")
axes[1].set(title="Graphon NTK (graphon-drawn masks)", xlabel="k")
axes[2].set(xlabel="top-5 energy", ylabel="early loss / initial loss")
axes[0].legend(fontsize=7)
axes[2].legend(fontsize=6)
fig.tight_layout()
plt.show()
