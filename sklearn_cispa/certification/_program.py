"""Solver-neutral description of the MIBP-Cert programs (sections 3.5-3.7 and 3.9).

A :class:`Program` holds bounded variables (continuous or binary), two-sided linear rows
and bilinear equalities ``p = a * b`` between two continuous variables. The same program
is handed to SCIP (bilinear equalities kept exactly, ``_mibp.py``) or relaxed to an LP
(binaries in [0, 1], McCormick envelopes, ``_lp.py``). Products with a binary factor and
logical ANDs of binaries are written as linear rows, which are exact for integral
binaries. Every variable gets finite bounds, computed by interval arithmetic while the
program is built (the interval pass of section 3.4 applied to each quantity).

Networks with several hidden layers use the same pieces: weights times activations of the
previous layer are bilinear equalities, and the backward pass's triple products (ReLU slope
x weight x back-propagated error) are split into a bilinear auxiliary ``p = W * delta`` and
an exact binary row for the slope, so every nonlinear term is a product of two variables.

Only lists of floats and ints are stored, so a program pickles and travels to joblib
workers; each worker builds its own solver model from it.
"""

import numpy as np

from sklearn_cispa.certification._interval import hidden_sizes


class Expr:
    """A linear expression ``sum coef * var + const`` over program variables."""

    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const=0.0):
        self.terms = terms if terms is not None else {}
        self.const = float(const)

    @property
    def is_const(self):
        return not self.terms

    def _combine(self, other, sign):
        if not isinstance(other, Expr):
            return Expr(dict(self.terms), self.const + sign * float(other))
        terms = dict(self.terms)
        for k, v in other.terms.items():
            terms[k] = terms.get(k, 0.0) + sign * v
        return Expr(terms, self.const + sign * other.const)

    def __add__(self, other):
        return self._combine(other, 1.0)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1.0)

    def __rsub__(self, other):
        return (self * -1.0) + other

    def __mul__(self, scalar):
        scalar = float(scalar)
        if scalar == 0.0:
            return Expr()
        return Expr({k: v * scalar for k, v in self.terms.items()}, self.const * scalar)

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1.0


def const(value):
    return Expr(None, value)


def esum(exprs):
    """Sum of expressions (faster than repeated ``+``)."""
    terms, c = {}, 0.0
    for e in exprs:
        if isinstance(e, Expr):
            for k, v in e.terms.items():
                terms[k] = terms.get(k, 0.0) + v
            c += e.const
        else:
            c += float(e)
    return Expr(terms, c)


class Program:
    """Variables, linear rows and bilinear equalities of one optimisation program."""

    def __init__(self):
        self.lb, self.ub, self.binary = [], [], []
        self.rows = []  # (indices, coefficients, lo, hi): lo <= sum coef x <= hi
        self.bilinear = []  # (p, a, b): x_p = x_a * x_b, a and b continuous

    @property
    def n_vars(self):
        return len(self.lb)

    # -- variables and bounds ------------------------------------------------------------
    def var(self, lo, hi, binary=False):
        lo, hi = float(lo), float(hi)
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo > hi:
            raise ValueError(f"invalid variable bounds [{lo}, {hi}]")
        if lo == hi:
            return const(lo)
        self.lb.append(lo)
        self.ub.append(hi)
        self.binary.append(bool(binary))
        return Expr({len(self.lb) - 1: 1.0})

    def bounds(self, e):
        lo = hi = e.const
        for k, v in e.terms.items():
            if v > 0:
                lo += v * self.lb[k]
                hi += v * self.ub[k]
            else:
                lo += v * self.ub[k]
                hi += v * self.lb[k]
        return lo, hi

    def _single(self, e):
        """The variable index when ``e`` is exactly one variable, else None."""
        if e.const == 0.0 and len(e.terms) == 1:
            ((k, v),) = e.terms.items()
            if v == 1.0:
                return k
        return None

    def add_row(self, e, lo=-np.inf, hi=np.inf):
        idx = list(e.terms)
        coef = [e.terms[k] for k in idx]
        if not idx:
            return
        self.rows.append((idx, coef, float(lo) - e.const, float(hi) - e.const))

    def define(self, e, lo=None, hi=None):
        """A variable equal to ``e`` with bounds from interval arithmetic (and lo/hi if tighter)."""
        if e.is_const or self._single(e) is not None and lo is None and hi is None:
            return e
        elo, ehi = self.bounds(e)
        if lo is not None:
            elo = max(elo, lo)
        if hi is not None:
            ehi = min(ehi, hi)
        if elo > ehi:  # only by rounding: the given bounds are valid
            elo, ehi = min(elo, ehi), max(elo, ehi)
        v = self.var(elo, ehi)
        if v.is_const:
            # a zero-width interval: the quantity is this constant
            return v
        self.add_row(v - e, 0.0, 0.0)
        return v

    # -- products ------------------------------------------------------------------------
    def mul(self, a, b):
        """The product ``a * b`` of two expressions (exact rows when a factor is binary)."""
        if a.is_const:
            return b * a.const
        if b.is_const:
            return a * b.const
        a, b = self.define(a), self.define(b)
        if a.is_const or b.is_const:
            return self.mul(a, b)
        ka, kb = self._single(a), self._single(b)
        if self.binary[kb] and not self.binary[ka]:
            a, b, ka, kb = b, a, kb, ka
        la, ua, lb, ub = self.lb[ka], self.ub[ka], self.lb[kb], self.ub[kb]
        cands = (la * lb, la * ub, ua * lb, ua * ub)
        p = self.var(min(cands), max(cands))
        if p.is_const:
            return p
        if self.binary[ka] and self.binary[kb]:
            self.add_row(p - a, hi=0.0)
            self.add_row(p - b, hi=0.0)
            self.add_row(p - a - b, lo=-1.0)
            return p
        if self.binary[ka]:
            # p = delta * v, delta binary, v in [lb, ub]: exact linear rows
            self.add_row(p - lb * a, lo=0.0)
            self.add_row(p - ub * a, hi=0.0)
            self.add_row(p - b + ub * (const(1.0) - a), lo=0.0)
            self.add_row(p - b + lb * (const(1.0) - a), hi=0.0)
            return p
        self.bilinear.append((self._single(p), ka, kb))
        return p

    def and_(self, a, b):
        """Logical AND of two binaries (constants 0/1 allowed)."""
        return self.mul(a, b)

    def relu(self, h):
        """``(r, d)`` with ``r = max(h, 0)`` and ``d`` its derivative (big-M of section 3.7)."""
        lo, hi = self.bounds(h)
        if lo > 0.0:
            return h, const(1.0)
        if hi <= 0.0:
            return const(0.0), const(0.0)
        h = self.define(h)
        lo, hi = self.bounds(h)
        if lo > 0.0:
            return h, const(1.0)
        if hi <= 0.0:
            return const(0.0), const(0.0)
        d = self.var(0.0, 1.0, binary=True)
        r = self.var(0.0, hi)
        self.add_row(r - h, lo=0.0)
        self.add_row(r - h - lo * d, hi=-lo)
        self.add_row(r - hi * d, hi=0.0)
        return r, d

    def hinge_indicator(self, m):
        """Binary ``beta`` with beta = 1 forcing m <= 1 and beta = 0 forcing m >= 1."""
        lo, hi = self.bounds(m)
        if hi < 1.0:
            return const(1.0)
        if lo >= 1.0:
            return const(0.0)
        beta = self.var(0.0, 1.0, binary=True)
        self.add_row(m + (hi - 1.0) * beta, hi=hi)
        self.add_row(m + (1.0 - lo) * beta, lo=1.0)
        return beta

    # -- export --------------------------------------------------------------------------
    def to_data(self):
        """Plain lists and arrays (picklable) describing the program."""
        return {
            "lb": np.asarray(self.lb, dtype=np.float64),
            "ub": np.asarray(self.ub, dtype=np.float64),
            "binary": np.asarray(self.binary, dtype=bool),
            "rows": self.rows,
            "bilinear": self.bilinear,
        }


def expr_data(e):
    """``(indices, coefficients, constant)`` of an expression."""
    idx = list(e.terms)
    return (
        np.asarray(idx, dtype=np.int64),
        np.asarray([e.terms[k] for k in idx], dtype=np.float64),
        float(e.const),
    )


# ------------------------------------------------------------------------------------------
# the step program (sections 3.5 and 3.6)
# ------------------------------------------------------------------------------------------
def _threat_inputs(prog, X, threat):
    """Feature expressions ``x'[i][f]`` and label-flip binaries ``phi[i]`` (section 3.2)."""
    n, F = X.shape
    eps, moving = threat["epsilon"], threat["moving"]
    budget, flips = threat["budget"], threat["flips"]
    xp = [[const(X[i, f]) for f in range(F)] for i in range(n)]
    if eps > 0:
        s_vars = []
        for i in np.flatnonzero(moving):
            for f in range(F):
                xp[i][f] = prog.var(X[i, f] - eps, X[i, f] + eps)
            if budget is not None:
                s = prog.var(0.0, 1.0, binary=True)
                s_vars.append(s)
                for f in range(F):
                    # -eps s <= x' - x <= eps s
                    prog.add_row(xp[i][f] - eps * s, hi=X[i, f])
                    prog.add_row(xp[i][f] + eps * s, lo=X[i, f])
        if budget is not None:
            prog.add_row(esum(s_vars), hi=budget)
    phi = None
    if flips > 0:
        phi = [prog.var(0.0, 1.0, binary=True) for _ in range(n)]
        if flips < n:
            prog.add_row(esum(phi), hi=flips)
    return xp, phi


def _margin_terms(prog, z, y, phi_i):
    """The hinge indicator and ``y' beta`` (as an expression) for one row and output."""
    if phi_i is None:
        m = z * y
        beta = prog.hinge_indicator(m)
        return beta, beta * y, None
    z = prog.define(z)
    zl, zu = prog.bounds(z)
    q = prog.mul(phi_i, z)
    # m = y' z with y' = y (1 - 2 phi): its interval is the union of +-y z
    m_lo = min(y * zl, y * zu, -y * zl, -y * zu)
    m_hi = max(y * zl, y * zu, -y * zl, -y * zu)
    m = prog.define(z * y - q * (2.0 * y), m_lo, m_hi)
    beta = prog.hinge_indicator(m)
    gamma = prog.and_(phi_i, beta)
    return beta, (beta - gamma * 2.0) * y, gamma


def step_program(tl, tu, X, Y, threat, lr, model, n_hidden):
    """Build the step program: returns ``(program, objectives)``.

    ``n_hidden`` is the width of the one hidden layer or the tuple of hidden widths of the
    mlp (ignored for the linear model).

    ``objectives[k]`` is the expression of the k-th updated parameter ``theta'_k`` whose
    minimum and maximum over the program bound the next box.
    """
    prog = Program()
    n, F = X.shape
    n_out = Y.shape[1]
    theta = [prog.var(lo, hi) for lo, hi in zip(tl, tu)]
    xp, phi = _threat_inputs(prog, X, threat)
    inv_n = 1.0 / n
    if model == "linear":
        W = [[theta[o * F + f] for f in range(F)] for o in range(n_out)]
        b = [theta[n_out * F + o] for o in range(n_out)]
        gW = [[[] for _ in range(F)] for _ in range(n_out)]
        gb = [[] for _ in range(n_out)]
        for i in range(n):
            for o in range(n_out):
                z = esum([prog.mul(W[o][f], xp[i][f]) for f in range(F)]) + b[o]
                y = float(Y[i, o])
                beta, ybeta, gamma = _margin_terms(prog, z, y, None if phi is None else phi[i])
                # g = -(1/n) sum_i y' beta x'
                for f in range(F):
                    if gamma is None:
                        prod = prog.mul(beta, xp[i][f]) * y
                    else:
                        prod = (prog.mul(beta, xp[i][f]) - prog.mul(gamma, xp[i][f]) * 2.0) * y
                    gW[o][f].append(prod * -inv_n)
                gb[o].append(ybeta * -inv_n)
        grads = [esum(gW[o][f]) for o in range(n_out) for f in range(F)]
        grads += [esum(gb[o]) for o in range(n_out)]
    else:
        sizes = hidden_sizes(n_hidden)
        layers = _mlp_layers(theta, F, sizes, n_out)
        L = len(sizes)
        # gradient terms per layer: gW[k][j][f], gb[k][j] (lists of per-row expressions)
        gW = [[[[] for _ in range(len(Wk[0]))] for _ in range(len(Wk))] for Wk, _ in layers]
        gb = [[[] for _ in range(len(bk))] for _, bk in layers]
        W_out, b_out = layers[L]
        for i in range(n):
            # forward: acts[k] is the input of layer k (acts[0] = x'_i), ds[k] its ReLU slopes
            acts, ds = [xp[i]], []
            for Wk, bk in layers[:L]:
                r, d = [], []
                for j in range(len(Wk)):
                    h = esum([prog.mul(Wk[j][f], acts[-1][f]) for f in range(len(Wk[j]))]) + bk[j]
                    rj, dj = prog.relu(h)
                    r.append(prog.define(rj))
                    d.append(dj)
                acts.append(r)
                ds.append(d)
            r, d = acts[L], ds[L - 1]
            H = len(r)
            delta = [[] for _ in range(H)]
            for o in range(n_out):
                z = esum([prog.mul(W_out[o][j], r[j]) for j in range(H)]) + b_out[o]
                y = float(Y[i, o])
                beta, ybeta, gamma = _margin_terms(prog, z, y, None if phi is None else phi[i])
                gb[L][o].append(ybeta * -inv_n)
                for j in range(H):
                    # dL/dW_out[o, j] = delta_out r_j with delta_out = -y' beta / n
                    prod = prog.mul(beta, r[j])
                    if gamma is not None:
                        prod = prod - prog.mul(gamma, r[j]) * 2.0
                    gW[L][o][j].append(prod * (-inv_n * y))
                    # delta_L,j = d_j sum_o W_out[o,j] delta_out,o
                    #           = -(1/n) sum_o y W_out[o,j] (e - 2 e'), e = beta AND d_j
                    e = prog.and_(beta, d[j])
                    term = prog.mul(W_out[o][j], e)
                    if gamma is not None:
                        term = term - prog.mul(W_out[o][j], prog.and_(gamma, d[j])) * 2.0
                    delta[j].append(term * (-inv_n * y))
            exprs = [esum(terms) for terms in delta]
            for k in range(L - 1, -1, -1):
                # hidden layer k: weights layers[k], input acts[k], delta = dL/dh of its outputs
                dk = []
                for j, ej in enumerate(exprs):
                    dj = prog.define(ej)
                    dk.append(dj)
                    gb[k][j].append(dj)
                    for f in range(len(acts[k])):
                        gW[k][j][f].append(prog.mul(dj, acts[k][f]))
                if k > 0:
                    # delta_{k-1, q} = d_q * sum_j W_k[j, q] delta_{k, j}: the triple product is
                    # split into bilinear auxiliaries p = W delta (each with its own bounds),
                    # then an exact binary x continuous product with d_q
                    Wk = layers[k][0]
                    exprs = []
                    for q in range(len(acts[k])):
                        back = esum([prog.mul(Wk[j][q], dk[j]) for j in range(len(dk))])
                        exprs.append(prog.mul(ds[k - 1][q], back))
        grads = []
        for k in range(L + 1):
            grads += [esum(g) for row in gW[k] for g in row]
            grads += [esum(g) for g in gb[k]]
    objectives = [theta[k] - grads[k] * lr for k in range(len(theta))]
    return prog, objectives


def _mlp_layers(theta, n_features, sizes, n_outputs):
    """``[(W, b), ...]`` per affine layer, as nested lists of the flat ``theta`` entries."""
    widths = (n_features, *sizes, n_outputs)
    layers, off = [], 0
    for k in range(1, len(widths)):
        rows, cols = widths[k], widths[k - 1]
        W = [[theta[off + j * cols + f] for f in range(cols)] for j in range(rows)]
        off += rows * cols
        b = theta[off : off + rows]
        off += rows
        layers.append((W, b))
    return layers


def certify_program(tl, tu, x, n_hidden, n_outputs, pred):
    """Program of section 3.9 for one row of an MLP: returns ``(program, objectives)``.

    ``n_hidden`` is the width of the one hidden layer or the tuple of hidden widths. With
    one output, one objective ``s z`` (s = +1 or -1, ``pred``); with K outputs, the K - 1
    objectives ``z_c - z_j`` (c = ``pred``). The row is certified iff every minimum is > 0.
    """
    prog = Program()
    F = x.shape[0]
    theta = [prog.var(lo, hi) for lo, hi in zip(tl, tu)]
    layers = _mlp_layers(theta, F, hidden_sizes(n_hidden), n_outputs)
    # first layer: x is fixed, so h is linear in theta
    a = [const(float(v)) for v in x]
    for k, (Wk, bk) in enumerate(layers[:-1]):
        r = []
        for j in range(len(Wk)):
            if k == 0:
                h = esum([Wk[j][f] * float(x[f]) for f in range(F)]) + bk[j]
            else:
                h = esum([prog.mul(Wk[j][f], a[f]) for f in range(len(a))]) + bk[j]
            rj, _ = prog.relu(h)
            r.append(prog.define(rj))
        a = r
    W_out, b_out = layers[-1]
    z = [
        esum([prog.mul(W_out[o][j], a[j]) for j in range(len(a))]) + b_out[o]
        for o in range(n_outputs)
    ]
    if n_outputs == 1:
        return prog, [z[0] * float(pred)]
    return prog, [z[pred] - z[j] for j in range(n_outputs) if j != pred]
