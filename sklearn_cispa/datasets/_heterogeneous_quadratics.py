"""Least-squares machines with independent first- and second-order heterogeneity."""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_cispa.utils import check_random_generator

__all__ = ["make_heterogeneous_quadratics"]


class HeterogeneousQuadratics:
    """The quadratic machine losses behind :func:`make_heterogeneous_quadratics`.

    ``F_m(x) = 1/2 (x - b_m)^T A_m (x - b_m) + const_m`` (exactly the least-squares loss
    ``||X_m x - y_m||^2 / (2 n)`` of the generated data) and ``F = (1/M) sum_m F_m``.

    Attributes
    ----------
    A_ : ndarray of shape (n_machines, n_features, n_features)
        The machines' Hessians.
    b_ : ndarray of shape (n_machines, n_features)
        The machines' minimizers.
    const_ : ndarray of shape (n_machines,)
        The machines' minimal losses (the noise's residual).
    x_star_ : ndarray of shape (n_features,)
        The minimizer of ``F``.
    f_star_ : float
        ``F(x_star_)``.

    Examples
    --------
    >>> from sklearn_cispa.datasets import make_heterogeneous_quadratics
    >>> *_, problem = make_heterogeneous_quadratics(n_features=3, return_problem=True,
    ...                                             random_state=0)
    >>> bool(abs(problem.grad(problem.x_star_)).max() < 1e-10)
    True
    """

    def __init__(self, A, b, const):
        self.A_ = A
        self.b_ = b
        self.const_ = const
        A_bar = A.mean(axis=0)
        self.x_star_ = np.linalg.solve(A_bar, np.einsum("mpq,mq->p", A, b) / len(A))
        self.f_star_ = self.value(self.x_star_)

    def _values(self, x):
        diff = np.asarray(x, dtype=np.float64)[None, :] - self.b_
        return 0.5 * np.einsum("mp,mpq,mq->m", diff, self.A_, diff) + self.const_

    def value(self, x):
        """``F(x)``, the mean of the machines' losses."""
        return float(np.mean(self._values(x)))

    def grad(self, x, machine=None):
        """``grad F(x)``, or ``grad F_m(x)`` of one machine when ``machine`` is given."""
        diff = np.asarray(x, dtype=np.float64)[None, :] - self.b_
        grads = np.einsum("mpq,mq->mp", self.A_, diff)
        return grads.mean(axis=0) if machine is None else grads[machine]

    def heterogeneity(self):
        """``zeta_star``, ``tau`` and the other measures, exactly, from ``A_`` and ``b_``.

        Returns
        -------
        result : dict
            The keys ``zeta_star_sq``, ``zeta_star``, ``tau``, ``tau_mean``,
            ``tau_zeta``, ``H``, ``mu``, ``Q`` and ``theta_star`` of
            :func:`sklearn_cispa.federated.heterogeneity` (uniform averaging).
        """
        A_bar = self.A_.mean(axis=0)
        grads = np.stack([self.grad(self.x_star_, m) for m in range(len(self.A_))])
        spread = np.array([np.linalg.norm(Am - A_bar, ord=2) for Am in self.A_])
        zeta_sq = float(np.mean(np.sum(grads**2, axis=1)))
        return {
            "zeta_star_sq": zeta_sq,
            "zeta_star": float(np.sqrt(zeta_sq)),
            "tau": float(spread.max()),
            "tau_mean": float(spread.mean()),
            "tau_zeta": float(spread.max() * np.sqrt(zeta_sq)),
            "H": float(np.linalg.eigvalsh(self.A_)[:, -1].max()),
            "mu": float(np.linalg.eigvalsh(A_bar)[0]),
            "Q": 0.0,
            "theta_star": self.x_star_.copy(),
        }


@validate_params(
    {
        "n_machines": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "zeta": [Interval(numbers.Real, 0, None, closed="left")],
        "tau": [Interval(numbers.Real, 0, None, closed="left")],
        "mu": [Interval(numbers.Real, 0, None, closed="neither")],
        "L": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_samples_per_machine": [Interval(numbers.Integral, 1, None, closed="left")],
        "noise": [Interval(numbers.Real, 0, None, closed="left")],
        "return_problem": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_heterogeneous_quadratics(
    n_machines=8,
    n_features=10,
    zeta=1.0,
    tau=0.0,
    mu=0.01,
    L=1.0,
    n_samples_per_machine=100,
    noise=0.0,
    return_problem=False,
    random_state=None,
):
    """Least-squares data on machines whose gradient and Hessian spreads are set apart.

    Machine m's least-squares loss ``||X_m x - y_m||^2 / (2 n)`` is exactly
    ``1/2 (x - b_m)^T A_m (x - b_m) + const`` with

    - ``A_m = A + tau * S_m``: ``A = Q diag(lambda) Q^T`` with a random orthogonal ``Q``
      and ``lambda`` log-spaced in ``[mu, L]``; ``S_m`` random symmetric matrices,
      centred (``sum_m S_m = 0``) and scaled together so that ``max_m ||S_m||_op = 1``.
      So the second-order heterogeneity ``max_m ||A_m - A||_op`` is exactly ``tau``;
    - ``b_m = b + zeta * u_m``: ``b ~ N(0, I)``, ``u_m ~ N(0, I)`` centred and scaled so
      that ``(1/M) sum_m ||u_m||^2 = 1``. For fixed ``A``, ``S_m``, ``u_m`` the
      first-order heterogeneity at the optimum, ``zeta_star``, is proportional to
      ``zeta`` (and equals it when ``tau = 0`` and ``A = I``).

    The rows are ``X_m = sqrt(n) U_m A_m^{1/2}`` with ``U_m`` orthonormal columns, and
    ``y_m = X_m b_m + noise * e_m`` with ``e_m`` orthogonal to the columns of ``X_m``, so
    ``X_m^T X_m / n = A_m`` and machine m's least-squares solution is exactly ``b_m``.
    Fit without an intercept (``fit_intercept=False``).

    Parameters
    ----------
    n_machines : int, default=8
        Number of machines M (>= 2).
    n_features : int, default=10
        Dimension d.
    zeta : float, default=1.0
        First-order knob (spread of the machines' minimizers).
    tau : float, default=0.0
        Second-order heterogeneity ``max_m ||A_m - A_bar||_op``. Must not exceed the
        smallest eigenvalue of any ``A_m`` going negative: ``tau <= mu`` always works.
    mu : float, default=0.01
        Smallest eigenvalue of the mean Hessian ``A``.
    L : float, default=1.0
        Largest eigenvalue of ``A`` (``L >= mu``).
    n_samples_per_machine : int, default=100
        Rows per machine n (>= ``n_features``).
    noise : float, default=0.0
        Scale of the residual noise (it changes the losses' constants, not their
        minimizers).
    return_problem : bool, default=False
        Also return the :class:`HeterogeneousQuadratics` problem (``A_``, ``b_``,
        ``x_star_``, ``f_star_``, ``value``, ``grad``, ``heterogeneity``).
    random_state : int, RandomState instance or None, default=None
        Seeds everything.

    Returns
    -------
    X : ndarray of shape (n_machines * n_samples_per_machine, n_features)
        Features, machine by machine.
    y : ndarray of shape (n_machines * n_samples_per_machine,)
        Targets.
    groups : ndarray of shape (n_machines * n_samples_per_machine,)
        The machine (0..M-1) of every row.
    problem : HeterogeneousQuadratics
        Only when ``return_problem=True``.

    Examples
    --------
    >>> from sklearn_cispa.datasets import make_heterogeneous_quadratics
    >>> X, y, groups = make_heterogeneous_quadratics(n_machines=4, n_features=3,
    ...                                              random_state=0)
    >>> X.shape, y.shape, groups.max()
    ((400, 3), (400,), np.int64(3))
    """
    M, d, n = int(n_machines), int(n_features), int(n_samples_per_machine)
    if L < mu:
        raise ValueError(f"L={L} must be at least mu={mu}.")
    if n < d:
        raise ValueError(
            f"n_samples_per_machine={n} must be at least n_features={d}: a machine's "
            "least-squares loss must realise its full-rank Hessian."
        )
    rng = check_random_generator(random_state)
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    Q = Q * np.sign(np.diag(R))[None, :]
    lam = np.geomspace(mu, L, d)
    A = (Q * lam) @ Q.T
    G = rng.standard_normal((M, d, d))
    G = (G + np.swapaxes(G, 1, 2)) / 2
    S = G - G.mean(axis=0)
    top = max(np.linalg.norm(Sm, ord=2) for Sm in S)
    S = S / top if top > 0 else S
    A_m = A[None] + tau * S
    A_m = (A_m + np.swapaxes(A_m, 1, 2)) / 2
    lam_m, V_m = np.linalg.eigh(A_m)
    if lam_m.min() < -1e-12 * L:
        worst = int(np.argmin(lam_m.min(axis=1)))
        raise ValueError(
            f"tau={tau} makes machine {worst}'s Hessian indefinite (smallest eigenvalue "
            f"{lam_m.min():.3g}): a least-squares loss cannot be non-convex. Use tau <= mu."
        )
    b = rng.standard_normal(d)
    u = rng.standard_normal((M, d))
    u = u - u.mean(axis=0)
    u_norm = np.sqrt(np.mean(np.sum(u**2, axis=1)))
    u = u / u_norm if u_norm > 0 else u
    b_m = b[None] + zeta * u
    Xs, ys, consts = [], [], []
    for m in range(M):
        U, Rm = np.linalg.qr(rng.standard_normal((n, d)))
        root = (V_m[m] * np.sqrt(np.clip(lam_m[m], 0, None))) @ V_m[m].T
        X_m = np.sqrt(n) * U @ root
        e = rng.standard_normal(n)
        e = e - U @ (U.T @ e)
        e = noise * e
        Xs.append(X_m)
        ys.append(X_m @ b_m[m] + e)
        consts.append(float(e @ e) / (2 * n))
    X = np.vstack(Xs)
    y = np.concatenate(ys)
    groups = np.repeat(np.arange(M), n)
    if return_problem:
        return X, y, groups, HeterogeneousQuadratics(A_m, b_m, np.array(consts))
    return X, y, groups
