"""Local SGD experiments shared by the report row, the benchmark and the example.

They run on quadratic machines from ``make_heterogeneous_quadratics`` (M = 8, d = 10, no
intercept), where the excess loss of a model is exact:
``F(x) - F* = 1/2 (x - x*)^T A_bar (x - x*)``.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_cispa.datasets import make_heterogeneous_quadratics
from sklearn_cispa.federated import LocalSGDRegressor

ETA_GRID = tuple(np.geomspace(1e-3, 1.0, 12))


def heterogeneous_problem(tau, zeta_star, *, mu=0.1, n_machines=8, n_features=10,
                          n_samples_per_machine=20, random_state=0):
    """Quadratic machines with second-order spread ``tau`` and the given ``zeta_star``.

    ``zeta_star`` is linear in the generator's ``zeta`` for fixed draws, so the data are
    drawn once at ``zeta = 1`` and again at the rescaled value.

    Returns
    -------
    X, y, groups, problem
        As ``make_heterogeneous_quadratics(..., return_problem=True)``.
    """
    kw = dict(n_machines=n_machines, n_features=n_features, tau=tau, mu=mu,
              n_samples_per_machine=n_samples_per_machine, return_problem=True,
              random_state=random_state)
    unit = make_heterogeneous_quadratics(zeta=1.0, **kw)[3].heterogeneity()["zeta_star"]
    zeta = zeta_star / unit if unit > 0 else 0.0
    return make_heterogeneous_quadratics(zeta=zeta, **kw)


def excess_loss(problem, coef):
    """``F(coef) - F*`` of a quadratic problem, computed without cancellation."""
    diff = np.asarray(coef) - problem.x_star_
    return 0.5 * float(diff @ problem.A_.mean(axis=0) @ diff)


def local_gd_bias(tau, zeta_star, local_steps, *, step_size=0.5, rounds=2000, mu=0.1,
                  random_state=0):
    """Stationary ``F(x_R) - F*`` of full-batch local GD (the fixed-point bias).

    Returns
    -------
    bias : float
    tau_zeta : float
        ``tau * zeta_star`` as measured by the problem.
    """
    X, y, g, prob = heterogeneous_problem(tau, zeta_star, mu=mu, random_state=random_state)
    est = LocalSGDRegressor(local_steps=local_steps, rounds=rounds, step_size=step_size,
                            fit_intercept=False).fit(X, y, groups=g)
    return excess_loss(prob, est.coef_), tau * prob.heterogeneity()["zeta_star"]


def local_vs_minibatch(tau, zeta_star, *, seeds=(0, 1, 2), gradient_noise=0.1, local_steps=20,
                       rounds=20, mu=0.1, eta_grid=ETA_GRID, random_state=0):
    """Local against minibatch SGD at the same rounds and gradients, each at its best eta.

    Every eta of the grid is run on every seed; an algorithm's best eta minimises the
    mean excess loss over the seeds (diverged runs count as infinite).

    Returns
    -------
    result : dict
        ``tau_zeta``; for "local" and "minibatch": ``eta`` (the best), ``excess`` (the
        per-seed excess losses at it) and ``curves`` (the per-seed ``loss_curve_ - F*``).
    """
    X, y, g, prob = heterogeneous_problem(tau, zeta_star, mu=mu, random_state=random_state)
    out = {"tau_zeta": tau * prob.heterogeneity()["zeta_star"]}
    for algorithm in ("local", "minibatch"):
        best = None
        for eta in eta_grid:
            excess, curves = [], []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                for seed in seeds:
                    est = LocalSGDRegressor(
                        algorithm=algorithm, local_steps=local_steps, rounds=rounds,
                        step_size=float(eta), gradient_noise=gradient_noise,
                        fit_intercept=False, random_state=seed,
                    ).fit(X, y, groups=g)
                    ok = np.isfinite(est.loss_curve_[-1])
                    excess.append(excess_loss(prob, est.coef_) if ok else np.inf)
                    curves.append(est.loss_curve_ - prob.f_star_)
            if best is None or np.mean(excess) < np.mean(best["excess"]):
                best = {"eta": float(eta), "excess": np.array(excess), "curves": curves}
        out[algorithm] = best
    return out
