"""Rescaling of a MIBP-Cert program before SCIP sees it, with rigorous rounding slack.

SCIP works with absolute and relative tolerances (``numerics/epsilon`` 1e-9,
``numerics/feastol`` 1e-6, dual feasibility 1e-7). Handed the step program in the units of
the data, a feature of order 1e3 gives variables such as ``x' in [1000 - eps, 1000 + eps]``
and objective coefficients ``lr / n`` far below the magnitude of the other terms: the
tolerances then swallow the effect of the perturbation and SCIP's "optimal" dual bound
can cut off genuine perturbed training runs.

:func:`normalise_program` rewrites every continuous variable ``v in [l, u]`` as
``v = c + r t`` with ``t in [-1, 1]`` (binaries are kept), so every variable of the
program SCIP solves has range at most 2, and divides every row by its largest
coefficient. A bilinear equality ``p = a b`` becomes ``s = t_a t_b`` plus one linear row.
Every rounding error of the rewrite (centres, radii, shifted right-hand sides, scaled
coefficients) is bounded with the standard floating-point error bound of a sum and
added as slack to the row; coefficients below ``_DROP`` (relative to the row's largest)
are removed and their largest possible contribution is added as slack. Each of these
steps only enlarges the feasible set, so the minimum of the rewritten program is a
lower bound of the minimum of the original one. :func:`normalise_objective` does the
same for the objective and returns what is needed to map SCIP's bound back, with a
padding that covers SCIP's feasibility tolerance relative to the objective's range.
"""

import numpy as np

_U = np.finfo(np.float64).eps  # unit roundoff (doubled: a generous bound)
# coefficients below this fraction of a row's largest coefficient are moved into slack:
# SCIP drops coefficients below numerics/epsilon (1e-9) by itself, silently
_DROP = 1e-8
# SCIP's default feasibility tolerance; the padding of a normalised bound, relative to the
# objective's range over the box (the sum of |coefficient| x radius)
SCIP_FEASTOL = 1e-6


def _sum_err(n_terms, magnitude):
    """Upper bound on the rounding error of a float sum of ``n_terms`` terms."""
    return 2.0 * (n_terms + 4) * _U * magnitude


def _finish_row(idx, a, lo, hi, err):
    """Scale a row to unit largest coefficient and move tiny coefficients into slack."""
    a = np.asarray(a, dtype=np.float64)
    m = float(np.max(np.abs(a))) if a.size else 0.0
    if m == 0.0:
        return None
    a = a / m
    lo, hi, err = lo / m, hi / m, err / m
    # division by m is correctly rounded: one more ulp of every finite quantity
    err += _sum_err(a.size, np.sum(np.abs(a)) + (abs(lo) if np.isfinite(lo) else 0.0)
                    + (abs(hi) if np.isfinite(hi) else 0.0))
    small = np.abs(a) < _DROP
    err += float(np.sum(np.abs(a[small])))  # every variable of the program has |t| <= 1
    keep = ~small
    idx = [int(i) for i, k in zip(idx, keep) if k]
    return idx, a[keep].tolist(), lo - err, hi + err


def normalise_program(data):
    """Rescaled program: variables in [-1, 1] (continuous) or {0, 1}, rows of unit scale.

    Parameters
    ----------
    data : dict
        A program from :meth:`Program.to_data`.

    Returns
    -------
    norm : dict
        ``lb``, ``ub``, ``binary``, ``rows``, ``bilinear`` of the rescaled program (its
        first ``len(data["lb"])`` variables are the ``t`` of the original ones, then one
        ``s`` per kept bilinear term), plus ``center`` and ``radius`` of the original
        variables (``v = center + radius t``).
    """
    lb, ub = np.asarray(data["lb"], dtype=np.float64), np.asarray(data["ub"], dtype=np.float64)
    binary = np.asarray(data["binary"], dtype=bool)
    center = np.where(binary, 0.0, 0.5 * lb + 0.5 * ub)
    # a radius that covers [lb, ub] despite the rounding of the centre
    half = np.maximum(ub - center, center - lb)
    radius = np.where(binary, 1.0, half * (1.0 + 4.0 * _U) + 4.0 * _U * np.abs(center))
    radius = np.where(binary | (radius > 0.0), radius, np.finfo(np.float64).tiny)
    n = lb.shape[0]
    out_lb = np.where(binary, 0.0, -1.0).tolist()
    out_ub = [1.0] * n
    out_bin = binary.tolist()
    rows = []
    for idx, coef, lo, hi in data["rows"]:
        idx = np.asarray(idx, dtype=np.int64)
        coef = np.asarray(coef, dtype=np.float64)
        a = coef * radius[idx]
        terms = coef * center[idx]
        shift = float(np.sum(terms))
        mag = float(np.sum(np.abs(terms)) + np.sum(np.abs(a)))
        mag += (abs(lo) if np.isfinite(lo) else 0.0) + (abs(hi) if np.isfinite(hi) else 0.0)
        row = _finish_row(idx, a, lo - shift, hi - shift, _sum_err(idx.size, mag))
        if row is not None:
            rows.append(row)
    bilinear = []
    for p, a_, b_ in data["bilinear"]:
        # c_p + r_p t_p = (c_a + r_a t_a)(c_b + r_b t_b), with s = t_a t_b
        ca, ra, cb, rb, cp, rp = (
            center[a_], radius[a_], center[b_], radius[b_], center[p], radius[p]
        )
        coefs = [rp, -cb * ra, -ca * rb, -ra * rb]
        rhs = ca * cb - cp
        mag = sum(abs(c) for c in coefs) + abs(ca * cb) + abs(cp)
        s = len(out_lb)
        row = _finish_row([p, a_, b_, s], coefs, rhs, rhs, _sum_err(4, mag))
        if row is None:
            continue
        if s in row[0]:
            out_lb.append(-1.0)
            out_ub.append(1.0)
            out_bin.append(False)
            bilinear.append((s, int(a_), int(b_)))
        rows.append(row)
    return {
        "lb": np.asarray(out_lb, dtype=np.float64),
        "ub": np.asarray(out_ub, dtype=np.float64),
        "binary": np.asarray(out_bin, dtype=bool),
        "rows": rows,
        "bilinear": bilinear,
        "center": center,
        "radius": radius,
    }


def normalise_objective(norm, idx, coef, c0):
    """Rescale the objective ``sum coef v + c0`` to the normalised variables.

    Returns
    -------
    (idx, coef) : the normalised objective (largest |coefficient| 1; may be empty)
    scale : float
        Multiply SCIP's bound by it ...
    offset : float
        ... and add this to get the bound of the original objective.
    slack : float
        Add ``-slack`` to a minimum and ``+slack`` to a maximum (dropped coefficients,
        rounding of the rewrite, and SCIP's feasibility tolerance over the objective's
        range); always >= 0, in the units of the original objective.
    """
    idx = np.asarray(idx, dtype=np.int64)
    coef = np.asarray(coef, dtype=np.float64)
    a = coef * norm["radius"][idx]
    terms = coef * norm["center"][idx]
    offset = float(c0) + float(np.sum(terms))
    spread = float(np.sum(np.abs(a)))
    slack = _sum_err(idx.size, abs(float(c0)) + float(np.sum(np.abs(terms))) + spread)
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    if scale == 0.0:
        return ([], []), 0.0, offset, slack
    a = a / scale
    small = np.abs(a) < _DROP
    slack += scale * float(np.sum(np.abs(a[small])))
    slack += SCIP_FEASTOL * spread
    keep = ~small
    return ([int(i) for i in idx[keep]], a[keep].tolist()), scale, offset, slack
