"""First- and second-order heterogeneity of machines' losses (zeta_star and tau)."""

import numbers
import warnings

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array, check_consistent_length, column_or_1d

from ._engine import (
    check_machine_labels,
    lbfgs_minimum,
    least_squares_minimum,
    standardising_map,
)

# sup |d^3/dz^3 log(1 + e^z)| = 1 / (6 sqrt(3)); for log-sum-exp a crude bound of 2
_THIRD_DERIVATIVE = {"logistic": 1.0 / (6.0 * np.sqrt(3.0)), "multinomial": 2.0}


def _machine_designs(X, y, groups, fit_intercept):
    X = check_array(X, dtype=np.float64)
    y = column_or_1d(y)
    groups = check_machine_labels(column_or_1d(groups))
    check_consistent_length(X, y, groups)
    if fit_intercept:
        X = np.hstack([X, np.ones((len(X), 1))])
    labels, codes = np.unique(groups, return_inverse=True)
    if len(labels) < 2:
        raise ValueError(f"groups holds {len(labels)} machine label(s); need at least 2.")
    shards = [np.flatnonzero(codes == m) for m in range(len(labels))]
    return X, y, labels, shards


def _logistic_parts(Z, Y, theta, loss):
    """Mean loss, gradient (p, k) and per-row gradients (n, p*k) of one machine."""
    logits = Z @ theta
    if loss == "logistic":
        prob = expit(logits)
        value = -np.mean(Y * log_expit(logits) + (1 - Y) * log_expit(-logits))
    else:
        prob = softmax(logits, axis=1)
        value = np.mean(logsumexp(logits, axis=1) - np.sum(Y * logits, axis=1))
    resid = prob - Y
    rows = (Z[:, :, None] * resid[:, None, :]).reshape(len(Z), -1)
    return value, Z.T @ resid / len(Z), rows, prob


def _logistic_hessian(Z, prob, loss):
    n, p = Z.shape
    if loss == "logistic":
        s = (prob * (1 - prob))[:, 0]
        return (Z * s[:, None]).T @ Z / n
    k = prob.shape[1]
    S = prob[:, :, None] * (np.eye(k)[None] - prob[:, None, :])  # (n, k, k)
    return np.einsum("ij,il,icd->jcld", Z, Z, S).reshape(p * k, p * k) / n


def _raise_overflow(what, largest):
    raise ValueError(
        f"heterogeneity: the machines' second moments overflow float64 (|{what}| reaches "
        f"{largest:.3g}): the constants are moments of the data in its own units (H and mu "
        "are in squared units of X). Rescale X first, for example divide it by its largest "
        "absolute value."
    )


@validate_params(
    {
        "X": ["array-like"],
        "y": ["array-like"],
        "groups": ["array-like"],
        "fit_intercept": ["boolean"],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "averaging": [StrOptions({"uniform", "samples"})],
        "loss": [StrOptions({"squared", "logistic"})],
    },
    prefer_skip_nested_validation=True,
)
def heterogeneity(X, y, groups, fit_intercept=True, alpha=0.0, averaging="uniform",
                  loss="squared"):
    """First- and second-order heterogeneity of the machines' losses at the optimum.

    Machine m's loss is the mean loss over its rows plus ``alpha/2 ||w||^2`` (the
    intercept is not penalized), and the objective is ``F = sum_m weight_m F_m`` with
    ``weight_m = 1/M`` (``averaging="uniform"``, the theory's objective) or ``n_m / n``
    (``"samples"``, the pooled loss). These are the quantities that predict whether
    local SGD beats minibatch SGD: the fixed-point bias of local gradient descent grows
    like ``(tau * zeta_star)^2``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        Targets (``loss="squared"``) or class labels (``loss="logistic"``).
    groups : array-like of shape (n_samples,)
        The machine of every row.
    fit_intercept : bool, default=True
        Whether the model has an intercept (a column of ones appended to X).
    alpha : float, default=0.0
        Ridge penalty on the coefficients.
    averaging : {"uniform", "samples"}, default="uniform"
        The machine weights of the objective, as in :class:`LocalSGDRegressor`.
    loss : {"squared", "logistic"}, default="squared"
        "squared": least squares, everything in closed form, and ``Q = 0``.
        "logistic": the logistic loss (multinomial for three or more classes); the
        optimum is found numerically (L-BFGS), the Hessians are taken there, and ``Q``
        is an upper bound of the Lipschitz constant of the Hessians (no longer 0). A
        ``ConvergenceWarning`` says when no minimiser exists (separable classes with
        ``alpha=0``). For both losses ``theta*`` is computed in standardised coordinates
        (a least-squares solve on the standardised design, or L-BFGS there), so it is
        accurate for any units and offsets of the columns.

    Returns
    -------
    result : dict
        - ``zeta_star_sq``: ``sum_m weight_m ||grad F_m(theta*)||^2`` at the optimum
          ``theta*`` of ``F``, and ``zeta_star``, its square root (the uniform zeta over
          all x is infinite for quadratics with tau > 0 and is not reported);
        - ``tau``: ``max_m ||A_m - A_bar||_op``, the Hessians' largest spread (at
          ``theta*`` for the logistic loss), ``A_bar`` the weighted mean Hessian;
          ``tau_mean``: the weighted mean of the same norms; ``tau_zeta``: ``tau *
          zeta_star``;
        - ``H``: smoothness, ``max_m`` of the largest Hessian eigenvalue (for the
          logistic loss the bound ``c * lambda_max(Z_m^T Z_m / n_m) + alpha`` over all
          parameters); ``mu``: the smallest eigenvalue of ``A_bar`` (local strong
          convexity at ``theta*`` for the logistic loss), 0.0 when ``A_bar`` is
          singular (round-off below 0 is clipped);
        - ``sigma_sq_star``: per-row gradient variance at ``theta*``, averaged over
          machines with their weights;
        - ``Q``: Lipschitz constant of the Hessians (0.0 for least squares, an upper
          bound for the logistic loss);
        - ``theta_star``: ``theta*`` (coefficients, then the intercept when fitted; one
          column per class for the multinomial loss);
        - ``averaging`` and ``weights``: the objective in use.

    Examples
    --------
    >>> from sklearn_cispa.datasets import make_heterogeneous_quadratics
    >>> from sklearn_cispa.federated import heterogeneity
    >>> X, y, g = make_heterogeneous_quadratics(tau=0.05, mu=0.1, random_state=0)
    >>> h = heterogeneity(X, y, g, fit_intercept=False)
    >>> round(h["tau"], 6), h["Q"]
    (0.05, 0.0)
    """
    Z, y, labels, shards = _machine_designs(X, y, groups, fit_intercept)
    n, p = Z.shape
    sizes = np.array([len(s) for s in shards], dtype=np.float64)
    M = len(shards)
    weights = np.full(M, 1.0 / M) if averaging == "uniform" else sizes / sizes.sum()
    pen = np.ones(p)
    if fit_intercept:
        pen[-1] = 0.0
    alpha = float(alpha)
    with np.errstate(over="ignore", invalid="ignore"):
        grams = np.stack([Z[s].T @ Z[s] / len(s) for s in shards])
    if not np.all(np.isfinite(grams)):
        _raise_overflow("X", np.max(np.abs(Z)))
    # theta* is found in standardised coordinates (well conditioned for any units and
    # offsets of the columns), with the objective's own row weights
    row_weights = np.empty(n)
    for w, s in zip(weights, shards):
        row_weights[s] = w / len(s)
    T = standardising_map(Z, row_weights, fit_intercept)
    if loss == "squared":
        k = 1
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        with np.errstate(over="ignore", invalid="ignore"):
            cs = np.stack([Z[s].T @ y[s] / len(s) for s in shards])
        if not np.all(np.isfinite(cs)):
            _raise_overflow("X and y", max(np.max(np.abs(Z)), np.max(np.abs(y))))
        theta = least_squares_minimum(Z, y[:, None], row_weights, alpha, pen, T)[:, 0]
        grads = np.einsum("mpq,q->mp", grams, theta) - cs + alpha * pen * theta
        hessians = grams + alpha * np.diag(pen)[None]
        row_grads = [Z[s] * (Z[s] @ theta - y[s])[:, None] for s in shards]
        Q = 0.0
        H = float(np.max(np.linalg.eigvalsh(hessians)[:, -1]))
        theta_out = theta
    else:
        target_type = type_of_target(y, input_name="y")
        if target_type not in ("binary", "multiclass"):
            raise ValueError(
                f"loss='logistic' needs class labels in y; got a {target_type!r} target "
                "(for example real values). Use loss='squared' for a real-valued y."
            )
        classes, codes = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError("loss='logistic' needs at least 2 classes in y.")
        kind = "logistic" if len(classes) == 2 else "multinomial"
        Y = codes[:, None].astype(float) if kind == "logistic" else np.eye(len(classes))[codes]
        k = Y.shape[1]
        penk = np.repeat(pen[:, None], k, axis=1)

        def objective(flat):
            theta = flat.reshape(p, k)
            value, grad = 0.0, np.zeros((p, k))
            for w, s in zip(weights, shards):
                v, g, _, _ = _logistic_parts(Z[s], Y[s], theta, kind)
                value, grad = value + w * v, grad + w * g
            value += 0.5 * alpha * np.sum(penk * theta**2)
            return value, (grad + alpha * penk * theta).ravel()

        theta, value, grad_norm = lbfgs_minimum(
            lambda flat: objective(flat.ravel()), T, np.zeros((p, k)),
            maxiter=10000, gtol=1e-12, ftol=1e-15,
        )
        if (alpha == 0 and value < 1e-6) or grad_norm > 1e-5:
            warnings.warn(
                "The logistic objective has no well-defined minimiser here (the classes "
                f"look separable: loss {value:.2g}, gradient {grad_norm:.2g}); "
                "theta_star, zeta_star and tau are not meaningful. Set alpha > 0.",
                ConvergenceWarning,
                stacklevel=2,
            )
        grads, hessians, row_grads = [], [], []
        for s in shards:
            _, g, rows, prob = _logistic_parts(Z[s], Y[s], theta, kind)
            grads.append((g + alpha * penk * theta).ravel())
            hessians.append(_logistic_hessian(Z[s], prob, kind) + alpha * np.diag(penk.ravel()))
            row_grads.append(rows)
        grads, hessians = np.stack(grads), np.stack(hessians)
        norms3 = [np.mean(np.linalg.norm(Z[s], axis=1) ** 3) for s in shards]
        Q = float(_THIRD_DERIVATIVE[kind] * max(norms3))
        curv = 0.25 if kind == "logistic" else 0.5
        H = float(curv * np.max(np.linalg.eigvalsh(grams)[:, -1]) + alpha)
        theta_out = theta[:, 0] if k == 1 else theta
    A_bar = np.einsum("m,mpq->pq", weights, hessians)
    spread = np.array([np.linalg.norm(Hm - A_bar, ord=2) for Hm in hessians])
    zeta_sq = float(weights @ np.sum(grads**2, axis=1))
    sigma_sq = float(weights @ np.array([
        np.mean(np.sum((r - r.mean(axis=0)) ** 2, axis=1)) for r in row_grads
    ]))
    tau = float(spread.max())
    return {
        "zeta_star_sq": zeta_sq,
        "zeta_star": float(np.sqrt(zeta_sq)),
        "tau": tau,
        "tau_mean": float(weights @ spread),
        "tau_zeta": tau * float(np.sqrt(zeta_sq)),
        "H": H,
        # A_bar is positive semi-definite: a negative smallest eigenvalue is round-off
        "mu": max(float(np.linalg.eigvalsh(A_bar)[0]), 0.0),
        "sigma_sq_star": sigma_sq,
        "Q": Q,
        "theta_star": theta_out,
        "averaging": averaging,
        "weights": weights,
    }
