"""Model layout, nominal hinge-loss training and the interval pass of MIBP-Cert.

Everything here is plain float64 numpy. The nominal run and the interval pass share one
subgradient convention: the hinge slope is active iff the margin is < 1 and the ReLU
derivative is 1 iff the pre-activation is > 0.
"""

import numpy as np

# outward padding of interval results, covering floating-point rounding of the sums
_IVL_PAD = 1e-10


def param_shapes(model, n_features, n_hidden, n_outputs):
    """Return ``[(name, shape), ...]`` in the flat layout of ``params_``."""
    if model == "linear":
        return [("W", (n_outputs, n_features)), ("b", (n_outputs,))]
    return [
        ("W1", (n_hidden, n_features)),
        ("b1", (n_hidden,)),
        ("W2", (n_outputs, n_hidden)),
        ("b2", (n_outputs,)),
    ]


def unpack(theta, shapes):
    """Split a flat vector (or the last axis of an array) into named views."""
    out, start = {}, 0
    for name, shape in shapes:
        size = int(np.prod(shape))
        out[name] = theta[..., start : start + size].reshape(theta.shape[:-1] + shape)
        start += size
    return out


def n_params(shapes):
    return int(sum(np.prod(s) for _, s in shapes))


def init_params(model, shapes, seed):
    """Initial parameters from ``numpy.random.default_rng(seed)`` and the shapes only."""
    rng = np.random.default_rng(seed)
    parts = []
    if model == "linear":
        (_, w_shape), (_, b_shape) = shapes
        parts = [rng.normal(0.0, 0.1, size=w_shape).ravel(), np.zeros(b_shape)]
    else:
        for name, shape in shapes:
            fan_in = shapes[0][1][1] if name in ("W1", "b1") else shapes[2][1][1]
            bound = 1.0 / np.sqrt(fan_in)
            parts.append(rng.uniform(-bound, bound, size=shape).ravel())
    return np.concatenate(parts).astype(np.float64)


def forward(theta, X, model, shapes):
    """Output scores ``z`` of shape (n_samples, n_outputs) and, for the mlp, the hidden state."""
    p = unpack(theta, shapes)
    if model == "linear":
        return X @ p["W"].T + p["b"], None
    h = X @ p["W1"].T + p["b1"]
    r = np.maximum(h, 0.0)
    return r @ p["W2"].T + p["b2"], h


def hinge_gradient(theta, X, Y, model, shapes):
    """Full-batch (sub)gradient of ``(1/n) sum_i sum_o max(0, 1 - Y[i,o] z_o(x_i))``."""
    n = X.shape[0]
    p = unpack(theta, shapes)
    z, h = forward(theta, X, model, shapes)
    beta = (Y * z < 1.0).astype(np.float64)
    delta2 = -Y * beta / n  # dL/dz, (n, O)
    if model == "linear":
        return np.concatenate([(delta2.T @ X).ravel(), delta2.sum(axis=0)])
    d = (h > 0.0).astype(np.float64)
    r = h * d
    delta1 = (delta2 @ p["W2"]) * d  # (n, H)
    return np.concatenate(
        [
            (delta1.T @ X).ravel(),
            delta1.sum(axis=0),
            (delta2.T @ r).ravel(),
            delta2.sum(axis=0),
        ]
    )


# ------------------------------------------------------------------------------------------
# interval arithmetic
# ------------------------------------------------------------------------------------------
def imul(al, au, bl, bu):
    """Elementwise interval product ``[al, au] * [bl, bu]`` (broadcasting)."""
    c = np.stack(np.broadcast_arrays(al * bl, al * bu, au * bl, au * bu))
    return c.min(axis=0), c.max(axis=0)


def imatvec(Xl, Xu, Wl, Wu):
    """Interval of ``X @ W.T`` for X (n, F) and W (O, F) boxes: (n, O) lower and upper."""
    lo, hi = imul(Xl[:, None, :], Xu[:, None, :], Wl[None, :, :], Wu[None, :, :])
    return lo.sum(axis=-1), hi.sum(axis=-1)


def hinge_slope(ml, mu):
    """Interval of the hinge indicator beta (1 iff margin < 1)."""
    lo = (mu < 1.0).astype(np.float64)
    hi = (ml < 1.0).astype(np.float64)
    return lo, hi


def relu_slope(hl, hu):
    """Interval of the ReLU derivative d (1 iff pre-activation > 0)."""
    return (hl > 0.0).astype(np.float64), (hu > 0.0).astype(np.float64)


def margin_interval(zl, zu, Y, flip):
    """Interval of ``y' z`` where ``y' = Y`` or, when ``flip``, ``-Y`` (union of both if None)."""
    pos_l, pos_u = np.where(Y > 0, zl, -zu), np.where(Y > 0, zu, -zl)
    if flip is False:
        return pos_l, pos_u
    neg_l, neg_u = -pos_u, -pos_l
    if flip is True:
        return neg_l, neg_u
    return np.minimum(pos_l, neg_l), np.maximum(pos_u, neg_u)


def row_gradient_intervals(tl, tu, Xl, Xu, Y, flip, model, shapes, n_total):
    """Per-row interval of the contribution of each row to the gradient.

    Parameters
    ----------
    tl, tu : ndarray (P,)
        The current parameter box.
    Xl, Xu : ndarray (n, F)
        The box of each row's features.
    Y : ndarray (n, O)
        Targets in {-1, +1} (before any flip).
    flip : bool
        Whether the labels of these rows are flipped.
    n_total : int
        The number of training rows (the 1/n of the mean).

    Returns
    -------
    lo, hi : ndarray (n, P)
    """
    pl, pu = unpack(tl, shapes), unpack(tu, shapes)
    Ys = -Y if flip else Y
    n, F = Xl.shape
    if model == "linear":
        zl, zu = imatvec(Xl, Xu, pl["W"], pu["W"])
        zl, zu = zl + pl["b"], zu + pu["b"]
        ml, mu = margin_interval(zl, zu, Ys, False)
        bl, bu = hinge_slope(ml, mu)
        # delta2 = -y' beta / n
        d2l, d2u = imul(-Ys / n_total, -Ys / n_total, bl, bu)
        gWl, gWu = imul(d2l[:, :, None], d2u[:, :, None], Xl[:, None, :], Xu[:, None, :])
        lo = np.concatenate([gWl.reshape(n, -1), d2l], axis=1)
        hi = np.concatenate([gWu.reshape(n, -1), d2u], axis=1)
        return lo, hi
    hl, hu = imatvec(Xl, Xu, pl["W1"], pu["W1"])
    hl, hu = hl + pl["b1"], hu + pu["b1"]
    dl, du = relu_slope(hl, hu)
    rl, ru = np.maximum(hl, 0.0), np.maximum(hu, 0.0)
    zl, zu = imatvec(rl, ru, pl["W2"], pu["W2"])
    zl, zu = zl + pl["b2"], zu + pu["b2"]
    ml, mu = margin_interval(zl, zu, Ys, False)
    bl, bu = hinge_slope(ml, mu)
    d2l, d2u = imul(-Ys / n_total, -Ys / n_total, bl, bu)  # (n, O)
    # delta1_j = d_j * sum_o W2[o, j] delta2_o
    tl_, tu_ = imul(d2l[:, :, None], d2u[:, :, None], pl["W2"][None], pu["W2"][None])
    sl, su = tl_.sum(axis=1), tu_.sum(axis=1)  # (n, H)
    d1l, d1u = imul(dl, du, sl, su)
    gW1l, gW1u = imul(d1l[:, :, None], d1u[:, :, None], Xl[:, None, :], Xu[:, None, :])
    gW2l, gW2u = imul(d2l[:, :, None], d2u[:, :, None], rl[:, None, :], ru[:, None, :])
    lo = np.concatenate([gW1l.reshape(n, -1), d1l, gW2l.reshape(n, -1), d2l], axis=1)
    hi = np.concatenate([gW1u.reshape(n, -1), d1u, gW2u.reshape(n, -1), d2u], axis=1)
    return lo, hi


def _top_sum(inc, budget):
    """Sum of the ``budget`` largest entries of each column of ``inc`` (n, P), inc >= 0."""
    if budget <= 0 or inc.shape[0] == 0:
        return np.zeros(inc.shape[1])
    budget = min(int(budget), inc.shape[0])
    part = -np.partition(-inc, budget - 1, axis=0)[:budget]
    return part.sum(axis=0)


def gradient_interval(tl, tu, X, Y, threat, model, shapes):
    """Interval of the full-batch gradient over the box and the threat set.

    ``threat`` is a dict with ``epsilon`` (float), ``moving`` (bool mask of the rows whose
    features may move), ``budget`` (None, or the number of rows of ``moving`` that may
    move) and ``flips`` (number of labels that may flip).

    Returns
    -------
    gl, gu : ndarray (P,)
    """
    eps, moving = threat["epsilon"], threat["moving"]
    budget, flips = threat["budget"], threat["flips"]
    n = X.shape[0]
    args = (model, shapes, n)
    fixed_l, fixed_u = row_gradient_intervals(tl, tu, X, X, Y, False, *args)
    if eps > 0 and moving.any():
        Xl, Xu = X - eps * moving[:, None], X + eps * moving[:, None]
        pert_l, pert_u = row_gradient_intervals(tl, tu, Xl, Xu, Y, False, *args)
    else:
        Xl = Xu = X
        pert_l, pert_u = fixed_l, fixed_u
    if budget is None:
        # every row of `moving` may move: the base contribution already holds the perturbation
        base_l, base_u = pert_l, pert_u
        var_l, var_u = base_l, base_u
        extra = 0
    else:
        base_l, base_u = fixed_l, fixed_u
        var_l, var_u = np.minimum(fixed_l, pert_l), np.maximum(fixed_u, pert_u)
        extra = budget
    if flips > 0:
        fl_l, fl_u = row_gradient_intervals(tl, tu, Xl, Xu, Y, True, *args)
        var_l, var_u = np.minimum(var_l, fl_l), np.maximum(var_u, fl_u)
        if budget is not None:
            # the unperturbed row with a flipped label is a variant too
            ff_l, ff_u = row_gradient_intervals(tl, tu, X, X, Y, True, *args)
            var_l, var_u = np.minimum(var_l, ff_l), np.maximum(var_u, ff_u)
        extra += flips
    gl = base_l.sum(axis=0) - _top_sum(base_l - var_l, extra)
    gu = base_u.sum(axis=0) + _top_sum(var_u - base_u, extra)
    return gl, gu


def pad(lo, hi, rel):
    """Widen ``[lo, hi]`` outward by ``rel * (1 + |value|)``."""
    return lo - rel * (1.0 + np.abs(lo)), hi + rel * (1.0 + np.abs(hi))


def interval_step(tl, tu, X, Y, threat, lr, model, shapes):
    """The interval step box ``[tl - lr gu, tu - lr gl]`` (padded for rounding)."""
    gl, gu = gradient_interval(tl, tu, X, Y, threat, model, shapes)
    return pad(tl - lr * gu, tu - lr * gl, _IVL_PAD)


def interval_scores(tl, tu, X, model, shapes):
    """Interval of the output scores over the box, for fixed inputs X: (n, O) lower/upper."""
    pl, pu = unpack(tl, shapes), unpack(tu, shapes)
    if model == "linear":
        zl, zu = imatvec(X, X, pl["W"], pu["W"])
        return zl + pl["b"], zu + pu["b"]
    hl, hu = imatvec(X, X, pl["W1"], pu["W1"])
    rl, ru = np.maximum(hl + pl["b1"], 0.0), np.maximum(hu + pu["b1"], 0.0)
    zl, zu = imatvec(rl, ru, pl["W2"], pu["W2"])
    return zl + pl["b2"], zu + pu["b2"]


def interval_certify(tl, tu, X, pred, model, shapes):
    """Sound interval check of section 3.9; ``pred`` is the nominal output index (or sign).

    For one output, ``pred`` holds s in {-1, +1} and a row is certified iff
    ``min s z > 0``. For K outputs, ``pred`` holds the nominal argmax c and the check
    bounds ``z_c - z_j`` with the difference of the last layer's rows.

    For the linear model the result is exact (the box is a product and x is fixed).
    """
    pl, pu = unpack(tl, shapes), unpack(tu, shapes)
    last_w, last_b = ("W", "b") if model == "linear" else ("W2", "b2")
    if model == "linear":
        feat_l = feat_u = X
    else:
        hl, hu = imatvec(X, X, pl["W1"], pu["W1"])
        feat_l, feat_u = np.maximum(hl + pl["b1"], 0.0), np.maximum(hu + pu["b1"], 0.0)
    Wl, Wu, bl, bu = pl[last_w], pu[last_w], pl[last_b], pu[last_b]
    n = X.shape[0]
    if Wl.shape[0] == 1:
        s = pred.astype(np.float64)[:, None]
        # s * w in [min(s wl, s wu), max(...)]
        swl = np.where(s > 0, Wl[0][None, :], -Wu[0][None, :])
        swu = np.where(s > 0, Wu[0][None, :], -Wl[0][None, :])
        lo, _ = imul(swl, swu, feat_l, feat_u)
        sbl = np.where(s[:, 0] > 0, bl[0], -bu[0])
        return lo.sum(axis=1) + sbl > 0.0
    ok = np.ones(n, dtype=bool)
    for j in range(Wl.shape[0]):
        rows = pred != j
        if not rows.any():
            continue
        c = pred[rows]
        dwl = Wl[c] - Wu[j][None, :]
        dwu = Wu[c] - Wl[j][None, :]
        lo, _ = imul(dwl, dwu, feat_l[rows], feat_u[rows])
        val = lo.sum(axis=1) + bl[c] - bu[j]
        ok[rows] &= val > 0.0
    return ok
