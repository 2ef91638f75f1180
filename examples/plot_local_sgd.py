"""
=====================================================
Local SGD under first- and second-order heterogeneity
=====================================================

Local SGD (federated averaging) lets every machine take ``K`` SGD steps on its own data
before the machines average their models. Whether this beats minibatch SGD at the same
communication depends on how different the machines are: the spread of their gradients
at the optimum (first order, ``zeta_star``) and of their Hessians (second order,
``tau``). :func:`sklearn_cispa.datasets.make_heterogeneous_quadratics` sets the two
apart, :func:`sklearn_cispa.federated.heterogeneity` measures them, and
:class:`sklearn_cispa.federated.LocalSGDRegressor` trains by local or minibatch SGD.

Four panels:

1. the fixed-point bias ``F(x_R) - F*`` of local gradient descent over a grid of
   ``(tau, zeta_star)``, on a log colour scale, with contours of ``tau * zeta_star``: the
   bias is constant along those contours (it scales like ``(tau zeta_star)^2``);
2. loss curves of local, minibatch and accelerated minibatch SGD (the theory's
   baseline; same rounds, same gradients, the best step size of each, found on a grid
   extended until it lies inside) under first-order heterogeneity alone (``tau = 0``,
   small and large ``zeta_star``) and under second-order heterogeneity (``tau`` small and
   large at a fixed ``zeta_star``): with ``tau = 0`` local SGD is exact gradient descent
   for any ``zeta_star``; a large ``tau`` makes it lose to both baselines;
3. the consensus error (how far the machines drift apart before each averaging)
   against rounds. With ``tau = 0`` it is large, yet the average is exactly centralised
   gradient descent: consensus error is not bias.
"""

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm

from sklearn_cispa.datasets import make_heterogeneous_quadratics
from sklearn_cispa.federated import LocalSGDRegressor, heterogeneity
from sklearn_cispa.report import compare_algorithms, local_gd_bias

# %%
# The heterogeneity of generated machines
# ---------------------------------------
X, y, groups = make_heterogeneous_quadratics(tau=0.05, zeta=2.0, mu=0.1, random_state=0)
h = heterogeneity(X, y, groups, fit_intercept=False)
print(
    f"tau = {h['tau']:.3f}, zeta_star = {h['zeta_star']:.3f}, "
    f"tau * zeta_star = {h['tau_zeta']:.3f}, Q = {h['Q']}"
)

# %%
# Bias of local gradient descent over (tau, zeta_star)
# ----------------------------------------------------
taus = np.array([0.01, 0.02, 0.04, 0.06, 0.09])
zetas = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
bias = np.array([[local_gd_bias(t, z, 20, rounds=400)[0] for z in zetas] for t in taus])

fig, axes = plt.subplots(2, 3, figsize=(14, 8))
ax = axes[0, 0]
mesh = ax.pcolormesh(zetas, taus, bias, norm=LogNorm(), shading="nearest", cmap="viridis")
fig.colorbar(mesh, ax=ax, label="F(x_R) - F*  (K = 20)")
Z, T = np.meshgrid(np.geomspace(zetas[0], zetas[-1], 50), np.geomspace(taus[0], taus[-1], 50))
contours = ax.contour(Z, T, Z * T, levels=[0.005, 0.02, 0.08, 0.3], colors="white", linewidths=0.8)
ax.clabel(contours, fmt="tau*zeta*=%g", fontsize=7)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xticks(zetas, [f"{z:g}" for z in zetas], minor=False)
ax.set_yticks(taus, [f"{t:g}" for t in taus], minor=False)
ax.minorticks_off()
ax.set_xlabel("zeta_star")
ax.set_ylabel("tau")
ax.set_title("fixed-point bias of local GD")

# %%
# Local, minibatch and accelerated minibatch SGD
# ----------------------------------------------
settings = [
    ((0.0, 1.08), "first order only"),
    ((0.0, 10.0), "first order only"),
    ((0.009, 4.3), "second order"),
    ((0.09, 4.3), "second order"),
]
colors = {"local": "C0", "minibatch": "C1", "accelerated_minibatch": "C2"}
for ax, ((tau, zeta), kind) in zip([axes[0, 1], axes[0, 2], axes[1, 0], axes[1, 1]], settings):
    res = compare_algorithms(tau, zeta, seeds=(0, 1))
    for algorithm, color in colors.items():
        curve = np.median(np.array(res[algorithm]["curves"]), axis=0)
        ax.semilogy(
            np.arange(1, 21),
            curve,
            color=color,
            label=f"{algorithm} (eta={res[algorithm]['eta']:.2g})",
        )
    ax.set_xlabel("round")
    ax.set_ylabel("F(x) - F*")
    ax.set_title(f"{kind}: tau={tau:g}, zeta*={zeta:g}", fontsize=9)
    ax.legend(fontsize=7)

# %%
# Consensus error is not bias
# ---------------------------
ax = axes[1, 2]
for tau, dash in ((0.0, "-"), (0.09, "--")):
    X, y, groups, problem = make_heterogeneous_quadratics(
        tau=tau, zeta=2.0, mu=0.1, return_problem=True, random_state=0
    )
    est = LocalSGDRegressor(local_steps=20, rounds=60, step_size=0.5, fit_intercept=False)
    est.fit(X, y, groups=groups)
    ax.semilogy(est.consensus_error_, dash, label=f"consensus error, tau={tau}")
    ax.semilogy(
        np.maximum(est.loss_curve_ - problem.f_star_, 1e-16), ":", label=f"F - F*, tau={tau}"
    )
ax.set_xlabel("round")
ax.set_title("machines drift apart within every round")
ax.legend(fontsize=7)
fig.tight_layout()
plt.show()
