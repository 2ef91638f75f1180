"""LP relaxation of the MIBP-Cert programs through cvxpy (HiGHS).

Binaries are relaxed to [0, 1] and each bilinear equality ``p = a * b`` is replaced by
the four McCormick inequalities over the bounds of a and b. One cvxpy problem is built
per program, with the objective a ``cvxpy.Parameter``, and re-solved for each objective.

The reported bound does not trust the solver's primal value: from the constraint duals
``lambda >= 0`` (and ``mu``) returned by the solver, it evaluates the Lagrangian lower
bound ``-lambda . b_ub - mu . b_eq + sum_j min(r_j lb_j, r_j ub_j)`` with the reduced
costs ``r = c + A_ub^T lambda + A_eq^T mu``. It is a valid lower bound for *any* such
multipliers (every variable has finite bounds), so an inaccurate LP solve can only make
it looser, never unsound.
"""

import time
import warnings

import numpy as np
import scipy.sparse as sp


def lp_solver_name():
    """``"HIGHS"`` when cvxpy sees highspy, else ``"SCIPY"`` (SciPy's bundled HiGHS)."""
    import cvxpy as cp

    return "HIGHS" if "HIGHS" in cp.installed_solvers() else "SCIPY"


def relaxed_matrices(data):
    """``(A_ub, b_ub, A_eq, b_eq, lb, ub)`` of the LP relaxation of a program."""
    lb, ub = data["lb"], data["ub"]
    n = lb.shape[0]
    ub_rows, ub_rhs, eq_rows, eq_rhs = [], [], [], []
    for idx, coef, lo, hi in data["rows"]:
        row = (np.asarray(idx), np.asarray(coef, dtype=np.float64))
        if lo == hi:
            eq_rows.append(row)
            eq_rhs.append(lo)
            continue
        if np.isfinite(hi):
            ub_rows.append(row)
            ub_rhs.append(hi)
        if np.isfinite(lo):
            ub_rows.append((row[0], -row[1]))
            ub_rhs.append(-lo)
    for p, a, b in data["bilinear"]:
        la, ua, lb_, ub_ = lb[a], ub[a], lb[b], ub[b]
        idx = np.array([p, a, b])
        # p >= la b + lb a - la lb ;  p >= ua b + ub a - ua ub
        ub_rows.append((idx, np.array([-1.0, lb_, la])))
        ub_rhs.append(la * lb_)
        ub_rows.append((idx, np.array([-1.0, ub_, ua])))
        ub_rhs.append(ua * ub_)
        # p <= ua b + lb a - ua lb ;  p <= la b + ub a - la ub
        ub_rows.append((idx, np.array([1.0, -lb_, -ua])))
        ub_rhs.append(-ua * lb_)
        ub_rows.append((idx, np.array([1.0, -ub_, -la])))
        ub_rhs.append(-la * ub_)
    return (_stack(ub_rows, n), np.asarray(ub_rhs), _stack(eq_rows, n), np.asarray(eq_rhs), lb, ub)


def _stack(rows, n):
    if not rows:
        return sp.csr_matrix((0, n))
    r = np.concatenate([np.full(len(i), k) for k, (i, _) in enumerate(rows)])
    c = np.concatenate([i for i, _ in rows])
    v = np.concatenate([x for _, x in rows])
    return sp.csr_matrix((v, (r, c)), shape=(len(rows), n))


def _safe_lower_bound(c, A_ub, b_ub, A_eq, b_eq, lb, ub, lam, mu):
    """Lagrangian lower bound of ``min c x`` for the multipliers (see the module docstring)."""
    lam = np.zeros(A_ub.shape[0]) if lam is None else np.maximum(np.ravel(lam), 0.0)
    mu = np.zeros(A_eq.shape[0]) if mu is None else np.ravel(mu)
    best = -np.inf
    for s in (1.0, -1.0):  # valid for either sign convention of mu: keep the better
        red = c + A_ub.T @ lam + A_eq.T @ (s * mu)
        val = -lam @ b_ub - s * (mu @ b_eq) + np.minimum(red * lb, red * ub).sum()
        best = max(best, float(val))
    return best


def solve_lp_objectives(data, objectives, time_limit):
    """Minimise or maximise each objective over the LP relaxation.

    Parameters
    ----------
    data : dict
        A program from :meth:`Program.to_data`.
    objectives : list of (indices, coefficients, constant, sense)
        ``sense`` is +1 to minimise and -1 to maximise.
    time_limit : float
        Seconds per LP.

    Returns
    -------
    results : list of dict
        ``bound`` (a lower bound of the minimum, or an upper bound of the maximum; NaN when
        none was found), ``status``, ``time``, ``gap``.
    """
    import cvxpy as cp

    A_ub, b_ub, A_eq, b_eq, lb, ub = relaxed_matrices(data)
    n = lb.shape[0]
    results = []
    if n == 0:
        for _, _, c0, _ in objectives:
            results.append({"bound": c0, "status": "optimal", "time": 0.0, "gap": 0.0})
        return results
    x = cp.Variable(n)
    cpar = cp.Parameter(n)
    cons = []
    if A_ub.shape[0]:
        cons.append(A_ub @ x <= b_ub)
    if A_eq.shape[0]:
        cons.append(A_eq @ x == b_eq)
    cons += [x >= lb, x <= ub]
    problem = cp.Problem(cp.Minimize(cpar @ x), cons)
    solver = lp_solver_name()
    opts = {"time_limit": float(time_limit)}
    kwargs = {"scipy_options": opts} if solver == "SCIPY" else {**opts, "output_flag": False}
    for idx, coef, c0, sense in objectives:
        c = np.zeros(n)
        np.add.at(c, idx, sense * coef)
        cpar.value = c
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # "Solution may be inaccurate": harmless here, the bound is recomputed
                # from the duals below and stays valid for inaccurate multipliers
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=solver, **kwargs)
            status = problem.status
        except (cp.error.SolverError, ValueError):
            # cvxpy raises ValueError ("Cannot unpack invalid solution") when HiGHS ends
            # with an unknown status: no bound, the interval bound is used
            status = "solver_error"
        elapsed = time.perf_counter() - start
        if status == cp.INFEASIBLE:
            results.append(
                {"bound": np.nan, "status": "infeasible", "time": elapsed, "gap": np.nan}
            )
            continue
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            results.append({"bound": np.nan, "status": str(status), "time": elapsed, "gap": np.nan})
            continue
        lam = cons[0].dual_value if A_ub.shape[0] else None
        mu = cons[1 if A_ub.shape[0] else 0].dual_value if A_eq.shape[0] else None
        low = _safe_lower_bound(c, A_ub, b_ub, A_eq, b_eq, lb, ub, lam, mu)
        primal = float(problem.value) if problem.value is not None else np.nan
        gap = abs(primal - low) / max(1.0, abs(primal)) if np.isfinite(low + primal) else np.nan
        bound = sense * low + c0 if np.isfinite(low) else np.nan
        results.append({"bound": bound, "status": str(status), "time": elapsed, "gap": gap})
    return results
