"""Model layout, nominal hinge-loss training and the interval pass of MIBP-Cert.

Everything here is plain float64 numpy. The nominal run and the interval pass share one
subgradient convention: the hinge slope is active iff the margin is < 1 and the ReLU
derivative is 1 iff the pre-activation is > 0.
"""

import numpy as np

# outward padding of interval results, covering floating-point rounding of the sums
_IVL_PAD = 1e-10


def hidden_sizes(n_hidden):
    """The hidden widths as a tuple of ints (an int means one hidden layer)."""
    return tuple(int(h) for h in np.atleast_1d(n_hidden))


def param_shapes(model, n_features, n_hidden, n_outputs):
    """Return ``[(name, shape), ...]`` in the flat layout of ``params_``.

    For the mlp, ``n_hidden`` is an int (one hidden layer) or a sequence of widths
    ``(H1, ..., HL)``; the layout is ``[W1, b1, ..., W{L+1}, b{L+1}]`` with ``W_l`` of
    shape ``(H_l, H_{l-1})`` (``H_0 = n_features``, ``H_{L+1} = n_outputs``).
    """
    if model == "linear":
        return [("W", (n_outputs, n_features)), ("b", (n_outputs,))]
    widths = (n_features, *hidden_sizes(n_hidden), n_outputs)
    shapes = []
    for layer in range(1, len(widths)):
        shapes.append((f"W{layer}", (widths[layer], widths[layer - 1])))
        shapes.append((f"b{layer}", (widths[layer],)))
    return shapes


def n_layers(shapes):
    """Number of affine layers of an mlp layout (hidden layers + 1)."""
    return len(shapes) // 2


def layer_params(p, shapes):
    """``[(W1, b1), ..., (W{L+1}, b{L+1})]`` from the named views of :func:`unpack`."""
    return [(p[f"W{k}"], p[f"b{k}"]) for k in range(1, n_layers(shapes) + 1)]


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
        for k in range(0, len(shapes), 2):
            fan_in = shapes[k][1][1]  # the input width of this layer's W
            bound = 1.0 / np.sqrt(fan_in)
            for _, shape in shapes[k : k + 2]:
                parts.append(rng.uniform(-bound, bound, size=shape).ravel())
    return np.concatenate(parts).astype(np.float64)


def forward(theta, X, model, shapes):
    """Output scores ``z`` (n_samples, n_outputs) and, for the mlp, the pre-activations.

    The second value is ``None`` for the linear model and the list ``[h_1, ..., h_L]`` of
    hidden pre-activations for the mlp.
    """
    p = unpack(theta, shapes)
    if model == "linear":
        return X @ p["W"].T + p["b"], None
    layers = layer_params(p, shapes)
    a, hs = X, []
    for W, b in layers[:-1]:
        h = a @ W.T + b
        hs.append(h)
        a = np.maximum(h, 0.0)
    W, b = layers[-1]
    return a @ W.T + b, hs


def hinge_gradient(theta, X, Y, model, shapes):
    """Full-batch (sub)gradient of ``(1/n) sum_i sum_o max(0, 1 - Y[i,o] z_o(x_i))``."""
    n = X.shape[0]
    p = unpack(theta, shapes)
    z, hs = forward(theta, X, model, shapes)
    beta = (Y * z < 1.0).astype(np.float64)
    delta = -Y * beta / n  # dL/dz, (n, O)
    if model == "linear":
        return np.concatenate([(delta.T @ X).ravel(), delta.sum(axis=0)])
    layers = layer_params(p, shapes)
    ds = [(h > 0.0).astype(np.float64) for h in hs]
    acts = [X] + [h * d for h, d in zip(hs, ds)]
    parts = []
    for k in range(len(layers) - 1, -1, -1):
        parts = [(delta.T @ acts[k]).ravel(), delta.sum(axis=0)] + parts
        if k > 0:
            delta = (delta @ layers[k][0]) * ds[k - 1]
    return np.concatenate(parts)


# ------------------------------------------------------------------------------------------
# interval arithmetic
# ------------------------------------------------------------------------------------------
def imul(al, au, bl, bu):
    """Elementwise interval product ``[al, au] * [bl, bu]`` (broadcasting)."""
    c = np.stack(np.broadcast_arrays(al * bl, al * bu, au * bl, au * bu))
    return c.min(axis=0), c.max(axis=0)


def imatvec(Xl, Xu, Wl, Wu):
    """Interval of ``X @ W.T`` for X (n, F) and W (O, F) boxes: (n, O) lower and upper.

    Widened by a bound on the rounding error of the float sums, so that the exact value
    (and the nominal run's float value, whatever its summation order) lies inside even
    under cancellation; the hinge and ReLU slopes decided from these intervals then
    hold for exact arithmetic too.
    """
    lo, hi = imul(Xl[:, None, :], Xu[:, None, :], Wl[None, :, :], Wu[None, :, :])
    err = rounding_error(Xl.shape[1], np.maximum(np.abs(lo), np.abs(hi)).sum(axis=-1))
    return lo.sum(axis=-1) - err, hi.sum(axis=-1) + err


_U = np.finfo(np.float64).eps


def rounding_error(n_terms, magnitude):
    """Generous bound on the rounding error of a float sum (and the products in it)."""
    return 2.0 * (n_terms + 4) * _U * magnitude


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
    lay_l, lay_u = layer_params(pl, shapes), layer_params(pu, shapes)
    acts, slopes = [(Xl, Xu)], []
    for (Wl, bl_), (Wu, bu_) in zip(lay_l[:-1], lay_u[:-1]):
        al, au = acts[-1]
        hl, hu = imatvec(al, au, Wl, Wu)
        hl, hu = hl + bl_, hu + bu_
        slopes.append(relu_slope(hl, hu))
        acts.append((np.maximum(hl, 0.0), np.maximum(hu, 0.0)))
    (Wl, bl_), (Wu, bu_) = lay_l[-1], lay_u[-1]
    zl, zu = imatvec(*acts[-1], Wl, Wu)
    zl, zu = zl + bl_, zu + bu_
    ml, mu = margin_interval(zl, zu, Ys, False)
    bl, bu = hinge_slope(ml, mu)
    dl_, du_ = imul(-Ys / n_total, -Ys / n_total, bl, bu)  # dL/dz, (n, O)
    lo_parts, hi_parts = [], []
    for k in range(len(lay_l) - 1, -1, -1):
        al, au = acts[k]
        gWl, gWu = imul(dl_[:, :, None], du_[:, :, None], al[:, None, :], au[:, None, :])
        lo_parts = [gWl.reshape(n, -1), dl_] + lo_parts
        hi_parts = [gWu.reshape(n, -1), du_] + hi_parts
        if k > 0:
            # delta_{k-1, j} = d_j * sum_o W_k[o, j] delta_{k, o}
            tl_, tu_ = imul(dl_[:, :, None], du_[:, :, None], lay_l[k][0][None], lay_u[k][0][None])
            sl, su = tl_.sum(axis=1), tu_.sum(axis=1)
            dl_, du_ = imul(*slopes[k - 1], sl, su)
    return np.concatenate(lo_parts, axis=1), np.concatenate(hi_parts, axis=1)


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
    magnitude = np.maximum.reduce([np.abs(base_l), np.abs(base_u), np.abs(var_l), np.abs(var_u)])
    err = rounding_error(2 * n, 2.0 * magnitude.sum(axis=0))
    return gl - err, gu + err


def pad(lo, hi, rel):
    """Widen ``[lo, hi]`` outward by ``rel * (1 + |value|)``."""
    return lo - rel * (1.0 + np.abs(lo)), hi + rel * (1.0 + np.abs(hi))


def interval_step(tl, tu, X, Y, threat, lr, model, shapes):
    """The interval step box ``[tl - lr gu, tu - lr gl]`` (padded for rounding)."""
    gl, gu = gradient_interval(tl, tu, X, Y, threat, model, shapes)
    lo, hi = pad(tl - lr * gu, tu - lr * gl, _IVL_PAD)
    # rounding of lr * g and of the difference, relative to the terms (not the result)
    err = rounding_error(2, np.abs(tl) + np.abs(tu) + lr * (np.abs(gl) + np.abs(gu)))
    return lo - err, hi + err


def interval_scores(tl, tu, X, model, shapes):
    """Interval of the output scores over the box, for fixed inputs X: (n, O) lower/upper."""
    pl, pu = unpack(tl, shapes), unpack(tu, shapes)
    if model == "linear":
        zl, zu = imatvec(X, X, pl["W"], pu["W"])
        return zl + pl["b"], zu + pu["b"]
    feat_l, feat_u = _hidden_interval(pl, pu, X, shapes)
    (Wl, bl), (Wu, bu) = layer_params(pl, shapes)[-1], layer_params(pu, shapes)[-1]
    zl, zu = imatvec(feat_l, feat_u, Wl, Wu)
    return zl + bl, zu + bu


def _hidden_interval(pl, pu, X, shapes):
    """Interval of the last hidden layer's activations over the box, for fixed inputs X."""
    lay_l, lay_u = layer_params(pl, shapes), layer_params(pu, shapes)
    al = au = X
    for (Wl, bl), (Wu, bu) in zip(lay_l[:-1], lay_u[:-1]):
        hl, hu = imatvec(al, au, Wl, Wu)
        al, au = np.maximum(hl + bl, 0.0), np.maximum(hu + bu, 0.0)
    return al, au


def interval_certify(tl, tu, X, pred, model, shapes):
    """Sound interval check of section 3.9; ``pred`` is the nominal output index (or sign).

    For one output, ``pred`` holds s in {-1, +1} and a row is certified iff
    ``min s z > 0``. For K outputs, ``pred`` holds the nominal argmax c and the check
    bounds ``z_c - z_j`` with the difference of the last layer's rows.

    For the linear model the result is exact (the box is a product and x is fixed).
    """
    pl, pu = unpack(tl, shapes), unpack(tu, shapes)
    if model == "linear":
        feat_l = feat_u = X
        Wl, Wu, bl, bu = pl["W"], pu["W"], pl["b"], pu["b"]
    else:
        feat_l, feat_u = _hidden_interval(pl, pu, X, shapes)
        (Wl, bl), (Wu, bu) = layer_params(pl, shapes)[-1], layer_params(pu, shapes)[-1]
    n = X.shape[0]
    if Wl.shape[0] == 1:
        s = pred.astype(np.float64)[:, None]
        # s * w in [min(s wl, s wu), max(...)]
        swl = np.where(s > 0, Wl[0][None, :], -Wu[0][None, :])
        swu = np.where(s > 0, Wu[0][None, :], -Wl[0][None, :])
        lo, _ = imul(swl, swu, feat_l, feat_u)
        sbl = np.where(s[:, 0] > 0, bl[0], -bu[0])
        # strictly positive beyond the rounding error of the float sum
        err = rounding_error(lo.shape[1] + 1, np.abs(lo).sum(axis=1) + np.abs(sbl))
        return lo.sum(axis=1) + sbl > err
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
        mag = np.abs(lo).sum(axis=1) + np.abs(bl[c]) + np.abs(bu[j])
        err = rounding_error(lo.shape[1] + 2, mag)
        ok[rows] &= val > err
    return ok
