"""MIBPCertifier: certified robustness to training-data perturbations (MIBP-Cert)."""

import time
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from sklearn_cispa.certification._interval import (
    forward,
    hinge_gradient,
    init_params,
    interval_certify,
    interval_step,
    param_shapes,
)
from sklearn_cispa.certification._lp import solve_lp_objectives
from sklearn_cispa.certification._program import certify_program, expr_data, step_program
from sklearn_cispa.certification._scaling import normalise_objective, normalise_program
from sklearn_cispa.utils import outer_n_jobs, parallel_map, spawn_seeds

# outward padding of a solver bound (feasibility tolerance of the solvers), section 3.8
_SOLVER_PAD = 1e-6
# largest |bound| of a program handed to a solver; beyond it the interval bound is used
_MAX_MAGNITUDE = 1e15
# the clock of the time budget (a module attribute, so tests can drive it)
_clock = time.perf_counter


def _unsolved_stats(status, epoch, n_params):
    """Solve records for an epoch whose programs were not solved (``status`` says why)."""
    return [
        {
            "status": status,
            "time": 0.0,
            "gap": float("nan"),
            "epoch": epoch,
            "param": k,
            "sense": name,
        }
        for k in range(n_params)
        for name in ("min", "max")
    ]


def _share(remaining, n_rounds, limit):
    """Seconds per solve when ``n_rounds`` rounds of solves share ``remaining`` seconds."""
    return min(float(limit), max(float(remaining), 0.0) / max(int(n_rounds), 1))


def _scip_solve(data, objectives, time_limit, seed):
    """Solve each objective over the exact program with SCIP; return floats only.

    ``data`` is a program from :meth:`Program.to_data` or its
    :func:`normalise_program` (the objectives always refer to the original variables).
    ``objectives`` is a list of ``(indices, coefficients, constant, sense)`` with sense
    +1 (minimise) or -1 (maximise). The model is built here, inside the worker, because a
    pyscipopt model cannot be pickled. SCIP solves the rescaled program of
    :func:`normalise_program` (every variable in [-1, 1] or {0, 1}, rows and objective of
    unit scale, rounding slack added), so its tolerances act on O(1) quantities whatever
    the units of the data. The returned bound is SCIP's dual bound (a lower bound when
    minimising, an upper bound when maximising), never the incumbent, mapped back to the
    original units and widened by the slack of :func:`normalise_objective`.
    """
    from pyscipopt import Model, quicksum

    results = []
    # a program normalised once by the caller (one per epoch) is used as is
    norm = data if "radius" in data else normalise_program(data)
    lb, ub, binary = norm["lb"], norm["ub"], norm["binary"]
    for idx, coef, c0, sense in objectives:
        (nidx, ncoef), scale, offset, slack = normalise_objective(norm, idx, coef, c0)
        if len(nidx) == 0:
            bound = offset - sense * slack
            results.append({"bound": bound, "status": "optimal", "time": 0.0, "gap": 0.0})
            continue
        model = Model()
        model.hideOutput()
        model.setParam("limits/time", float(time_limit))
        model.setParam("limits/gap", 1e-6)
        model.setParam("randomization/randomseedshift", int(seed) % (2**30))
        model.setParam("parallel/maxnthreads", 1)
        model.setParam("lp/threads", 1)
        v = [
            model.addVar(lb=float(lo), ub=float(hi), vtype="B" if b else "C")
            for lo, hi, b in zip(lb, ub, binary)
        ]
        for ridx, rcoef, lo, hi in norm["rows"]:
            e = quicksum(c * v[i] for i, c in zip(ridx, rcoef))
            if np.isfinite(hi):
                model.addCons(e <= hi)
            if np.isfinite(lo):
                model.addCons(e >= lo)
        for p, a, b in norm["bilinear"]:
            model.addCons(v[p] - v[a] * v[b] == 0)
        model.setObjective(
            quicksum(float(c) * v[i] for i, c in zip(nidx, ncoef)),
            "minimize" if sense > 0 else "maximize",
        )
        start = time.perf_counter()
        try:
            model.optimize()
            status = str(model.getStatus())
            dual = float(model.getDualbound())
        except Exception:  # SCIP aborts on "unresolved numerical troubles in LP"
            status, dual = "error", np.nan
        elapsed = time.perf_counter() - start
        if status in ("infeasible", "inforunbd", "error") or not abs(dual) < model.infinity():
            bound = np.nan
        else:
            value = scale * dual + offset
            rounding = 4.0 * np.finfo(np.float64).eps * (abs(scale * dual) + abs(offset))
            bound = value - sense * (slack + rounding)
        try:
            gap = float(model.getGap())
        except Exception:  # pragma: no cover - no primal solution
            gap = np.nan
        if not np.isfinite(gap) or gap >= model.infinity():
            gap = np.nan
        results.append({"bound": bound, "status": status, "time": elapsed, "gap": gap})
        model.freeProb()
    return results


def _lp_task(data, objectives, time_limit, seed):
    """LP counterpart of :func:`_scip_solve` (``seed`` unused: HiGHS' LP is deterministic).

    The LP relaxation of the rescaled program is solved (McCormick envelopes are
    invariant under the affine rescaling of each factor), so HiGHS' tolerances act on
    O(1) quantities too; its Lagrangian bound is mapped back and widened like SCIP's.
    """
    norm = data if "radius" in data else normalise_program(data)
    tasks, maps = [], []
    for idx, coef, c0, sense in objectives:
        (nidx, ncoef), scale, offset, slack = normalise_objective(norm, idx, coef, c0)
        tasks.append(
            (np.asarray(nidx, dtype=np.int64), np.asarray(ncoef, dtype=np.float64), 0.0, sense)
        )
        maps.append((scale, offset, slack, sense))
    results = solve_lp_objectives(norm, tasks, time_limit)
    for res, (scale, offset, slack, sense) in zip(results, maps):
        b = res["bound"]
        if np.isfinite(b):
            rounding = 4.0 * np.finfo(np.float64).eps * (abs(scale * b) + abs(offset))
            res["bound"] = scale * b + offset - sense * (slack + rounding)
    return results


def _certify_row(tl, tu, x, n_hidden, n_outputs, pred, nominal, backend, time_limit, seed):
    """Certify one MLP row (hidden widths ``n_hidden``) with SCIP or the LP relaxation.

    ``nominal`` holds the objectives' values at the nominal parameters (a point of the
    box): a bound above one of them is wrong, so the row is not certified.
    """
    prog, objs = certify_program(tl, tu, x, n_hidden, n_outputs, pred)
    data = prog.to_data()
    objectives = [(*expr_data(o), 1.0) for o in objs]
    solve = _scip_solve if backend == "mibp" else _lp_task
    for res, value in zip(solve(data, objectives, time_limit, seed), nominal):
        b = res["bound"]
        if not np.isfinite(b) or b > value:
            return False
        if b - _SOLVER_PAD * (1.0 + abs(b)) <= 0.0:
            return False
    return True


def _off_scale_feature(X):
    """Index of the feature farthest from unit scale, or None when all are near it.

    A feature is off scale when its standard deviation is outside [1e-2, 1e2] or its
    mean is more than 5 standard deviations from 0 (a constant feature: ``|mean| > 1e2``).
    """
    mean, std = X.mean(axis=0), X.std(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(std > 0, np.abs(np.log10(std)) / 2.0, 0.0)
        offset = np.where(std > 0, np.abs(mean) / (5.0 * std), np.abs(mean) / 1e2)
    badness = np.maximum(spread, offset)
    j = int(np.argmax(badness))
    return j if badness[j] > 1.0 else None


def _warn_if_untrained(theta, X, Y, y_enc, model, shapes, lr):
    """Warn when the nominal training failed on features far from unit scale.

    Failed: the training accuracy is no better than the majority class's, or the
    training hinge loss is not below that of the best constant score (the steps
    diverged). Gradient descent with a fixed ``lr`` is not invariant to the units of X
    (an offset or a change of units changes the steps), so in such units the
    certificate is sound but certifies a model that did not train.
    """
    j = _off_scale_feature(X)
    if j is None:
        return
    with np.errstate(all="ignore"):
        z, _ = forward(theta, X, model, shapes)
        loss = float(np.mean(np.sum(np.maximum(0.0, 1.0 - Y * z), axis=1)))
        pred = (z[:, 0] > 0.0).astype(np.intp) if z.shape[1] == 1 else np.argmax(z, axis=1)
    const = float(np.sum(1.0 - np.abs(Y.mean(axis=0))))
    acc = float(np.mean(pred == y_enc))
    majority = float(np.max(np.bincount(y_enc)) / len(y_enc))
    if loss < const and acc > majority:
        return
    warnings.warn(
        "MIBPCertifier: the nominal training failed (training hinge loss "
        f"{loss:.3g} against {const:.3g} for the best constant score; training accuracy "
        f"{acc:.2f} against {majority:.2f} for the majority class), and the features are "
        f"far from unit scale (feature {j}: mean {X[:, j].mean():.3g}, standard deviation "
        f"{X[:, j].std():.3g}). Gradient descent with lr={lr!r} does not train in these "
        "units; the certificate is sound but certifies a poor model. Standardise the "
        "features (a StandardScaler in a Pipeline: epsilon is then in scaled units and the "
        "scaler is outside the threat model) or adapt lr and max_epochs to the units.",
        UserWarning,
        stacklevel=4,
    )


def _finite_or_raise(values, what, epoch, hint):
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"MIBPCertifier: the {what} overflowed float64 at epoch {epoch} (the fit "
            f"diverged). {hint}"
        )


class MIBPCertifier(ClassifierMixin, BaseEstimator):
    """Certified robustness to training-data perturbations with mixed-integer bilinear programs.

    Trains a small classifier (linear, or a ReLU network with one or more hidden layers)
    with the hinge loss ``max(0, 1 - y z)`` by full-batch gradient descent and, after
    every step, computes a box holding every parameter vector that the same training
    could have reached had the training data been perturbed within a threat model: every
    feature of the perturbable rows moved by up to ``epsilon`` (l-infinity), at most
    ``perturbed`` rows moved, and/or a few labels flipped.
    Each box coordinate is the minimum and maximum of a program that encodes one whole
    gradient step (forward pass, hinge loss, backward pass, update) exactly over the
    previous box and the threat set (MIBP-Cert). A test prediction is certified when no
    parameter vector of the final box changes it, so no data error or poisoning attack of
    the threat model could have changed it.

    Parameters
    ----------
    hidden_layer_sizes : array-like of int or int, default=()
        Width of each hidden ReLU layer, input side first. ``()`` (the default) is the
        linear model ``z = W x + b``; ``(H,)`` is ``z = W2 relu(W1 x + b1) + b2``, and so
        on (an int means one hidden layer). One output for two classes, K outputs
        (one-vs-rest hinge) for K > 2 classes. All three ``bound`` options support any
        depth, but boxes loosen and solves slow down quickly with depth and width: keep
        networks to a few units.
    epsilon : float, default=0.01
        l-infinity radius of the feature perturbation, in the units of the ``X`` given to
        ``fit``. Inside a :class:`~sklearn.pipeline.Pipeline` after a scaler it is in
        scaled units, and the scaler (itself fitted on possibly perturbed data) is outside
        the threat model.
    perturbed : "all" or int, default="all"
        How many of the perturbable rows (see ``perturbable`` in :meth:`fit`) may move:
        ``"all"``, or an int k (at most k rows move, which ones is up to the adversary;
        ``k`` is at most ``n_samples``).
    label_flips : int, default=0
        At most this many training labels may flip (two classes only; at most
        ``n_samples``). Any row's label may flip, perturbable or not.
    max_epochs : int, default=10
        Number of full-batch gradient steps.
    lr : float, default=0.1
        Step size of gradient descent (finite).
    bound : {"mibp", "lp", "interval"}, default="mibp"
        How each step's box is computed: ``"mibp"`` solves the exact mixed-integer
        bilinear step program with SCIP; ``"lp"`` solves its LP relaxation (binaries
        relaxed, McCormick envelopes) with cvxpy/HiGHS; ``"interval"`` propagates
        intervals (the FullCert baseline, no solver).
    time_limit : float, default=30.0
        Time budget in seconds (finite) of the solves of one call of :meth:`fit` and,
        separately, of one call of :meth:`certify` (``"mibp"`` and ``"lp"``; unused by
        ``"interval"``). It bounds the whole call, not only each program: at each epoch
        the seconds left are shared equally over the remaining epochs and the rounds of
        solves of this epoch (``ceil(2 n_params / n_jobs)``), each solve gets that share
        (never more than ``time_limit``), and once the budget is spent the remaining
        epochs use the interval bound (status ``"time_limit"`` in ``solver_stats_``).
        A solve that hits its limit, or a skipped one, still gives a sound, looser box.
    n_jobs : int, default=None
        Number of joblib workers over the independent solves of one epoch and over test
        rows in :meth:`certify`. ``None`` means 1, ``-1`` all processors; 0 is invalid.
    random_state : int, RandomState instance or None, default=None
        Draws the initial parameters and seeds the solver.
    verbose : int, default=0
        When > 0, print one progress line per epoch (box width, time, solver statuses).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit`` (only when ``X`` has string column names).
    params_ : ndarray of shape (n_params,)
        Final nominal parameters, flat: ``[W row-major (O x F), b (O)]`` for the linear
        model, ``[W1 (H1 x F), b1 (H1), W2 (H2 x H1), b2 (H2), ..., W{L+1} (O x HL),
        b{L+1} (O)]`` for hidden widths ``(H1, ..., HL)``, O = 1 for two classes and K
        otherwise.
    init_params_ : ndarray of shape (n_params,)
        Initial parameters; they depend only on ``random_state`` and the data's shape.
    param_bounds_ : ndarray of shape (2, n_params)
        Lower and upper bounds of every parameter reachable after ``max_epochs`` steps.
    bounds_history_ : ndarray of shape (max_epochs + 1, 2, n_params)
        The box after each step (``[0]`` is ``[init_params_, init_params_]``).
    solver_stats_ : list of dict
        One dict per solve with "status", "time" (s), "gap", "epoch", "param" and "sense"
        (``"min"`` or ``"max"``); status "fallback" when the solver gave no finite or no
        trustworthy bound (see Notes) and the interval bound was used, "time_limit" when
        the fit's time budget was spent before the solve (the interval bound is used).
        Empty for ``bound="interval"``.

    See Also
    --------
    sklearn.linear_model.SGDClassifier : hinge-loss linear classifier without certificates.

    Notes
    -----
    Box propagation: the box after step t + 1 is the smallest box holding
    ``theta - lr grad L(theta; D')`` over theta in the box after step t and every data
    set D' of the threat model; each coordinate is the min and max of the step program,
    in which products of a binary and a bounded variable are exact linear rows and
    products of two continuous variables are bilinear equalities (spatial branching in
    SCIP). Every solver bound is SCIP's dual bound (or, for ``"lp"``, a Lagrangian bound
    computed from the LP duals), padded by ``1e-6 (1 + |value|)`` and intersected with the
    interval bound, so the box is never looser than interval arithmetic and a time-limited
    or failed solve stays sound (status ``"fallback"``).

    Numerical soundness at any scale: neither SCIP nor the LP solver sees the program in
    the units of the data. Every continuous variable is rewritten as ``centre + radius t`` with
    ``t in [-1, 1]`` and every row and the objective are scaled to unit largest
    coefficient, so SCIP's absolute and relative tolerances act on O(1) quantities
    whether the features are of order 1e-3 or 1e4 or carry an offset of 1e6. The rounding
    error of this rewrite is bounded and added as slack to every row, coefficients too
    small for SCIP are moved into that slack, and the bound read back is widened by
    SCIP's feasibility tolerance (1e-6) times the objective's range over the box. A
    bound that excludes the nominal run (a known member of the reachable set) shows an
    untrustworthy solve and is replaced by the interval bound (status ``"fallback"``), as
    is a solve that aborts with numerical trouble. Inputs whose bounds overflow float64
    (for example ``|X|`` near 1e120 or ``epsilon=1e200``) raise a ValueError.

    Units: the fit is plain gradient descent in the units of ``X``, so an offset or a
    change of units changes the training (not the soundness of the boxes). The features
    are not standardised inside ``fit``: statistics computed from the training data
    would move with the perturbed data, outside the threat model, and the certificate
    would no longer cover the procedure actually run. ``fit`` instead warns when the
    nominal training failed (accuracy not above the majority class's, or hinge loss not
    below the best constant score's) on features far from unit scale
    (standard deviation outside [1e-2, 1e2] or mean beyond 5 standard deviations).

    Row order: the nominal run, the interval pass and the threat model do not depend on
    the order of the training rows except through floating-point rounding of sums; the
    "mibp" and "lp" boxes may differ in their last digits (solver paths depend on the
    order of the variables) but are sound for every order.

    Deeper networks: with two or more hidden layers the forward pass has products of a
    weight and an activation of the previous layer (both variables) and the backward pass
    products of three factors, ``d * W * delta`` (ReLU slope, weight, back-propagated
    error). Each such product is split with an auxiliary variable: ``p = W * delta`` is
    a bilinear equality (a McCormick envelope for ``"lp"``), ``d * sum p`` an exact
    binary row, and every auxiliary gets finite interval bounds, so SCIP only ever sees
    bilinear terms. The interval pass and the certification program run through every
    layer in the same way.

    Wall time: the solves of one ``fit`` share ``time_limit`` seconds (see the
    parameter), so ``fit`` with ``"mibp"`` or ``"lp"`` takes at most about ``time_limit``
    plus the building of the programs of one epoch and the interval passes (cheap); the
    same holds for one ``certify`` call. n_params, the number of programs of an epoch
    divided by two, is F + 1 (linear, two classes), H (F + 2) + 1 (one hidden layer, two
    classes) or ``sum_l H_l (H_{l-1} + 1)`` over all layers in general (``H_0 = F``,
    last ``H = O``). Because the budget is wall-clock time, a fit that reaches it
    depends on the machine's speed and load (its boxes stay sound); give a larger
    ``time_limit`` for reproducible boxes.

    Departures from the paper: SCIP (pyscipopt) replaces Gurobi; the paper evaluates one
    hidden layer, deeper networks are this library's generalisation; only the hinge loss
    (its derivative is piecewise constant, which makes the step program exact);
    multi-class uses a one-vs-rest sum of hinges; budgets on the number of moved rows and
    label flips are this library's extensions (encoded with binaries, section 3.2 of the
    spec); the box bound is intersected with the interval bound; no clamping of perturbed
    features to the data range; no selection of the best epoch on a validation split
    (choose ``max_epochs`` with :class:`~sklearn.model_selection.GridSearchCV`).
    Initialisation (linear: N(0, 0.1^2) weights, zero bias; mlp: uniform in
    +-1/sqrt(fan_in)) is not taken from the paper.

    References
    ----------
    .. [1] T. Lorenz, M. Kwiatkowska, M. Fritz. "MIBP-Cert: Certified Training against Data
       Perturbations with Mixed-Integer Bilinear Programs". NeurIPS 2025,
       arXiv:2412.10186.
    .. [2] T. Lorenz, M. Kwiatkowska, M. Fritz. "FullCert: Deterministic End-to-End
       Certification for Training and Inference of Neural Networks". GCPR 2024.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn_cispa.certification import MIBPCertifier
    >>> X, y = make_moons(n_samples=20, noise=0.1, random_state=0)
    >>> cert = MIBPCertifier(epsilon=0.01, max_epochs=2, lr=0.5, bound="interval",
    ...                      random_state=0).fit(X, y)
    >>> cert.param_bounds_.shape
    (2, 3)
    >>> bool(cert.certified_accuracy(X, y) <= cert.score(X, y))
    True
    """

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "perturbed": [StrOptions({"all"}), Interval(Integral, 0, None, closed="left")],
        "label_flips": [Interval(Integral, 0, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "bound": [StrOptions({"mibp", "lp", "interval"})],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "n_jobs": [
            Interval(Integral, 1, None, closed="left"),
            Interval(Integral, None, -1, closed="right"),
            None,
        ],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        hidden_layer_sizes=(),
        epsilon=0.01,
        perturbed="all",
        label_flips=0,
        max_epochs=10,
        lr=0.1,
        bound="mibp",
        time_limit=30.0,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.epsilon = epsilon
        self.perturbed = perturbed
        self.label_flips = label_flips
        self.max_epochs = max_epochs
        self.lr = lr
        self.bound = bound
        self.time_limit = time_limit
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # -- helpers -------------------------------------------------------------------------
    def _n_hidden(self):
        """The hidden widths as a tuple (empty for the linear model)."""
        sizes = np.asarray(self.hidden_layer_sizes, dtype=object)
        if sizes.ndim == 0:
            sizes = sizes.reshape(1)
        if sizes.ndim != 1:
            raise ValueError(
                "hidden_layer_sizes must be a positive int or a flat sequence of positive "
                f"ints, one width per hidden layer (e.g. (), (8,) or (4, 3)); got "
                f"{self.hidden_layer_sizes!r}."
            )
        for h in sizes:
            if isinstance(h, bool) or not isinstance(h, Integral | np.integer) or h < 1:
                raise ValueError(
                    "hidden_layer_sizes must hold positive ints (one width per hidden "
                    f"layer); got {h!r} in {self.hidden_layer_sizes!r}."
                )
        return tuple(int(h) for h in sizes)

    def _threat(self, n_samples, perturbable):
        if perturbable is None:
            moving = np.ones(n_samples, dtype=bool)
        else:
            mask = np.asarray(perturbable)
            if mask.dtype != bool:
                raise ValueError(
                    "perturbable must be a boolean mask over the training rows; got an "
                    f"array of dtype {mask.dtype}."
                )
            if mask.shape != (n_samples,):
                raise ValueError(
                    f"perturbable has shape {mask.shape}, expected ({n_samples},) "
                    "(one entry per training row)."
                )
            moving = mask.copy()
        budget = None
        if not isinstance(self.perturbed, str):
            k = int(self.perturbed)
            if k > n_samples:
                raise ValueError(
                    f"perturbed={k} exceeds the number of training rows ({n_samples})."
                )
            if k < int(moving.sum()):
                budget = k
        if self.label_flips > n_samples:
            raise ValueError(
                f"label_flips={self.label_flips} exceeds the number of training rows ({n_samples})."
            )
        return {
            "epsilon": float(self.epsilon),
            "moving": moving,
            "budget": budget,
            "flips": int(self.label_flips),
        }

    def _targets(self, y_enc):
        K = len(self.classes_)
        if K == 2:
            return np.where(y_enc == 1, 1.0, -1.0)[:, None]
        return np.where(y_enc[:, None] == np.arange(K)[None, :], 1.0, -1.0)

    # -- fit -----------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, perturbable=None):
        """Train nominally and bound every parameter reachable under the threat model.

        The result does not depend on the order of the rows except through rounding
        (see Notes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite values).
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).
        perturbable : array-like of bool of shape (n_samples,), default=None
            Rows whose features may move (``None``: every row). Sample-aligned, so
            cross-validation splits it with ``X``; ``perturbed=k`` then lets at most k of
            these rows move.

        Returns
        -------
        self : MIBPCertifier
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        K = len(self.classes_)
        if K < 2:
            raise ValueError(
                f"MIBPCertifier needs at least two classes in y; got one class "
                f"({self.classes_[0]!r})."
            )
        if self.label_flips > 0 and K > 2:
            raise ValueError(
                f"label_flips={self.label_flips} is only supported for two classes; y has {K}."
            )
        n, F = X.shape
        H = self._n_hidden()
        self._model = "mlp" if H else "linear"
        n_out = 1 if K == 2 else K
        threat = self._threat(n, perturbable)
        Y = self._targets(y_enc)
        self._shapes = param_shapes(self._model, F, H, n_out)
        base_seed = spawn_seeds(self.random_state, 1)[0]
        theta = init_params(self._model, self._shapes, base_seed)
        self.init_params_ = theta.copy()
        tl, tu = theta.copy(), theta.copy()
        history = [np.stack([tl, tu])]
        stats = []
        lr = float(self.lr)
        hint = (
            f"max |X| = {np.max(np.abs(X)):.3g}, epsilon = {self.epsilon!r}, lr = {lr!r}: "
            "rescale the features (e.g. with StandardScaler) or lower epsilon, lr or "
            "max_epochs."
        )
        deadline = _clock() + float(self.time_limit)
        for t in range(1, self.max_epochs + 1):
            start = time.perf_counter()
            try:
                with np.errstate(over="raise", invalid="raise"):
                    theta = theta - lr * hinge_gradient(theta, X, Y, self._model, self._shapes)
                    il, iu = interval_step(tl, tu, X, Y, threat, lr, self._model, self._shapes)
            except FloatingPointError as exc:
                raise ValueError(
                    f"MIBPCertifier: the computation overflowed float64 at epoch {t} "
                    f"({exc}; the fit diverged). {hint}"
                ) from None
            _finite_or_raise(theta, "nominal parameters", t, hint)
            _finite_or_raise([il, iu], "parameter bounds", t, hint)
            if self.bound == "interval":
                tl, tu = il, iu
            else:
                tl, tu, epoch_stats = self._solver_step(
                    tl, tu, il, iu, theta, X, Y, threat, t, base_seed, deadline
                )
                stats.extend(epoch_stats)
            if not (np.all(tl <= theta) and np.all(theta <= tu)):
                k = int(np.flatnonzero((tl > theta) | (theta > tu))[0])
                raise RuntimeError(
                    f"Bug: the nominal parameter {k} left its certified box at epoch {t} "
                    f"({theta[k]!r} not in [{tl[k]!r}, {tu[k]!r}])."
                )
            history.append(np.stack([tl, tu]))
            if self.verbose:
                print(
                    f"[MIBPCertifier] epoch {t}/{self.max_epochs}: total width "
                    f"{float(np.sum(tu - tl)):.4g}, {time.perf_counter() - start:.2f} s"
                )
        _warn_if_untrained(theta, X, Y, y_enc, self._model, self._shapes, lr)
        self.params_ = theta
        self.bounds_history_ = np.stack(history)
        self.param_bounds_ = self.bounds_history_[-1].copy()
        self.solver_stats_ = stats
        self._n_hidden_ = H
        self._n_outputs_ = n_out
        self._seed = base_seed
        return self

    def _solver_step(self, tl, tu, il, iu, nominal, X, Y, threat, epoch, base_seed, deadline):
        """Solver bounds of one step, intersected with the interval step ``[il, iu]``.

        ``nominal`` is the nominal iterate after this step, a point of the reachable set:
        a solver bound that excludes it is untrustworthy and replaced by the interval one.
        ``deadline`` (a ``_clock`` value) ends the fit's time budget.
        """
        P = tl.shape[0]
        n_workers = max(1, min(outer_n_jobs(self.n_jobs), 2 * P))
        n_rounds = -(-2 * P // n_workers) * (self.max_epochs - epoch + 1)
        limit = _share(deadline - _clock(), n_rounds, self.time_limit)
        if limit <= 0.0:
            return il.copy(), iu.copy(), _unsolved_stats("time_limit", epoch, P)
        try:
            prog, objs = step_program(
                tl, tu, X, Y, threat, float(self.lr), self._model, self._n_hidden()
            )
            data = prog.to_data()
            magnitude = max(
                np.max(np.abs(data["lb"]), initial=0.0), np.max(np.abs(data["ub"]), initial=0.0)
            )
            usable = np.isfinite(magnitude) and magnitude <= _MAX_MAGNITUDE
        except ValueError:  # a non-finite intermediate bound
            usable = False
        if not usable:
            return il.copy(), iu.copy(), _unsolved_stats("fallback", epoch, P)
        objectives = []
        for k in range(P):
            idx, coef, c0 = expr_data(objs[k])
            objectives.append((idx, coef, c0, 1.0))
            objectives.append((idx, coef, c0, -1.0))
        seeds = spawn_seeds(base_seed + epoch, len(objectives))
        if self.bound == "mibp":
            norm = normalise_program(data)
            tasks = [(norm, [obj], limit, seed) for obj, seed in zip(objectives, seeds)]
            results = [r[0] for r in parallel_map(_scip_solve, tasks, n_jobs=self.n_jobs)]
        else:
            norm = normalise_program(data)
            chunks = np.array_split(np.arange(len(objectives)), n_workers)
            tasks = [(norm, [objectives[i] for i in c], limit, 0) for c in chunks if len(c)]
            results = [r for out in parallel_map(_lp_task, tasks, n_jobs=self.n_jobs) for r in out]
        new_l, new_u = il.copy(), iu.copy()
        stats = []
        for j, res in enumerate(results):
            k, sense = divmod(j, 2)
            name = "min" if sense == 0 else "max"
            if res["status"] == "infeasible":
                raise RuntimeError(
                    f"Bug: the {name} program of parameter {k} at epoch {epoch} is infeasible, "
                    "although the nominal run is a feasible point."
                )
            b = res["bound"]
            status = res["status"]
            if not np.isfinite(b):
                status = "fallback"
            elif sense == 0:
                b = b - _SOLVER_PAD * (1.0 + abs(b))
                if b > nominal[k]:
                    status = "fallback"  # excludes the nominal run: untrustworthy
                else:
                    new_l[k] = max(il[k], b)
            else:
                b = b + _SOLVER_PAD * (1.0 + abs(b))
                if b < nominal[k]:
                    status = "fallback"
                else:
                    new_u[k] = min(iu[k], b)
            stats.append(
                {
                    "status": status,
                    "time": float(res["time"]),
                    "gap": float(res["gap"]) if np.isfinite(res["gap"]) else float("nan"),
                    "epoch": epoch,
                    "param": k,
                    "sense": name,
                }
            )
        return new_l, new_u, stats

    # -- prediction and certification -----------------------------------------------------
    def decision_function(self, X):
        """Nominal scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``z`` of the nominal model (one column for two classes, raveled).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        z, _ = forward(self.params_, X, self._model, self._shapes)
        return z[:, 0] if z.shape[1] == 1 else z

    def _pred_index(self, X):
        z, _ = forward(self.params_, X, self._model, self._shapes)
        if z.shape[1] == 1:
            return (z[:, 0] > 0.0).astype(np.intp)
        return np.argmax(z, axis=1)

    def predict(self, X):
        """Predict with the nominal model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``classes_[1]`` iff z > 0 (two classes), else the argmax class.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.classes_[self._pred_index(X)]

    def certify(self, X):
        """Whether each prediction holds for every parameter vector of ``param_bounds_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples.

        Returns
        -------
        certified : ndarray of bool, shape (n_samples,)
            True iff no training set of the threat model changes the prediction.

        Notes
        -----
        For a network with ``"mibp"`` or ``"lp"``, rows that the interval check leaves
        open are decided by a program each; their solves share ``time_limit`` seconds
        for the whole call, and rows still open when it is spent are not certified.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        deadline = _clock() + float(self.time_limit)
        idx = self._pred_index(X)
        n_out = self._n_outputs_
        pred = np.where(idx == 1, 1, -1) if n_out == 1 else idx
        tl, tu = self.param_bounds_
        ok = interval_certify(tl, tu, X, pred, self._model, self._shapes)
        if self._model == "linear" or self.bound == "interval":
            return ok
        rows = np.flatnonzero(~ok)
        if rows.size:
            z, _ = forward(self.params_, X[rows], self._model, self._shapes)
            if n_out == 1:
                nominal = [[float(p * zi[0])] for p, zi in zip(pred[rows], z)]
            else:
                nominal = [
                    [float(zi[c] - zi[j]) for j in range(n_out) if j != c]
                    for c, zi in zip(pred[rows], z)
                ]
            seeds = spawn_seeds(self._seed, rows.size)
            # the call's time budget: batches of one row per worker, each solve of a
            # batch gets an equal share of the seconds left over the batches to come;
            # rows left when it is spent stay uncertified (sound)
            n_workers = max(1, min(outer_n_jobs(self.n_jobs), rows.size))
            n_obj = len(nominal[0])
            starts = range(0, rows.size, n_workers)
            for b, first in enumerate(starts):
                limit = _share(deadline - _clock(), (len(starts) - b) * n_obj, self.time_limit)
                if limit <= 0.0:
                    ok[rows[first:]] = False
                    break
                part = slice(first, first + n_workers)
                tasks = [
                    (tl, tu, X[i], self._n_hidden_, n_out, int(pred[i]), nom, self.bound, limit, s)
                    for i, nom, s in zip(rows[part], nominal[part], seeds[part])
                ]
                ok[rows[part]] = parallel_map(_certify_row, tasks, n_jobs=self.n_jobs)
        return ok

    def certified_accuracy(self, X, y):
        """Fraction of rows that are both correctly predicted and certified.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            True labels.

        Returns
        -------
        accuracy : float
            ``mean(certify(X) & (predict(X) == y))``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        y = column_or_1d(y)
        check_consistent_length(X, y)
        cert = self.certify(X)
        return float(np.mean(cert & (self.predict(X) == y)))
