"""Mixtures of linear regressions fitted by EM and selected by BIC.

This is the local model of the causal mixture models of Mameche, Kalofolias and Vreeken
(NeurIPS 2025): a node with parents ``P`` is explained by ``k`` linear mechanisms
``y = b_c + X_P beta_c + N(0, sigma_c^2)`` mixed with weights ``pi_c``. The reference code
fits it with R's ``flexmix``; here it is a numpy EM with the same initialisation (a
uniformly random partition of the rows), the same minimum prior (components with weight
below 0.05 are dropped) and the same BIC.
"""

import numbers
import warnings

import numpy as np
from scipy.special import gammaln
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.utils import spawn_seeds

MIN_PRIOR = 0.05  # flexmix's default ``minprior``
REL_TOL = 1e-6  # flexmix's default relative log-likelihood tolerance (inferred)
VAR_FLOOR = 1e-6  # variance floor, relative to var(y)
MIN_SEPARATION = 0.5  # default smallest separation of two components' mean lines
T_DOFS = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])  # Student-t degrees of freedom tried
T_ITER = 25  # IRLS iterations of the Student-t single-mechanism fit
SHASH_ITER = 200  # BFGS iterations of the sinh-arcsinh single-mechanism fit
_LOG_2PI = np.log(2.0 * np.pi)
EXP_FLOOR = -700.0  # log-responsibilities are floored here before exp (no underflow)


def _n_params(k, n_features):
    """Free parameters of a k-component mixture with ``n_features`` regressors."""
    return k * (n_features + 2) + (k - 1)


def _max_affordable_k(n_samples, n_features, max_components):
    """Largest k whose components each have at least ``n_features + 2`` rows on average."""
    return int(min(max_components, n_samples // (n_features + 2)))


def _logsumexp_rows(a):
    """Row-wise log-sum-exp (scipy's version costs more in call overhead than in work here)."""
    m = a.max(axis=1, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))[:, 0]


def _loglik_matrix(Z, y, B, s2, pi):
    """Per-sample, per-component ``log pi_c + log N(y; Z B_c, s2_c)``."""
    mean = Z @ B.T
    res2 = (y[:, None] - mean) ** 2
    return np.log(pi)[None, :] - 0.5 * (_LOG_2PI + np.log(s2))[None, :] - 0.5 * res2 / s2


def _wls(Z, y, R, moments=None):
    """Weighted least squares for every column of responsibilities ``R`` at once.

    Solves the normal equations with a relative ridge of 1e-10 on the diagonal, which
    leaves full-rank problems unchanged to working precision and keeps rank-deficient
    designs (a constant regressor next to the intercept) solvable. ``moments`` are the
    row-wise products ``(z z^T, z y)`` of :func:`_moments`, so that the weighted Gram
    matrices of all components are one matrix product.
    """
    ZZ, Zy = _moments(Z, y) if moments is None else moments
    k, d = R.shape[1], Z.shape[1]
    G = (R.T @ ZZ).reshape(k, d, d)
    b = R.T @ Zy
    scale = np.trace(G, axis1=1, axis2=2) / d
    G = G + (1e-10 * scale + 1e-300)[:, None, None] * np.eye(d)[None]
    return np.linalg.solve(G, b[:, :, None])[:, :, 0]


def _moments(Z, y):
    n, d = Z.shape
    return (Z[:, :, None] * Z[:, None, :]).reshape(n, d * d), Z * y[:, None]


def _ols_fit(Z, y, var_floor):
    """The closed-form k = 1 fit: OLS with sigma^2 = RSS / n."""
    n = Z.shape[0]
    B = _wls(Z, y, np.ones((n, 1)))
    s2 = np.maximum(np.mean((y - Z @ B[0]) ** 2), var_floor)
    s2 = np.array([s2])
    pi = np.ones(1)
    ll = float(_loglik_matrix(Z, y, B, s2, pi).sum())
    return {"ll": ll, "B": B, "s2": s2, "pi": pi, "n_iter": 1}


def _student_t_fit(Z, y, var_floor):
    """One linear mechanism with Student-t noise (a heavy-tailed k = 1 model).

    For every degrees of freedom in ``T_DOFS``, ``T_ITER`` iterations of the EM of the t
    regression (iteratively reweighted least squares, weights
    ``(nu + 1) / (nu + r^2 / s2)``) from the OLS fit; the nu of highest log-likelihood
    is kept. All nu run as one batch of weighted least squares. The fit has one free
    parameter more than the Gaussian k = 1 fit (nu).
    """
    return _student_t_fit_many(Z[None], y[None], var_floor)[0]


def _student_t_fit_many(Z, y, var_floor):
    """:func:`_student_t_fit` of many regressions of the same shape at once: ``Z`` is
    ``(P, n, d)``, ``y`` ``(P, n)``; every regression's arithmetic is its own (stacked
    products and solves), so each fit is the one it gets alone. Returns one fit per
    regression."""
    P, n, d = Z.shape
    m = len(T_DOFS)
    ZZ = (Z[:, :, :, None] * Z[:, :, None, :]).reshape(P, n, d * d)
    Zy = Z * y[:, :, None]
    ridge_eye = np.eye(d)

    def wls(w):  # weights (P, n, m) -> coefficients (P, m, d)
        wt = w.transpose(0, 2, 1)
        G = np.matmul(wt, ZZ).reshape(P, m, d, d)
        b = np.matmul(wt, Zy)
        scale = np.trace(G, axis1=2, axis2=3) / d
        G = G + (1e-10 * scale + 1e-300)[:, :, None, None] * ridge_eye
        return np.linalg.solve(G, b[..., None])[..., 0]

    # the residuals, their squares and the weights live in three (P, n, m) buffers,
    # updated in place (the same arithmetic as fresh arrays: bitwise the same fit)
    yc = y[:, :, None]
    B = wls(np.ones((P, n, m)))
    res = np.matmul(Z, B.transpose(0, 2, 1))
    np.subtract(yc, res, out=res)
    r2 = np.square(res)
    s2 = np.maximum(np.mean(r2, axis=1), var_floor)
    w = np.empty_like(r2)
    nu1 = T_DOFS + 1.0
    for _ in range(T_ITER):
        np.divide(r2, s2[:, None, :], out=w)  # weights (nu + 1) / (nu + r^2 / s2)
        w += T_DOFS
        np.divide(nu1, w, out=w)
        B = wls(w)
        res = np.matmul(Z, B.transpose(0, 2, 1))
        np.subtract(yc, res, out=res)
        np.square(res, out=r2)
        w *= r2  # the weighted squared residuals, for s2 (w is recomputed next)
        s2 = np.maximum(np.mean(w, axis=1), var_floor)
    nu = T_DOFS
    ll = (
        n * (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi * s2))
        - 0.5 * (nu + 1) * np.log1p(r2 / (nu * s2[:, None, :])).sum(axis=1)
    )
    out = []
    for p in range(P):
        best = int(np.argmax(ll[p]))
        out.append(
            {
                "ll": float(ll[p, best]),
                "B": B[p, best : best + 1],
                "s2": s2[p, best : best + 1],
                "pi": np.ones(1),
                "n_iter": T_ITER,
                "nu": float(nu[best]),
            }
        )
    return out


def _shash_nll(theta, Z, C, y, log_floor):
    """Negative log-likelihood and gradient of one linear mechanism with sinh-arcsinh
    noise (Jones and Pewsey 2009) whose log-scale is linear in the design.

    ``theta = (a, c, eps, log_delta)``: location ``Z a``, scale ``exp(C c)`` (floored at
    ``exp(log_floor)``), skewness ``eps`` and tail weight ``delta`` (``eps = 0,
    delta = 1``: Gaussian; ``delta < 1``: heavier tails than Gaussian).
    """
    d, e = Z.shape[1], C.shape[1]
    a, c, eps = theta[:d], theta[d : d + e], theta[d + e]
    ld = min(max(theta[d + e + 1], -3.0), 3.0)  # tail weight kept in [e^-3, e^3]
    eta = C @ c
    floored = eta < log_floor
    ls = np.where(floored, log_floor, eta)
    x = (y - Z @ a) * np.exp(-ls)
    delta = np.exp(ld)
    u = np.arcsinh(x)
    w = delta * u - eps
    S, cosh_w = np.sinh(w), np.cosh(w)
    one_x2 = 1.0 + x * x
    logp = ld + np.log(cosh_w) - ls - 0.5 * _LOG_2PI - 0.5 * np.log(one_x2) - 0.5 * S * S
    h = np.tanh(w) - S * cosh_w  # d logp / d w
    g = h * delta / np.sqrt(one_x2) - x / one_x2  # d logp / d x
    grad = np.empty_like(theta)
    grad[:d] = Z.T @ (g * np.exp(-ls))  # d x / d a = -Z / scale; signs flip for the nll
    grad[d : d + e] = C.T @ np.where(floored, 0.0, 1.0 + g * x)
    grad[d + e] = h.sum()
    grad[d + e + 1] = -(1.0 + h * delta * u).sum() if ld == theta[d + e + 1] else 0.0
    return -float(logp.sum()), grad


def _shash_fit(Z, y, var_floor, heteroscedastic=True):
    """One linear mechanism with skewed, heavy- or light-tailed, heteroscedastic noise.

    The noise is sinh-arcsinh (Jones and Pewsey 2009: skewness and tail weight, the
    Gaussian as a special case) with a log-scale linear in the parents; the location is
    linear in the parents. Maximum likelihood by BFGS from the OLS fit (so the
    log-likelihood is at least the Gaussian one). ``d + e + 2`` free parameters for a
    location design of ``d`` columns (intercept included) and a scale design of ``e``
    (``d``, or 1 without ``heteroscedastic``): ``e + 1`` more than the Gaussian fit
    (``n_extra``). Returns a fit whose ``s2`` is the squared scale at the mean of the
    regressors, or None if the optimiser ends below the Gaussian likelihood.
    """
    from scipy.optimize import minimize

    n, d = Z.shape
    C = Z if heteroscedastic else Z[:, :1]
    e = C.shape[1]
    ols = _ols_fit(Z, y, var_floor)
    log_floor = 0.5 * np.log(var_floor)
    theta0 = np.zeros(d + e + 2)
    theta0[:d] = ols["B"][0]
    theta0[d] = 0.5 * np.log(ols["s2"][0])
    # BFGS in numpy: few parameters, and scipy's L-BFGS-B is slower here under BLAS
    # threading; a non-converged run still counts (its likelihood is a lower bound)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        res = minimize(
            _shash_nll,
            theta0,
            args=(Z, C, y, log_floor),
            jac=True,
            method="BFGS",
            options={"maxiter": SHASH_ITER},
        )
    ll = -float(res.fun)
    if not np.isfinite(ll) or ll < ols["ll"]:
        return None
    theta = res.x
    return {
        "ll": ll,
        "B": theta[None, :d],
        "s2": np.array([max(np.exp(2.0 * theta[d]), var_floor)]),
        "pi": np.ones(1),
        "n_iter": int(res.nit),
        "shape": (float(theta[d + e]), float(np.exp(np.clip(theta[d + e + 1], -3.0, 3.0)))),
        "log_scale": theta[d : d + e].copy(),
        "n_extra": e + 1,  # free parameters beyond the Gaussian fit's
    }


def _single_mechanism_fit(Z, y, var_floor, heavy_tails, t_fit=None):
    """The k = 1 fit: Gaussian OLS, or (``heavy_tails``) the better by BIC of it and the
    Student-t fit (:func:`_student_t_fit`, one parameter more; ``t_fit`` if given, the
    fit already made in a batch); with ``heavy_tails="flexible"`` also the sinh-arcsinh
    heteroscedastic fit (:func:`_shash_fit`, ``d + 1`` parameters more than the
    Gaussian fit)."""
    n, d = Z.shape
    fit = _finish(_ols_fit(Z, y, var_floor), n, d)
    if heavy_tails:
        if t_fit is None:
            t_fit = _student_t_fit(Z, y, var_floor)
        t_fit = _finish(t_fit, n, d)
        t_fit["bic"] += np.log(n)  # nu
        if t_fit["bic"] < fit["bic"]:
            fit = t_fit
    if heavy_tails == "flexible":
        s_fit = _shash_fit(Z, y, var_floor)
        if s_fit is not None:
            s_fit = _finish(s_fit, n, d)
            s_fit["bic"] += s_fit["n_extra"] * np.log(n)  # scale slopes, skew, tail
            if s_fit["bic"] < fit["bic"]:
                fit = s_fit
    fit["sep"] = np.inf
    return fit


def _residual_ranks(Z, y):
    """Rank of every row's OLS residual (ties: row order)."""
    n = Z.shape[0]
    B = _wls(Z, y, np.ones((n, 1)))
    return np.argsort(np.argsort(y - Z @ B[0], kind="stable"), kind="stable")


def _residual_partition(Z, y, k, ranks=None):
    """Rows split into k blocks of equal size by the rank of their OLS residual
    (``ranks``: :func:`_residual_ranks`, if already known)."""
    ranks = _residual_ranks(Z, y) if ranks is None else ranks
    return ranks * k // Z.shape[0]


def _em_many(problems, max_iter, var_floor, accelerate=True, init_iter=None):
    """EM runs of many regressions at once, from given hard partitions.

    ``problems`` is a list of ``(Z, y, starts, n_components)``, every ``Z`` with the same
    shape ``(n, d)``: the design and target of one regression, the integer partitions of
    the rows that start its runs and the number of starting components of each run. The
    runs with the same number of starting components, across all problems, are one
    vectorised batch: the responsibilities are one ``(n_runs, k, n)`` array, every run
    carries its own moments ``(z z^T, z y)`` and design, components that a run has
    dropped below the minimum prior are masked, and a run leaves the batch as soon as
    its log-likelihood changes by less than ``REL_TOL`` relative (or at ``max_iter``).

    Every run's arithmetic is its own (stacked matrix products of one run's shapes,
    row-wise reductions), so a run follows the same iterations whatever else is in the
    batch.

    With an int ``init_iter`` (short-run EM, the "emEM" initialisation of Biernacki,
    Celeux and Govaert 2003), the runs of one problem with the same number of starting
    components compete after ``init_iter`` iterations: every run whose log-likelihood is
    then below the best of its group (running or already converged) stops there, and
    only the leader continues. A stopped run is returned at that iterate; it is never
    the best of its group, whose log-likelihood only grows. ``None``: every run to
    convergence.

    Returns, per problem, one dict per run with ``ll``, ``B``, ``s2``, ``pi`` (active
    components only, in their starting order) and ``n_iter``.
    """
    n, d = problems[0][0].shape
    iu, ju = np.triu_indices(d)
    W, ZY, batches = [], [], {}
    for t, (Z, y, starts, n_components) in enumerate(problems):
        W.append(np.hstack([Z[:, iu] * Z[:, ju], Z * y[:, None], (y * y)[:, None]]))
        ZY.append(np.vstack([Z.T, y[None, :]]))
        for r, (part, k) in enumerate(zip(starts, n_components)):
            batches.setdefault(k, []).append((t, r, np.asarray(part)))
    W, ZY = np.stack(W), np.stack(ZY)
    out = [[None] * len(p[2]) for p in problems]
    rows = np.arange(n)
    for k, members in batches.items():
        tid = np.array([t for t, _, _ in members])
        R = np.zeros((len(members), k, n))
        for i, (_, _, part) in enumerate(members):
            R[i, part, rows] = 1.0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            res = _em_loop(
                W[tid],
                ZY[tid],
                R,
                max_iter,
                var_floor,
                _sym_maps(d),
                accelerate,
                group=tid,
                init_iter=init_iter,
            )
        for (t, r, _), fit in zip(members, res):
            out[t][r] = fit
    return out


def _sym_maps(d):
    """For the upper-triangle moments ``z_i z_j`` (``i <= j``, in ``numpy.triu_indices``
    order): the column of every entry of the ``d x d`` matrix, row-major, and the
    columns of the diagonal."""
    iu, ju = np.triu_indices(d)
    col = np.empty((d, d), dtype=np.intp)
    col[iu, ju] = np.arange(len(iu))
    col[ju, iu] = np.arange(len(iu))
    return col.ravel(), col[np.arange(d), np.arange(d)]


def _linalg_kernels():
    """numpy.linalg.solve's own kernel module (private, numpy >= 1.26), or None where it
    is missing or its ``solve`` does not take this call: then :func:`_solve` is
    ``numpy.linalg.solve``."""
    try:
        from numpy.linalg import _umath_linalg as kernels

        x = kernels.solve(np.eye(2)[None], np.ones((1, 2, 1)), signature="dd->d")
        if not np.array_equal(x, np.ones((1, 2, 1))):
            return None
    except Exception:  # pragma: no cover - a numpy whose private module differs
        return None
    return kernels


_LINALG_KERNELS = _linalg_kernels()


def _solve(A, b):
    """``numpy.linalg.solve(A, b)`` for stacked float64 ``A`` ``(s, d, d)`` and ``b``
    ``(s, d, 1)``: the same LAPACK kernel called directly (the wrapper's checks cost
    more than a small solve). A non-finite result (a singular or non-finite system) is
    recomputed by ``numpy.linalg.solve`` itself, which raises or returns as before."""
    if _LINALG_KERNELS is not None:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
            x = _LINALG_KERNELS.solve(A, b, signature="dd->d")
        if np.isfinite(x).all():
            return x
    return np.linalg.solve(A, b)


def _m_step(R, W, active, tri, var_floor):
    """The M-step of :func:`_em_loop` for every run of the batch.

    The weighted moments ``R @ W``, one run at a time (their first column is a
    component's weight: the intercept squared); components below the minimum prior are
    dropped first. ``tri`` is :func:`_sym_maps` of the design's width. Returns
    ``(B, s2, pi, active)`` with shapes ``(m, k, d)``, ``(m, k)``, ``(m, k)``,
    ``(m, k)``; dropped components have ``pi = 0`` and ``s2 = 1``.
    """
    m, K, n = R.shape
    full, diag = tri
    d = len(diag)
    n_tri = W.shape[2] - d - 1
    S = np.matmul(R, W)
    Nk = S[:, :, 0].copy()
    keep = active & (Nk / n >= MIN_PRIOR)
    none = ~keep.any(axis=1)
    if none.any():
        masked = np.where(active, Nk, -np.inf)
        keep[none] = (masked == masked.max(axis=1, keepdims=True))[none]
    if not keep.all():  # dropped components: no weight (the E-step leaves them 1e-304)
        S *= keep[:, :, None]
    active = keep
    Nk = np.where(active, Nk, 0.0)
    pi = Nk / Nk.sum(axis=1, keepdims=True)
    S = S.reshape(m * K, -1)
    Gf = S[:, full]  # (m K, d d), symmetric
    G = Gf.reshape(m * K, d, d)
    scale = S[:, diag].sum(axis=1) / d
    b = S[:, n_tri : n_tri + d]
    Gr = Gf.copy()
    Gr[:, :: d + 1] += (1e-10 * scale + 1e-300)[:, None]  # the relative ridge
    B = _solve(Gr.reshape(m * K, d, d), b[:, :, None])[:, :, 0]
    # b^T G b as a stacked product and a row sum: einsum's summation order depends on
    # the batch's shape (numpy 2.4 with three operands), and a run's arithmetic must
    # not depend on the other runs of its batch
    GB = np.matmul(G, B[:, :, None])[:, :, 0]
    rss = S[:, -1] - 2.0 * (B * b).sum(axis=1) + (B * GB).sum(axis=1)
    act = active.ravel()
    s2 = np.where(act, np.maximum(rss / Nk.ravel(), var_floor), 1.0)
    return B.reshape(m, K, d), s2.reshape(m, K), pi, active


E_BLOCK = 1 << 15  # entries of the (runs, k, n) arrays per block of the E-step's passes


def _e_step(theta, ZY):
    """The E-step of :func:`_em_loop`: responsibilities ``(m, k, n)`` and the
    log-likelihood of every run at ``theta = (B, s2, pi, active)``.

    ``log pi_c + log N(y; mean_c, s2_c)`` is one product of the scaled coefficients
    ``[b, -1] / sqrt(2 s2)`` with ``[Z^T; y]``, squared, then normalised over the
    components: the only passes over the ``(m, k, n)`` arrays are the ones the
    responsibilities need. The passes run over blocks of runs of about ``E_BLOCK``
    entries, so that a block stays in cache from the first pass to the last; every
    pass is elementwise or a reduction over the components of one run and row, so the
    blocks change no bit of the result.
    """
    B, s2, pi, active = theta
    m, K, d = B.shape
    n = ZY.shape[2]
    log_pi = np.log(pi)  # -inf where dropped: their weight is exactly 0
    Ba = np.empty((m, K, d + 1))
    Ba[:, :, :d] = B
    Ba[:, :, d] = -1.0  # [B, -1] @ [Z^T; y] is the residual
    Ba *= np.sqrt(0.5 / s2)[:, :, None]
    const = (log_pi - 0.5 * (_LOG_2PI + np.log(s2)))[:, :, None]
    R = np.empty((m, K, n))
    ll = np.empty(m)
    step = max(1, E_BLOCK // (K * n))
    for s in range(0, m, step):
        e = min(s + step, m)
        logp = np.matmul(Ba[s:e], ZY[s:e], out=R[s:e])
        logp *= logp
        np.subtract(const[s:e], logp, out=logp)
        mx = logp.max(axis=1)
        logp -= mx[:, None, :]
        # exp is ten times slower where it underflows (below about -708; most entries
        # of a component far from a row): floor at -700, whose exp (1e-304) adds
        # nothing to a sum that is at least 1, and leaves a dropped component's weight
        # negligible
        np.maximum(logp, EXP_FLOOR, out=logp)
        np.exp(logp, out=logp)
        tot = logp.sum(axis=1)
        logp /= tot[:, None, :]
        ll[s:e] = (mx + np.log(tot)).sum(axis=1)
    return R, ll


SQUAREM_STEP_START = 1.0  # largest extrapolation step of a run's first cycle
SQUAREM_STEP_FACTOR = 4.0  # growth of the largest extrapolation step after a full step


def _extrapolate(theta0, theta1, theta2, step_max):
    """The squared extrapolation (SQUAREM, Varadhan and Roland 2008, scheme S3) of the
    EM map from three consecutive iterates, one step length per run.

    The parameters are ``(B, log s2, pi)`` of the active components; with
    ``r = theta1 - theta0`` and ``v = theta2 - 2 theta1 + theta0`` the step is
    ``theta0 - 2 a r + a^2 v`` with ``a = -|r| / |v|`` clipped to ``[-step_max, -1]``
    (``a = -1`` gives ``theta2``). Returns the extrapolated parameters, whether each
    run's extrapolation is usable (same active components in all three iterates, finite,
    positive weights) and ``|a|``.
    """
    B0, s20, pi0, act0 = theta0
    B1, s21, pi1, act1 = theta1
    B2, s22, pi2, act2 = theta2
    same = (act0 == act1).all(axis=1) & (act1 == act2).all(axis=1)
    act = act2
    w = act[:, :, None]
    l0, l1, l2 = np.log(s20), np.log(s21), np.log(s22)
    rB, vB = B1 - B0, B2 - 2.0 * B1 + B0
    rl, vl = l1 - l0, l2 - 2.0 * l1 + l0
    rp, vp = pi1 - pi0, pi2 - 2.0 * pi1 + pi0
    r2 = ((rB * rB) * w).sum(axis=(1, 2)) + ((rl * rl + rp * rp) * act).sum(axis=1)
    v2 = ((vB * vB) * w).sum(axis=(1, 2)) + ((vl * vl + vp * vp) * act).sum(axis=1)
    step = np.sqrt(r2 / v2)
    step = np.where(np.isfinite(step), np.clip(step, 1.0, step_max), 1.0)
    a = -step
    a1, a2 = (-2.0 * a)[:, None], (a * a)[:, None]
    B = B0 + a1[:, :, None] * rB + a2[:, :, None] * vB
    s2 = np.where(act, np.exp(l0 + a1 * rl + a2 * vl), 1.0)
    pi = np.where(act, pi0 + a1 * rp + a2 * vp, 0.0)
    ok = (
        same
        & np.isfinite(B).all(axis=(1, 2))
        & np.isfinite(s2).all(axis=1)
        & ((pi > 0) | ~act).all(axis=1)
    )
    return (B, s2, pi, act), ok, step


def _take(theta, idx):
    return tuple(t[idx] for t in theta)


def _compaction(done):
    """The runs that stay in the batch when the runs ``done`` leave it, in their new
    order, and the slots that change run: the first ``len(order)`` slots keep their
    runs, except that each slot of a run that leaves (``holes``) takes one of the
    staying runs from the slots beyond. Only the runs that move are copied
    (:func:`_compact`); the batch's order changes, which no run's arithmetic depends on
    (every product and reduction is one run's own). Returns ``(order, holes)``."""
    stay = np.flatnonzero(~done)
    keep = len(stay)
    holes = np.flatnonzero(done[:keep])
    if len(holes):
        order = np.arange(keep)
        order[holes] = stay[stay >= keep]
        return order, holes
    return stay, holes


def _compact(A, order, holes):
    """``A[order]`` for :func:`_compaction`'s ``(order, holes)``, in place: the moved
    runs are copied into the slots of runs that left, and the first ``len(order)``
    slots are returned as a view (``A`` is the loop's own buffer)."""
    if len(holes):
        A[holes] = A[order[holes]]
    return A[: len(order)]


def _em_loop(W, ZY, R, max_iter, var_floor, tri, accelerate=True, group=None, init_iter=None):
    """The iterations of :func:`_em_many` (divisions by empty components are masked).

    ``W`` holds every run's row moments ``(z z^T upper triangle, z y, y^2)`` as
    ``(m, n, q)``, ``ZY`` its design and target stacked as ``(m, d + 1, n)``, ``R`` the
    starting responsibilities ``(m, k, n)``. The weighted residual sum of squares of a
    component comes from its moments, ``sum r y^2 - 2 b^T sum r z y + b^T G b``
    (:func:`_m_step`, :func:`_e_step`).

    With ``accelerate``, every third iteration evaluates the squared extrapolation of
    the last two EM steps (:func:`_extrapolate`) instead of the plain EM iterate, and
    keeps it only where it is valid and its log-likelihood is at least the previous
    iterate's (else the plain EM iterate is evaluated): the log-likelihood still never
    decreases, and the fixed points are those of EM. An iteration is one E-step in
    either case, so ``max_iter`` bounds the same work.

    ``group`` (one int per run) and ``init_iter``: the short-run selection of
    :func:`_em_many` (after ``init_iter`` iterations, only the run of highest
    log-likelihood of every group continues).
    """
    m, K, n = R.shape
    runs = np.arange(m)  # original index of every run still in the batch
    ll_old = np.full(m, -np.inf)
    results = [None] * m
    step_max = np.full(m, SQUAREM_STEP_START)
    theta = _m_step(R, W, np.ones((m, K), dtype=bool), tri, var_floor)
    hist = []
    if init_iter is not None:
        group = np.asarray(group)
        group_best = np.full(int(group.max()) + 1, -np.inf)  # of the runs that have ended
    for n_iter in range(1, max_iter + 1):
        phase = (n_iter - 1) % 3
        if accelerate and phase == 2:
            theta2 = theta
            theta, ok, step = _extrapolate(hist[0], hist[1], theta2, step_max)
            R, ll = _e_step(theta, ZY)
            bad = ~(ok & (ll >= ll_old))
            if bad.any():
                idx = np.flatnonzero(bad)
                plain = _take(theta2, idx)
                R[idx], ll[idx] = _e_step(plain, ZY[idx])
                theta = tuple(t.copy() for t in theta)
                for t, p in zip(theta, plain):
                    t[idx] = p
            # the SQUAREM package's step control: a full step that is kept lets the
            # next one grow, a step that is refused at the bound shrinks it
            at_max = step >= step_max
            step_max = np.where(
                at_max & ~bad,
                step_max * SQUAREM_STEP_FACTOR,
                np.where(at_max & bad, np.maximum(1.0, step_max / SQUAREM_STEP_FACTOR), step_max),
            )
            hist = []
        else:
            R, ll = _e_step(theta, ZY)
            hist.append(theta)
        done = np.abs(ll - ll_old) <= REL_TOL * np.abs(ll)
        if n_iter == max_iter:
            done[:] = True
        if n_iter == init_iter:  # short-run EM: only the leader of every group goes on
            best = group_best.copy()
            np.maximum.at(best, group, ll)
            done |= ll < best[group]
        ll_old = ll
        if done.any():
            if init_iter is not None:
                np.maximum.at(group_best, group[done], ll[done])
            B, s2, pi, active = theta
            for i in np.flatnonzero(done):
                a = active[i]
                results[runs[i]] = {
                    "ll": float(ll[i]),
                    "B": B[i, a].copy(),
                    "s2": s2[i, a],
                    "pi": pi[i, a],
                    "n_iter": n_iter,
                }
            stay, holes = _compaction(done)
            if not len(stay):
                break
            runs, ll_old, step_max = runs[stay], ll_old[stay], step_max[stay]
            if init_iter is not None:
                group = group[stay]
            R, W, ZY = (_compact(A, stay, holes) for A in (R, W, ZY))
            theta = _take(theta, stay)
            hist = [_take(h, stay) for h in hist]
        theta = _m_step(R, W, theta[3], tri, var_floor)
    return results


def _order_by_weight(fit):
    order = np.argsort(-fit["pi"], kind="stable")
    return {**fit, "B": fit["B"][order], "s2": fit["s2"][order], "pi": fit["pi"][order]}


def _finish(fit, n, d):
    fit = _order_by_weight(fit)
    k_eff = len(fit["pi"])
    fit["k"] = k_eff
    fit["bic"] = -2.0 * fit["ll"] + _n_params(k_eff, d - 1) * np.log(n)
    return fit


def _starts(Z, y, ks, n_init, entropy):
    """Starting partitions of the EM runs of every k of ``ks`` (``n_init`` each).

    Run ``r`` of ``k`` uses ``numpy.random.default_rng([*entropy, k, r])``, so a fit
    depends only on its key; run 0 starts from the OLS-residual-rank partition, the
    others from uniformly random partitions.
    """
    n = Z.shape[0]
    starts, n_comp = [], []
    ranks = _residual_ranks(Z, y)
    for k in ks:
        starts.append(_residual_partition(Z, y, k, ranks))
        starts += [
            np.random.default_rng([*entropy, k, r]).integers(k, size=n) for r in range(1, n_init)
        ]
        n_comp += [k] * n_init
    return starts, n_comp


def _separation(Z, fit):
    """Smallest separation of two components of ``fit`` over the design ``Z``.

    For components ``c`` and ``c'`` it is the root mean square, over the rows, of the
    difference of their mean lines, divided by ``sqrt((s2_c + s2_c') / 2)``: Ashman's D
    of two Gaussians, evaluated row by row (two lines that cross inside the data are
    separated where they differ). Infinite for a single component.
    """
    k = len(fit["pi"])
    if k < 2:
        return np.inf
    M = Z @ fit["B"].T
    out = np.inf
    for a in range(k):
        for b in range(a + 1, k):
            gap = np.median(np.abs(M[:, a] - M[:, b]))
            out = min(out, gap / np.sqrt(0.5 * (fit["s2"][a] + fit["s2"][b])))
    return float(out)


def _fit_many(jobs, *, n_init, max_iter, var_floor, heavy_tails=False, init_iter=None):
    """Best of ``n_init`` EM runs for every k of every job, all EM runs batched.

    ``jobs`` is a list of ``(Z, y, ks, entropy)`` (``entropy``, a tuple of non-negative
    ints, seeds the runs; see :func:`_starts`). Jobs with designs of the same shape share
    one EM batch. ``init_iter``: short-run EM over the ``n_init`` runs of every k
    (:func:`_em_many`). Returns one ``{k: fit}`` per job.
    """
    out = [{} for _ in jobs]
    groups = {}
    t_fits = {}  # the Student-t single mechanisms, batched by design shape
    if heavy_tails:
        by_shape = {}
        for j, (Z, _, ks, _) in enumerate(jobs):
            if 1 in ks:
                by_shape.setdefault(Z.shape, []).append(j)
        for members in by_shape.values():
            fits = _student_t_fit_many(
                np.stack([jobs[j][0] for j in members]),
                np.stack([jobs[j][1] for j in members]),
                var_floor,
            )
            t_fits.update(zip(members, fits))
    for j, (Z, y, ks, entropy) in enumerate(jobs):
        n, d = Z.shape
        if 1 in ks:
            out[j][1] = _single_mechanism_fit(Z, y, var_floor, heavy_tails, t_fits.get(j))
        em_ks = [k for k in ks if k > 1]
        if em_ks:
            starts, n_comp = _starts(Z, y, em_ks, n_init, entropy)
            groups.setdefault(Z.shape, []).append((j, em_ks, (Z, y, starts, n_comp)))
    for members in groups.values():
        runs = _em_many([p for _, _, p in members], max_iter, var_floor, init_iter=init_iter)
        for (j, em_ks, (Z, _, _, _)), job_runs in zip(members, runs):
            n, d = Z.shape
            for i, k in enumerate(em_ks):
                best = None
                for cand in job_runs[i * n_init : (i + 1) * n_init]:
                    if best is None or cand["ll"] > best["ll"]:
                        best = cand
                out[j][k] = _finish(best, n, d)
                out[j][k]["sep"] = _separation(Z, out[j][k])
    return out


def _scale_columns(A):
    """Column means and standard deviations without overflow or underflow.

    Columns are first divided by their largest absolute value, so that squares stay in
    range for data from about 1e-300 to 1e300. Constant columns get scale 1.
    Returns the standardised columns, the means and the standard deviations.
    """
    span = np.max(np.abs(A), axis=0)
    span = np.where(span > 0, span, 1.0)
    Ab = A / span
    mean_b = Ab.mean(axis=0)
    sd_b = Ab.std(axis=0)
    const = ~(sd_b > 0)
    sd_b[const] = 1.0
    scaled = (Ab - mean_b) / sd_b
    sd = np.where(const, 1.0, sd_b * span)
    return scaled, mean_b * span, sd


def _standardise(X, y):
    """Centre and scale the regressors and the target (constant columns keep scale 1).

    Every fit runs on standardised data, so that the result is equivariant under
    per-column offsets and rescaling of X and y (the weighted least squares, the ridge
    and the variance floor then see data of unit scale whatever the caller's units).
    """
    Xs, x_mean, x_sd = _scale_columns(X)
    ys, y_mean, y_sd = _scale_columns(y[:, None])
    return Xs, ys[:, 0], (x_mean, x_sd, float(y_mean[0]), float(y_sd[0]))


def _unstandardise(fit, stats, n):
    """Map a fit on standardised data back to the caller's units.

    Coefficients and intercepts transform linearly; ``sigma`` scales with ``y``; the
    log-likelihood of the original data differs by the Jacobian ``-n log(sd_y)``.
    """
    x_mean, x_sd, y_mean, y_sd = stats
    B = fit["B"]
    coef = B[:, 1:] * (y_sd / x_sd)[None, :]
    intercept = y_mean + y_sd * B[:, 0] - coef @ x_mean
    ll = fit["ll"] - n * np.log(y_sd)
    with np.errstate(over="ignore", under="ignore"):
        s2 = fit["s2"] * np.float64(y_sd) ** 2
    out = {**fit, "B": np.hstack([intercept[:, None], coef]), "s2": s2}
    out["sigma"] = np.sqrt(fit["s2"]) * y_sd
    out["std"] = {"B": fit["B"], "s2": fit["s2"], "stats": stats}
    out["ll"] = ll
    out["bic"] = fit["bic"] - 2.0 * (ll - fit["ll"])
    return out


def _sweep(ks, fits, patience, min_separation=0.0):
    """Walk ``ks`` in increasing order over the fits so far.

    Returns ``(k, None)`` with the first k that the sweep needs and has no fit yet, or
    ``(None, best)`` once the sweep has ended (every k tried, or ``patience`` k in a row
    without a lower BIC); ties keep the smaller k. A fit whose components are separated
    by less than ``min_separation`` (:func:`_separation`) is not eligible: it counts as
    a k without a lower BIC. If no fit is eligible (only when k = 1 was not tried), the
    lowest BIC is kept.
    """
    best, stale = None, 0
    for k in ks:
        if k not in fits:
            return k, None
        eligible = fits[k].get("sep", np.inf) >= min_separation
        if eligible and (best is None or fits[k]["bic"] < best["bic"]):
            best, stale = fits[k], 0
        else:
            stale += 1
            if patience is not None and stale >= patience:
                break
    if best is None:
        return _sweep(ks, fits, patience)
    return None, best


def fit_mixture_bic_many(
    problems,
    *,
    n_init,
    max_iter,
    patience=None,
    min_separation=0.0,
    heavy_tails=False,
    known=None,
    return_fits=False,
    init_iter=None,
):
    """:func:`fit_mixture_bic` for many regressions, their EM runs batched.

    ``problems`` is a list of ``(X, y, k_range, entropy)``. The sweeps advance together:
    every round fits, for every problem, the k its sweep needs next, and the EM runs of a
    round form one batch per design shape (:func:`_em_many`). Each result is the one
    :func:`fit_mixture_bic` gives for that problem alone. Returns a list of
    ``(fit, bics)``. ``min_separation`` is the smallest separation of the components of
    an eligible fit (see :func:`_sweep`); 0 lets every fit compete. With
    ``heavy_tails``, the k = 1 candidate is the better of the Gaussian and the Student-t
    single mechanism (:func:`_single_mechanism_fit`); ``heavy_tails="flexible"`` adds
    the sinh-arcsinh heteroscedastic single mechanism (:func:`_shash_fit`).

    ``known`` (optional, one dict or None per problem) holds fits ``{k: fit}`` already
    made for that problem with the same data, entropy and EM settings, as returned with
    ``return_fits``: the sweep takes them instead of refitting those k (every k's fit
    depends only on the problem, its entropy and the settings, so the result is the
    same). With ``return_fits`` every result is ``(fit, bics, fits)``, ``fits`` the
    ``{k: fit}`` of every k fitted, on the standardised data. ``init_iter``: short-run
    EM over the ``n_init`` runs of every k (see :func:`_em_many`); None runs them all
    to convergence.
    """
    var_floor = VAR_FLOOR  # relative to var(y), which is 1 after standardising
    prep, fits, todo = [], [], []
    for X, y, k_range, entropy in problems:
        Xs, ys, stats = _standardise(X, y)
        ks = sorted(k_range)
        prep.append((with_intercept(Xs), ys, stats, ks, entropy))
        fits.append({})
        # k = 1 is closed form; the next ``patience`` values of k are always fitted, so
        # they run in the first round; further k one at a time, while the BIC improves
        todo.append(ks if patience is None else ks[: 1 + patience])
    pending = list(range(len(problems)))
    while pending:
        if known is not None:  # the k the sweep needs and already has: taken, not refitted
            for i in pending:
                given = known[i] or {}
                fits[i].update((k, given[k]) for k in todo[i] if k in given)
                todo[i] = [k for k in todo[i] if k not in given]
        run = [i for i in pending if todo[i]]
        jobs = [(prep[i][0], prep[i][1], todo[i], prep[i][4]) for i in run]
        for i, new in zip(
            run,
            _fit_many(
                jobs,
                n_init=n_init,
                max_iter=max_iter,
                var_floor=var_floor,
                heavy_tails=heavy_tails,
                init_iter=init_iter,
            )
            if jobs
            else [],
        ):
            fits[i].update(new)
        still = []
        for i in pending:
            k, _ = _sweep(prep[i][3], fits[i], patience, min_separation)
            if k is not None:
                todo[i] = [k]
                still.append(i)
        pending = still
    out = []
    for (Z, _, stats, ks, _), f in zip(prep, fits):
        n = Z.shape[0]
        _, best = _sweep(ks, f, patience, min_separation)
        bics = np.full(max(ks), np.nan)
        for k, fit in f.items():  # every k fitted is one the sweep visited
            bics[k - 1] = fit["bic"]
        res = (_unstandardise(best, stats, n), bics + 2.0 * n * np.log(stats[3]))
        out.append((*res, f) if return_fits else res)
    return out


def fit_mixture_bic(
    X,
    y,
    *,
    k_range,
    n_init,
    max_iter,
    entropy,
    patience=None,
    min_separation=0.0,
    heavy_tails=False,
):
    """Fit every k of ``k_range`` in increasing order and keep the fit of minimum BIC
    (ties: smallest k).

    With an int ``patience``, the sweep stops once ``patience`` consecutive k have not
    lowered the best BIC so far, which skips the slowest EM fits (too many components)
    wherever fewer components already decide. ``None`` tries every k.

    ``X`` holds the regressors without the intercept column (it may have no columns).
    The fits run on standardised data (:func:`_standardise`), and the returned fit is in
    the caller's units: a dict with ``B`` (intercept first), ``s2``, ``pi``, ``ll``,
    ``bic``, ``k``, ``n_iter``. Also returns the BIC of every k tried, in the caller's
    units (NaN for k not tried).
    """
    ((fit, bics),) = fit_mixture_bic_many(
        [(X, y, k_range, entropy)],
        n_init=n_init,
        max_iter=max_iter,
        patience=patience,
        min_separation=min_separation,
        heavy_tails=heavy_tails,
    )
    return fit, bics


def k_range_bic(n_samples, n_features, max_components):
    """k = 1..max_components, without the k that the rows cannot afford."""
    return range(1, max(1, _max_affordable_k(n_samples, n_features, max_components)) + 1)


def _row_loglik_parts(Z, y, B, s2, pi):
    """``log pi_c + log N(y; Z B_c, s2_c)`` as ``ref[:, None] + rel`` without overflow.

    Each row is divided by its own scale ``m = max(1, |Z_i|, |y_i|)`` before the
    residuals are squared, and the log-densities are taken relative to the component of
    smallest standardised residual. For rows far outside the fit (``|X|`` near 1e300) the
    squared residuals overflow, every component's log-density is ``-inf`` and the plain
    posterior is ``-inf - (-inf) = NaN``; here ``rel`` keeps the limit (all the mass on
    the best component) and ``ref`` is ``-inf`` only when the row's log-likelihood is
    below the float range. Returns ``(ref, rel)``: shapes ``(n,)`` and ``(n, k)``.
    """
    m = np.maximum(1.0, np.maximum(np.abs(Z).max(axis=1), np.abs(y)))
    res = (y / m)[:, None] - (Z / m[:, None]) @ B.T
    q = res**2 / s2[None, :]
    a = np.log(pi) - 0.5 * (_LOG_2PI + np.log(s2))
    rows = np.arange(len(y))
    best = np.argmin(q, axis=1)
    q_best = q[rows, best]
    with np.errstate(over="ignore", invalid="ignore"):
        m2 = m * m
        dq = np.where(q == q_best[:, None], 0.0, (q - q_best[:, None]) * m2[:, None])
        ref = a[best] - 0.5 * np.where(q_best == 0.0, 0.0, q_best * m2)
    rel = a[None, :] - a[best][:, None] - 0.5 * dq
    return ref, rel


def posterior(Z, y, B, s2, pi):
    """Posterior component probabilities, shape (n, k)."""
    _, rel = _row_loglik_parts(Z, y, B, s2, pi)
    return np.exp(rel - _logsumexp_rows(rel)[:, None])


def with_intercept(X):
    return np.hstack([np.ones((X.shape[0], 1)), X])


class MixtureOfLinearRegressions(RegressorMixin, BaseEstimator):
    """Mixture of linear regressions, fitted by EM, number of components chosen by BIC.

    Each sample belongs to one of ``k`` unobserved groups, and group ``c`` has its own
    linear mechanism ``y = intercept_[c] + X @ coef_[c] + N(0, sigma_[c] ** 2)``. It is
    the local model of :class:`CausalMixtureDiscoverer` (flexmix-style mixtures of
    regressions in Python).

    Parameters
    ----------
    n_components : "bic" or int, default="bic"
        ``"bic"`` fits k = 1..``max_components`` and keeps the fit of minimum BIC; an int
        fits exactly that many starting components (components whose weight falls below
        0.05 are still dropped, so ``n_components_`` may be smaller).
    max_components : int, default=5
        Largest k tried when ``n_components="bic"``. Values of k for which there are
        fewer than ``k * (n_features + 2)`` samples are skipped.
    min_separation : float, default=0.5
        Smallest separation of two components for a fit with ``k > 1`` to be selected
        when ``n_components="bic"``: the median, over the training rows, of the gap
        between the two components' regression lines, divided by their pooled noise
        standard deviation ``sqrt((sigma_a^2 + sigma_b^2) / 2)`` (Ashman's D, row by
        row). Two components on (almost) the same line with different noise scales are
        a heavy tail, not a second mechanism. 0 lets every fit compete (the plain BIC
        choice of the paper).
    heavy_tails : bool, default=True
        Let a single line with Student-t noise (degrees of freedom chosen from 1, 2, 4,
        8, 16, 32; one parameter more) compete as the ``k = 1`` model when
        ``n_components="bic"``. A Gaussian BIC otherwise explains heavy-tailed noise by
        extra components. False: Gaussian components only, as in the paper.
    n_init : int, default=3
        EM restarts per k, each from a uniformly random partition of the rows; the run
        with the highest log-likelihood is kept.
    max_iter : int, default=200
        Iteration cap of every EM run.
    random_state : int, RandomState instance or None, default=None
        Seeds the random starting partitions.

    Attributes
    ----------
    n_components_ : int
        Number of components of the selected fit.
    coef_ : ndarray of shape (n_components, n_features)
        Slopes per component, components ordered by decreasing weight.
    intercept_ : ndarray of shape (n_components,)
        Intercepts per component.
    weights_ : ndarray of shape (n_components,)
        Mixing weights (sum to one), in decreasing order.
    sigma_ : ndarray of shape (n_components,)
        Noise standard deviations per component.
    labels_ : ndarray of shape (n_samples,)
        Posterior argmax of the component of every training sample.
    bic_ : float
        BIC of the selected fit on the training data.
    bic_scores_ : ndarray of shape (max_components,)
        BIC per number of starting components tried (NaN where not tried). With an int
        ``n_components``, only that entry is set.
    log_likelihood_ : float
        Training log-likelihood of the selected fit.
    n_iter_ : int
        EM iterations of the kept run of the selected fit (1 for the closed-form k = 1).
    noise_dof_ : float
        Degrees of freedom of the Student-t noise when the selected fit is the
        heavy-tailed single mechanism; ``inf`` for Gaussian components.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features,)
        Names of the features, when X has string column names.

    See Also
    --------
    CausalMixtureDiscoverer : Causal discovery whose local score is this model's BIC.
    sklearn.mixture.GaussianMixture : Mixture of Gaussians on the joint, without a
        regression structure.

    Notes
    -----
    EM as in flexmix: a random hard partition starts each run; the M-step is a weighted
    least-squares fit per component, ``sigma_c^2`` is the weighted residual variance
    (floored at ``1e-6 var(y)``), and components whose weight falls below 0.05 are dropped
    and the weights renormalised; iterations stop when the log-likelihood changes by
    less than ``1e-6`` relative. k = 1 is the closed-form OLS fit with
    ``sigma^2 = RSS / n``. The BIC is ``-2 loglik + df log n`` with
    ``df = k (p + 2) + (k - 1)``. Departures from flexmix: ``n_init`` seeded restarts instead
    of a single random start, the first of which is a partition of the rows into k equal
    blocks by the rank of their OLS residual (uniformly random partitions often start next
    to the symmetric saddle point, where the log-likelihood changes so slowly that the
    tolerance stops EM before the components separate), and the weighted least squares
    are solved through the normal equations with a negligible relative ridge (1e-10), not a
    QR decomposition.

    Units: every fit runs on internally centred and scaled X and y and is mapped back,
    so the fitted model is equivariant under per-column offsets and rescaling of X and
    of y (tested from 1e-6 to 1e6 and offsets up to 1e6); the BIC then moves by the
    Jacobian ``2 n log(scale_y)``.

    Row order: the random starting partitions assign a component to each row in turn, so
    permuting the training rows changes the starts (as a different ``random_state``
    does). When EM has several local optima the fit can then differ; with a fixed
    ``random_state`` and fixed row order it is bit-identical.

    Heavy tails (departures from the paper, both on by default): with
    ``n_components="bic"`` the k = 1 candidate is the better by BIC of the Gaussian OLS
    fit and a Student-t regression (IRLS, 25 iterations per degrees of freedom), and a
    fit with ``k > 1`` is only eligible when every pair of its components is separated
    by at least ``min_separation``. A Gaussian BIC otherwise selects extra components
    for any heavy-tailed or skewed noise (a Gaussian scale mixture fits the tails
    better), so every such node would look mixed. Skewed noise (log-normal) is not
    covered: a mixture of lines shifted against each other is also what a mean-shift
    intervention produces; transform positive data with ``numpy.log`` first.

    References
    ----------
    .. [1] S. Mameche, J. Kalofolias, J. Vreeken. "Causal Mixture Models:
       Characterization and Discovery". NeurIPS 2025.
    .. [2] B. Grün, F. Leisch. "FlexMix Version 2: Finite Mixtures with Concomitant
       Variables and Varying and Constant Parameters". Journal of Statistical Software
       28(4), 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.causal import MixtureOfLinearRegressions
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(300, 1))
    >>> z = rng.random(300) < 0.5
    >>> y = np.where(z, 2 * x[:, 0] + 5, -2 * x[:, 0]) + 0.3 * rng.normal(size=300)
    >>> mix = MixtureOfLinearRegressions(random_state=0).fit(x, y)
    >>> mix.n_components_
    2
    >>> np.round(np.sort(mix.coef_[:, 0]), 1)
    array([-2.,  2.])
    """

    _parameter_constraints = {
        "n_components": [StrOptions({"bic"}), Interval(numbers.Integral, 1, None, closed="left")],
        "max_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "min_separation": [Interval(numbers.Real, 0, None, closed="left")],
        "heavy_tails": ["boolean"],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_components="bic",
        max_components=5,
        min_separation=MIN_SEPARATION,
        heavy_tails=True,
        n_init=3,
        max_iter=200,
        random_state=None,
    ):
        self.n_components = n_components
        self.max_components = max_components
        self.min_separation = min_separation
        self.heavy_tails = heavy_tails
        self.n_init = n_init
        self.max_iter = max_iter
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the mixture by EM (for every k when ``n_components="bic"``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Regressors.
        y : array-like of shape (n_samples,)
            Target.

        Returns
        -------
        self : MixtureOfLinearRegressions
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        n, p = X.shape
        if np.ptp(y) == 0:
            raise ValueError("y is constant: a mixture of regressions needs a varying target.")
        (seed,) = spawn_seeds(self.random_state, 1)
        entropy = (seed,)
        if self.n_components == "bic":
            if n < p + 2:
                raise ValueError(
                    f"A mixture of linear regressions with {p} features needs at least "
                    f"{p + 2} samples (n_features + 2), got {n}."
                )
            k_range = k_range_bic(n, p, self.max_components)
            min_separation, heavy_tails = self.min_separation, self.heavy_tails
        else:
            k = int(self.n_components)
            need = k * (p + 2)
            if n < need:
                raise ValueError(
                    f"n_components={k} with {p} features needs at least {need} samples "
                    f"(n_components * (n_features + 2)), got {n}."
                )
            k_range = [k]
            min_separation, heavy_tails = 0.0, False
        fit, bics = fit_mixture_bic(
            X,
            y,
            k_range=k_range,
            n_init=self.n_init,
            max_iter=self.max_iter,
            entropy=entropy,
            min_separation=min_separation,
            heavy_tails=heavy_tails,
        )
        if len(bics) < self.max_components:
            bics = np.concatenate([bics, np.full(self.max_components - len(bics), np.nan)])
        std = fit["std"]
        if not (np.all(np.isfinite(fit["B"])) and np.all(np.isfinite(fit["sigma"]))):
            raise ValueError(
                "The fitted coefficients or noise scales overflow float64 in the units of "
                "X and y; rescale X or y."
            )
        if not np.all(fit["sigma"] > 0):
            raise ValueError(
                "The noise scale of y underflows float64 (y varies by less than about "
                "1e-300); rescale y."
            )
        self._std_fit = std
        self.n_components_ = int(fit["k"])
        self.intercept_ = fit["B"][:, 0].copy()
        self.coef_ = fit["B"][:, 1:].copy()
        self.weights_ = fit["pi"].copy()
        self.sigma_ = fit["sigma"]
        self.bic_ = float(fit["bic"])
        self.bic_scores_ = bics
        self.log_likelihood_ = float(fit["ll"])
        self.n_iter_ = int(fit["n_iter"])
        self.noise_dof_ = float(fit.get("nu", np.inf))
        Zs, ys, _ = self._standardised(X, y)
        self.labels_ = np.argmax(posterior(Zs, ys, std["B"], std["s2"], self.weights_), axis=1)
        return self

    def _standardised(self, X, y):
        """X and y in the units of the internal fit, and log(sd_y) (the Jacobian)."""
        x_mean, x_sd, y_mean, y_sd = self._std_fit["stats"]
        Zs = with_intercept((X - x_mean) / x_sd)
        return Zs, (y - y_mean) / y_sd, np.log(y_sd)

    def predict(self, X):
        """Mixture mean ``sum_c weights_[c] * (intercept_[c] + X @ coef_[c])``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Regressors.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted mean.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return (self.intercept_ + X @ self.coef_.T) @ self.weights_

    def _check_xy(self, X, y):
        X, y = validate_data(self, X, y, reset=False, y_numeric=True, dtype=np.float64)
        return self._standardised(X, y)

    def predict_component_proba(self, X, y):
        """Posterior probabilities of the mixture components given X and y.

        The component of a sample is identified by its target as well as its regressors,
        so this takes ``y``; it is not a classifier's ``predict_proba`` (the components do
        not depend on X alone in this model: without ``y``, the probabilities are
        ``weights_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Regressors.
        y : array-like of shape (n_samples,)
            Target.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_components)
            Responsibilities; rows sum to one, columns ordered as ``weights_``.
        """
        check_is_fitted(self)
        Zs, ys, _ = self._check_xy(X, y)
        return posterior(Zs, ys, self._std_fit["B"], self._std_fit["s2"], self.weights_)

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 of ``predict(X)`` (the mixture mean).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Regressors.
        y : array-like of shape (n_samples,)
            Target.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            R^2 of the mixture mean; see :meth:`bic` for a likelihood-based criterion.
        """
        from sklearn.metrics import r2_score

        check_is_fitted(self)
        X, y = validate_data(self, X, y, reset=False, y_numeric=True, dtype=np.float64)
        # R^2 is invariant under an affine map of y and the prediction: compute it in the
        # fit's units, where squares neither overflow nor underflow
        _, _, y_mean, y_sd = self._std_fit["stats"]
        y_pred = self.predict(X)
        return float(
            r2_score((y - y_mean) / y_sd, (y_pred - y_mean) / y_sd, sample_weight=sample_weight)
        )

    def bic(self, X, y):
        """Bayesian information criterion of the fitted model on (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Regressors.
        y : array-like of shape (n_samples,)
            Target.

        Returns
        -------
        bic : float
            ``-2 loglik + df log n`` with ``df = k (p + 2) + (k - 1)``; lower is better.
        """
        check_is_fitted(self)
        Zs, ys, log_sd = self._check_xy(X, y)
        std = self._std_fit
        df = _n_params(self.n_components_, self.n_features_in_)
        if np.isfinite(self.noise_dof_):  # the Student-t single mechanism
            nu, s2 = self.noise_dof_, float(std["s2"][0])
            r2 = (ys - Zs @ std["B"][0]) ** 2
            ll = len(ys) * (
                gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi * s2)
            ) - 0.5 * (nu + 1) * np.log1p(r2 / (nu * s2)).sum()
            df += 1
        else:
            ref, rel = _row_loglik_parts(Zs, ys, std["B"], std["s2"], self.weights_)
            ll = float(np.sum(ref + _logsumexp_rows(rel)))
        ll = float(ll) - len(ys) * log_sd
        if ll == -np.inf:
            warnings.warn(
                "The log-likelihood of (X, y) under the fitted mixture is below the float "
                "range (the samples lie far outside the fit, for example |X| near 1e300 "
                "after a fit in other units), so bic is +inf.",
                RuntimeWarning,
                stacklevel=2,
            )
        return -2.0 * ll + df * np.log(len(ys))
