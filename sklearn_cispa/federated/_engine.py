"""The numerical core of local SGD and minibatch SGD, shared by the estimators.

Machine states are stacked in one ``(M, p, k)`` array (``p`` parameters per output,
``k`` outputs: 1 for least squares and binary logistic regression, the number of classes
for the multinomial loss). The same loop runs in one process (``M`` machines, averaging
is a sum over the first axis) and on a ``torch.distributed`` group (one machine per
process, averaging is an ``all_reduce``): only the reducer differs.
"""

import math
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp, softmax
from sklearn.exceptions import ConvergenceWarning

# upper bound of the second derivative of each loss in its logit, used by step_size="auto"
CURVATURE = {"squared": 1.0, "logistic": 0.25, "multinomial": 0.5}


def machine_stream(seed, machine):
    """The random stream of one machine: child ``machine`` of ``SeedSequence(seed)``.

    It depends only on the seed and the machine's index, not on the number of machines
    or on the process layout, so a machine draws the same numbers in one process and as
    rank ``machine`` of a process group.
    """
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(machine),)))


class SimulateReducer:
    """Averaging over the machines held by this process (all of them)."""

    def sum(self, values):
        return np.asarray(values).sum(axis=0)

    def max(self, values):
        return np.asarray(values).max(axis=0)


class TorchReducer:
    """Averaging across the processes of an initialised ``torch.distributed`` group."""

    def __init__(self, group=None):
        import torch
        import torch.distributed as dist

        self._torch, self._dist, self._group = torch, dist, group

    def _reduce(self, values, op):
        local = np.asarray(values, dtype=np.float64)
        local = local.max(axis=0) if op == "max" else local.sum(axis=0)
        tensor = self._torch.from_numpy(np.array(local, dtype=np.float64, copy=True))
        red = self._dist.ReduceOp.MAX if op == "max" else self._dist.ReduceOp.SUM
        self._dist.all_reduce(tensor, op=red, group=self._group)
        return tensor.numpy()

    def sum(self, values):
        return self._reduce(values, "sum")

    def max(self, values):
        return self._reduce(values, "max")


class Machines:
    """The shards held by this process, in padded arrays, and their losses and gradients.

    Parameters
    ----------
    Zs, Ys : lists of arrays
        Per machine: the design (with the column of ones last when an intercept is
        fitted), shape ``(n_m, p)``, and the targets, shape ``(n_m, k)`` (one-hot for the
        multinomial loss, 0/1 for the logistic loss).
    weights : array of shape (M,)
        The averaging weight of each machine held here (their sum over all processes
        is 1).
    loss : {"squared", "logistic", "multinomial"}
    alpha : float
        Ridge penalty ``alpha / 2 * ||w||^2``.
    penalized : array of shape (p,)
        1 for penalized parameters, 0 for the intercept.
    """

    def __init__(self, Zs, Ys, weights, loss, alpha, penalized, row_weights=None):
        self.loss_name = loss
        self.M = len(Zs)
        self.n = np.array([len(Z) for Z in Zs])
        self.p, self.k = Zs[0].shape[1], Ys[0].shape[1]
        n_max = int(self.n.max())
        self.Z = np.zeros((self.M, n_max, self.p))
        self.Y = np.zeros((self.M, n_max, self.k))
        self.mask = np.zeros((self.M, n_max))
        # cumulative row weights of each machine, for weighted minibatch draws
        self.cum = None
        for m, (Z, Y) in enumerate(zip(Zs, Ys)):
            self.Z[m, : len(Z)] = Z
            self.Y[m, : len(Y)] = Y
            if row_weights is None:
                self.mask[m, : len(Z)] = 1.0 / len(Z)
            else:
                self.mask[m, : len(Z)] = row_weights[m] / row_weights[m].sum()
        if row_weights is not None:
            self.cum = [np.cumsum(s) for s in row_weights]
        self.weights = np.asarray(weights, dtype=np.float64)
        self.alpha = float(alpha)
        self.penalized = np.asarray(penalized, dtype=np.float64)[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            # A_m = Z_m^T Z_m / n_m (the Hessian of least squares), c_m = Z_m^T Y_m / n_m
            self.A = np.einsum("mnp,mnq->mpq", self.Z * self.mask[:, :, None], self.Z)
            self.c = np.einsum("mnp,mnk->mpk", self.Z * self.mask[:, :, None], self.Y)
            self.yy = 0.5 * np.einsum("mnk,mnk,mn->m", self.Y, self.Y, self.mask)
        if not (np.all(np.isfinite(self.A)) and np.all(np.isfinite(self.c))):
            raise ValueError(
                "The features (or targets) are too large: X^T X overflows in float64. "
                "Rescale X, for example with a StandardScaler in a Pipeline."
            )
        # the machines' weighted sums (this process's share of the objective F)
        self.A_bar = np.tensordot(self.weights, self.A, axes=1)
        self.c_bar = np.tensordot(self.weights, self.c, axes=1)
        self.yy_bar = float(self.weights @ self.yy)
        self.weight_sum = float(self.weights.sum())

    def smoothness(self):
        """max_m of this process's curvature bound ``c * lambda_max(A_m) + alpha``."""
        lam = np.linalg.eigvalsh(self.A)[:, -1]
        return CURVATURE[self.loss_name] * lam + self.alpha

    def _link(self, logits):
        if self.loss_name == "squared":
            return logits
        if self.loss_name == "logistic":
            return expit(logits)
        return softmax(logits, axis=-1)

    def grad(self, theta, rngs, batch_size, sigma):
        """Stochastic gradients of every machine at its own ``theta[m]``, shape (M, p, k).

        Each machine draws, from its own stream, first the ``batch_size`` row positions
        (with replacement; none for the full batch), then the Gaussian noise (only when
        ``sigma > 0``). "local" and "minibatch" call this the same way, so with one local
        step they consume the streams identically.
        """
        if batch_size is None:
            if self.loss_name == "squared":
                g = self.A @ theta - self.c
            else:
                resid = (self._link(self.Z @ theta) - self.Y) * self.mask[:, :, None]
                g = np.swapaxes(self.Z, 1, 2) @ resid
        else:
            if self.cum is None:
                idx = np.stack(
                    [rng.integers(0, n, size=batch_size) for rng, n in zip(rngs, self.n)]
                )
            else:  # rows drawn with probability proportional to their sample weight
                idx = np.stack(
                    [
                        np.minimum(
                            np.searchsorted(c, rng.random(batch_size) * c[-1], side="right"),
                            len(c) - 1,
                        )
                        for rng, c in zip(rngs, self.cum)
                    ]
                )
            rows = np.arange(self.M)[:, None]
            Zb, Yb = self.Z[rows, idx], self.Y[rows, idx]
            resid = (self._link(Zb @ theta) - Yb) / batch_size
            g = np.swapaxes(Zb, 1, 2) @ resid
        if self.alpha:
            g = g + self.alpha * self.penalized * theta
        if sigma > 0:
            g = g + sigma * np.stack([rng.standard_normal((self.p, self.k)) for rng in rngs])
        return g

    def weighted_loss(self, theta, weights=None):
        """``sum_m weight_m F_m(theta)`` over the machines held here (``weights`` defaults
        to the averaging weights: this process's share of ``F``)."""
        if self.loss_name == "squared" and weights is None:
            t = theta.ravel()
            f = 0.5 * float(t @ (self.A_bar @ theta).ravel()) - float(t @ self.c_bar.ravel())
            f += self.yy_bar
            if self.alpha:
                f += 0.5 * self.alpha * self.weight_sum * float((self.penalized * theta**2).sum())
            return f
        w = self.weights if weights is None else weights
        return float(w @ self.losses(theta))

    def losses(self, theta):
        """``F_m(theta)`` for every machine held here at the shared ``theta`` (p, k)."""
        if self.loss_name == "squared":
            At = self.A @ theta
            f = 0.5 * np.einsum("pk,mpk->m", theta, At) - np.einsum("pk,mpk->m", theta, self.c)
            f = f + self.yy
        else:
            logits = self.Z @ theta
            if self.loss_name == "logistic":
                per_row = -(self.Y * log_expit(logits) + (1 - self.Y) * log_expit(-logits))
                per_row = per_row[:, :, 0]
            else:
                per_row = logsumexp(logits, axis=-1) - np.sum(self.Y * logits, axis=-1)
            f = np.sum(per_row * self.mask, axis=1)
        if self.alpha:
            f = f + 0.5 * self.alpha * float(np.sum(self.penalized * theta**2))
        return f


def _local_round_map(machines, eta, K):
    """Full-batch least squares: K local steps are the affine map theta -> P theta + q."""
    p = machines.p
    step = np.eye(p)[None] - eta * (machines.A + machines.alpha * np.diagflat(machines.penalized))
    P = np.repeat(np.eye(p)[None], machines.M, axis=0)
    q = np.zeros_like(machines.c)
    for _ in range(K):
        P = step @ P
        q = step @ q + eta * machines.c
    return P, q


class ClientSampler:
    """The machines that take part in each round: ``n_chosen`` of ``n_total``, uniformly
    without replacement, from a stream shared by all processes.

    ``chosen(r)`` returns a 0/1 float array over ``held`` (the indices of the machines held
    by this process).
    """

    def __init__(self, seed, n_total, n_chosen, held):
        self.rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(1,)))
        self.n_total, self.n_chosen = int(n_total), int(n_chosen)
        self.held = np.asarray(held)

    def chosen(self):
        picked = self.rng.choice(self.n_total, size=self.n_chosen, replace=False)
        return np.isin(self.held, picked).astype(np.float64)


def _diverged(name, r, R):
    warnings.warn(
        f"{name} diverged in round {r + 1} of {R}: the averaged loss is not "
        f"finite. coef_ holds the last finite averaged iterate (after round {r}). "
        "Use step_size='auto', a smaller step_size, or standardise the features.",
        ConvergenceWarning,
        stacklevel=4,
    )


def _full_batch_gd(machines, theta, eta, R, name, verbose):
    """Deterministic full-batch minibatch SGD on least squares, in one process: gradient
    descent on ``F``, whose Hessian ``A`` (ridge included) and ``c`` are summed once. One
    matrix-vector product per round gives both the step and the next loss."""
    A = machines.A_bar + machines.alpha * machines.weight_sum * np.diagflat(machines.penalized)
    c, yy = machines.c_bar, machines.yy_bar
    loss_curve = np.full(R, np.nan)
    every = max(1, R // 10)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        At = A @ theta
        for r in range(R):
            new = theta - eta * (At - c)
            At = A @ new
            f = 0.5 * float(new.ravel() @ At.ravel()) - float(new.ravel() @ c.ravel()) + yy
            if not (math.isfinite(f) and np.isfinite(new).all()):
                _diverged(name, r, R)
                break
            theta, loss_curve[r] = new, f
            if verbose and ((r + 1) % every == 0 or r == R - 1):
                print(f"[{name}] round {r + 1}/{R}  loss {f:.6g}  consensus error 0")
    return theta, loss_curve, np.zeros(R)


def run_local_sgd(
    machines,
    theta0,
    *,
    algorithm,
    local_steps,
    rounds,
    eta,
    batch_size,
    sigma,
    rngs,
    reducer,
    sampler=None,
    verbose=0,
    name="LocalSGD",
):
    """Run R rounds of local SGD, minibatch SGD or accelerated minibatch SGD from
    ``theta0`` (p, k).

    ``algorithm``:

    - "local": every machine takes K steps from the shared model, then the models are
      averaged;
    - "minibatch": every machine evaluates K stochastic gradients at the shared model and
      one step is taken with their average;
    - "accelerated_minibatch": the same gradients, evaluated at Nesterov's extrapolated
      point ``y_r = x_r + (r - 1)/(r + 2) (x_r - x_{r-1})`` (round r = 1, 2, ...), and
      ``x_{r+1} = y_r - eta * g(y_r)``.

    With a ``sampler`` (:class:`ClientSampler`), only the chosen machines' models or
    gradients enter each round, with their averaging weights renormalised to sum to 1;
    every machine's stream still advances each round, so a machine's draws do not
    depend on which rounds it took part in.

    Returns ``theta_bar, loss_curve, consensus_error``. When the averaged loss stops being
    finite, a ``ConvergenceWarning`` is raised, the run stops, and the last finite
    averaged iterate is returned (``loss_curve`` is NaN from the diverged round on).
    """
    K, R = int(local_steps), int(rounds)
    weights = machines.weights
    theta_bar = np.array(theta0, dtype=np.float64, copy=True)
    previous = theta_bar
    loss_curve = np.full(R, np.nan)
    consensus = np.zeros(R)
    deterministic = batch_size is None and sigma == 0
    squared = machines.loss_name == "squared"
    ridge = machines.alpha * machines.penalized  # (p, 1)
    affine = None
    simulate = isinstance(reducer, SimulateReducer)
    every = max(1, R // 10)
    if algorithm == "minibatch" and deterministic and squared and sampler is None and simulate:
        return _full_batch_gd(machines, theta_bar, eta, R, name, verbose)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if algorithm == "local" and deterministic and squared:
            affine = _local_round_map(machines, eta, K)
        for r in range(R):
            if sampler is None:
                w = weights
            else:
                w = weights * sampler.chosen()
                w = w / float(reducer.sum(w))
            if algorithm == "local":
                th = np.repeat(theta_bar[None], machines.M, axis=0)
                if affine is not None:
                    th = affine[0] @ th + affine[1]
                else:
                    for _ in range(K):
                        th = th - eta * machines.grad(th, rngs, batch_size, sigma)
                new_bar = reducer.sum(w[:, None, None] * th)
                dev = np.sum((th - new_bar[None]) ** 2, axis=(1, 2))
                consensus[r] = reducer.sum(w * dev)
            else:
                point = theta_bar
                if algorithm == "accelerated_minibatch" and r > 0:
                    point = theta_bar + (r - 1) / (r + 2) * (theta_bar - previous)
                if deterministic and squared:
                    # the K full-batch gradients at one point are equal: evaluate one
                    if sampler is None:
                        g = machines.A_bar @ point - machines.c_bar
                        if machines.alpha:
                            g = g + ridge * point * machines.weight_sum
                    else:
                        g = np.tensordot(w, machines.A @ point - machines.c, axes=1)
                        if machines.alpha:
                            g = g + ridge * point * float(w.sum())
                    G = g if simulate else reducer.sum(g[None])
                else:
                    th = np.repeat(point[None], machines.M, axis=0)
                    Gm = machines.grad(th, rngs, batch_size, sigma)
                    for _ in range(K - 1):
                        Gm = Gm + machines.grad(th, rngs, batch_size, sigma)
                    G = reducer.sum(w[:, None, None] * Gm) / K
                new_bar = point - eta * G
                previous = theta_bar
            f = machines.weighted_loss(new_bar)
            if not simulate:
                f = float(reducer.sum(np.array([f])))
            if not (math.isfinite(f) and np.isfinite(new_bar).all()):
                warnings.warn(
                    f"{name} diverged in round {r + 1} of {R}: the averaged loss is not "
                    f"finite. coef_ holds the last finite averaged iterate (after round {r}). "
                    "Use step_size='auto', a smaller step_size, or standardise the features.",
                    ConvergenceWarning,
                    stacklevel=3,
                )
                consensus[r:] = np.nan
                break
            theta_bar, loss_curve[r] = new_bar, f
            if verbose and ((r + 1) % every == 0 or r == R - 1):
                print(
                    f"[{name}] round {r + 1}/{R}  loss {f:.6g}  consensus error {consensus[r]:.3g}"
                )
    return theta_bar, loss_curve, consensus


def standardising_map(Z, row_weights, fit_intercept):
    """The matrix ``T`` such that ``theta = T @ u`` is a model on standardised columns.

    ``u``'s design ``Z @ T`` has centred columns of unit variance over the rows, weighted
    by ``row_weights`` (summing to 1), when ``Z``'s last column is the intercept's column
    of ones (``fit_intercept=True``); without an intercept its columns have unit root mean
    square. Minimising in ``u`` is well conditioned for any units and offsets of the
    columns, which the normal equations or L-BFGS on raw columns are not. Constant
    columns keep their scale.
    """
    p = Z.shape[1]
    mean = row_weights @ Z
    d = p - 1 if fit_intercept else p
    T = np.eye(p)
    if fit_intercept:
        var = row_weights @ (Z - mean) ** 2
        scale = np.sqrt(np.maximum(var[:d], 0.0))
        scale[~(scale > 0)] = 1.0
        T[np.arange(d), np.arange(d)] = 1.0 / scale
        T[d, :d] = -mean[:d] / scale
    else:
        rms = np.sqrt(row_weights @ Z**2)
        rms[~(rms > 0)] = 1.0
        T[np.arange(p), np.arange(p)] = 1.0 / rms
    return T


def _reparametrisation(machines, fit_intercept):
    """:func:`standardising_map` over the machines' pooled rows, weighted as in ``F``."""
    rw = machines.weights[:, None] * machines.mask  # pooled row weights, summing to 1
    return standardising_map(machines.Z.reshape(-1, machines.p), rw.ravel(), fit_intercept)


def least_squares_minimum(Z, Y, row_weights, alpha, penalized, T):
    """The minimiser of ``sum_i row_weights_i ||z_i theta - y_i||^2 / 2 + alpha/2
    ||penalized * theta||^2``, the least-squares objective ``F``.

    Solved as a least-squares problem on the standardised design ``Z @ T`` (never through
    ``Z^T Z``, whose entries lose the columns' variation to their offsets), so it is
    accurate for any units and offsets of the columns. ``Y`` has shape (n, k).
    """
    root = np.sqrt(row_weights)[:, None]
    design, target = root * (Z @ T), root * Y
    if alpha:
        ridge = np.sqrt(alpha) * np.asarray(penalized, dtype=np.float64).ravel()[:, None] * T
        design = np.vstack([design, ridge])
        target = np.vstack([target, np.zeros((len(ridge), Y.shape[1]))])
    return T @ np.linalg.lstsq(design, target, rcond=None)[0]


def lbfgs_minimum(fun, T, theta_start, **options):
    """L-BFGS on ``fun(theta) -> (value, gradient)`` in the coordinates ``theta = T @ u``.

    Returns the minimiser ``theta``, the value there, and the largest absolute entry of
    the gradient in ``u`` (scale-free: the gradient of the standardised problem).
    """
    shape = np.shape(theta_start)
    u0 = np.linalg.solve(T, np.asarray(theta_start, dtype=np.float64)).ravel()

    def fun_u(u):
        value, grad = fun(T @ u.reshape(shape))
        return value, (T.T @ np.reshape(grad, shape)).ravel()

    res = minimize(fun_u, u0, jac=True, method="L-BFGS-B", options=options)
    grad_u = fun_u(res.x)[1]
    return T @ res.x.reshape(shape), float(res.fun), float(np.max(np.abs(grad_u)))


def _null_model(machines, theta0, fit_intercept):
    """The best model with zero feature weights (the intercept alone), or ``theta0``."""
    if not fit_intercept:
        return np.zeros_like(theta0)
    rw = machines.weights[:, None] * machines.mask
    mean_y = np.einsum("mn,mnk->k", rw, machines.Y)
    null = np.zeros_like(theta0)
    if machines.loss_name == "squared":
        null[-1] = mean_y
    elif machines.loss_name == "logistic":
        q = np.clip(mean_y, 1e-300, 1 - 1e-16)
        null[-1] = np.log(q) - np.log1p(-q)
    else:
        null[-1] = np.log(np.maximum(mean_y, 1e-300))
    return null


def relative_objective_gap(machines, theta0, theta, fit_intercept):
    """How far ``theta`` is from the minimum of the fit's objective ``F``, relatively.

    ``(F(theta) - min F) / (F(null) - min F)``, where ``null`` is the best model with
    zero feature weights (the intercept alone; zero without an intercept), so that 1
    means the features' part was not learned at all. Differences below 0.1% of the
    initial gap ``F(theta0) - min F`` count as 0. ``min F`` is exact for least squares
    (a least-squares solve on the standardised, weighted rows) and found by L-BFGS in
    standardised coordinates, started at ``theta``, for the logistic and multinomial
    losses.
    """
    w = machines.weights

    def F(t):
        return float(w @ machines.losses(t))

    def G(t):
        g = machines.grad(np.repeat(t[None], machines.M, axis=0), None, None, 0.0)
        return np.tensordot(w, g, axes=1)

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        f0, f = F(theta0), F(theta)
        T = _reparametrisation(machines, fit_intercept)
        if machines.loss_name == "squared":
            rw = (w[:, None] * machines.mask).ravel()
            best = least_squares_minimum(
                machines.Z.reshape(-1, machines.p),
                machines.Y.reshape(len(rw), -1),
                rw,
                machines.alpha,
                machines.penalized,
                T,
            )
            f_min = min(f, F(best))
        else:
            _, f_best, _ = lbfgs_minimum(lambda t: (F(t), G(t)), T, theta, maxiter=200)
            f_min = min(f, f_best) if np.isfinite(f_best) else f
        f_null = F(_null_model(machines, theta0, fit_intercept))
    gap0 = f0 - f_min
    if not (np.isfinite(gap0) and np.isfinite(f)) or gap0 <= 1e-12 * max(1.0, abs(f0)):
        return 0.0
    scale = max(f_null - f_min, 1e-3 * gap0) if np.isfinite(f_null) else gap0
    return max(0.0, (f - f_min) / scale)


def check_machine_labels(groups):
    """Refuse missing machine labels (NaN or None) in ``groups``.

    ``np.unique`` would make the missing entries one machine of their own, and the fit
    would run on a machine the user never defined.
    """
    groups = np.asarray(groups)
    if groups.dtype.kind == "f":
        missing = np.isnan(groups)
    elif groups.dtype.kind == "O":
        missing = np.array(
            [g is None or (isinstance(g, float) and g != g) for g in groups], dtype=bool
        )
    else:
        return groups
    if missing.any():
        raise ValueError(
            f"groups holds {int(missing.sum())} missing machine label(s) (NaN or None), "
            f"first at row {int(np.flatnonzero(missing)[0])}; give every row its machine."
        )
    return groups


def groups_left_upstream(max_depth=40):
    """Whether a scikit-learn caller up the stack holds ``groups`` that fit did not get.

    Without metadata routing, ``GridSearchCV.fit(X, y, groups=g)``, ``cross_validate``
    and the other model-selection tools give ``groups`` to the CV splitter only, so the
    estimator's ``fit`` is called with ``groups=None``. This looks for such a caller
    (in this process: a search that runs its fits in other processes is not seen).
    """
    import sys

    from sklearn import get_config

    if get_config().get("enable_metadata_routing", False):
        return False  # scikit-learn routes groups (or raises when they are unrequested)
    frame = sys._getframe(1)
    for _ in range(max_depth):
        frame = frame.f_back
        if frame is None:
            return False
        if not frame.f_globals.get("__name__", "").startswith("sklearn.model_selection"):
            continue
        local = frame.f_locals
        groups = local.get("groups")
        params = local.get("params")
        if groups is None and isinstance(params, dict):
            groups = params.get("groups")
        if groups is not None:
            return True
    return False
