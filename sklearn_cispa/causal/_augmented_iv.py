"""Outcome-invariant data augmentation as an IV-like regression (Akbar et al., NeurIPS 2025)."""

import numbers
import warnings

import numpy as np
from scipy import linalg, optimize
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.causal._augmentations import apply_augmentation
from sklearn_cispa.utils import check_random_generator

__all__ = ["AugmentedIVRegressor"]

_EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------------------
# Linear algebra: the IVL_alpha family through reduced (never N x N) quantities
# --------------------------------------------------------------------------------------
class _ReducedProblem:
    """Sufficient statistics of one (Xa, Ya, G) triple for every alpha.

    One Householder QR (R factor only) of ``M = [G | Xa | Ya]`` gives everything: with
    ``M = Q R`` and ``R = [R_G | R_X | r_y]``, ``G = Q R_G``, so an orthonormal basis of
    col(G) is ``Q U_r`` with ``U_r`` the left singular vectors of ``R_G`` above the rank
    tolerance ``max(N, p) * eps * s_max``. Then

    - IV risk: ``||P (Ya - Xa h)||^2 = ||U_r^T r_y - U_r^T R_X h||^2``;
    - ERM risk: ``||Ya - Xa h||^2 = ||r_y - R_X h||^2``.

    Every estimator of the family then works on arrays with at most ``p + d + 1`` rows:
    the fit is one O(N (p + d)^2) factorisation, and each extra alpha costs O((p + d) d^2).
    No N x N matrix, and no N-row orthogonal factor, is ever formed.
    """

    def __init__(self, Xa, Ya, G, fit_intercept):
        n_rows, n_features = Xa.shape
        p = G.shape[1]
        self.n_rows, self.n_features = n_rows, n_features
        # the stacked matrix, built in Fortran order so that LAPACK can overwrite it
        M = np.empty((n_rows, p + n_features + 1), order="F")
        M[:, :p] = G
        M[:, p : p + n_features] = Xa
        M[:, -1] = Ya
        if fit_intercept:
            means = M.mean(axis=0)
            M -= means
            self.x_mean = means[p : p + n_features]
            self.y_mean = float(means[-1])
        else:
            self.x_mean = np.zeros(n_features)
            self.y_mean = 0.0
        # column means of the Xa that enters the QR (zero when centred), for its covariance
        self.qr_mean = np.zeros(n_features) if fit_intercept else Xa.mean(axis=0)
        # "raw" mode factorises in place and returns the reduced (min(N, k) x k) R
        _, R = linalg.qr(M, mode="raw", overwrite_a=True, check_finite=False)
        del M
        R_G, self.Rx, self.QxtY = R[:, :p], R[:, p : p + n_features], R[:, -1]

        # orthonormal basis of col(G) inside the span of Q
        if p and R.shape[0]:
            U, s, _ = linalg.svd(R_G, check_finite=False)
            tol = max(n_rows, p) * _EPS * s[0]
            Ur = U[:, : int(np.sum(s > tol))]
        else:
            Ur = np.zeros((R.shape[0], 0))
        self.rank_G = Ur.shape[1]
        self.QtX = Ur.T @ self.Rx
        self.QtY = Ur.T @ self.QxtY

    def intercept(self, coef):
        return self.y_mean - float(self.x_mean @ coef)

    def solve(self, alpha):
        """Return h_alpha for 0 <= alpha <= inf."""
        if np.isinf(alpha) or self.rank_G == 0:
            # DA+ERM (and the only solution when G carries no information)
            return _lstsq(self.Rx, self.QxtY)
        if alpha == 0:
            return self._solve_limit()
        root = np.sqrt(alpha)
        A = np.vstack([self.QtX, root * self.Rx])
        b = np.concatenate([self.QtY, root * self.QxtY])
        return _lstsq(A, b)

    def _solve_limit(self):
        """alpha -> 0+: the IV solution with the smallest ERM risk."""
        d = self.n_features
        # A = X^T P X = V diag(s^2) V^T from the SVD of Q^T Xa
        _, s, Vt = linalg.svd(self.QtX, full_matrices=True, check_finite=False)
        lam = np.zeros(d)
        lam[: s.size] = s**2
        tol = (lam.max() if d else 0.0) * d * _EPS
        keep = lam > tol
        V = Vt.T
        R, Nn = V[:, keep], V[:, ~keep]
        b = self.QtX.T @ self.QtY
        h_p = R @ ((R.T @ b) / lam[keep])
        if Nn.shape[1] == 0:
            return h_p
        c = _lstsq(self.Rx @ Nn, self.QxtY - self.Rx @ h_p)
        return h_p + Nn @ c


def _lstsq(A, b):
    if A.shape[0] == 0 or A.shape[1] == 0:
        return np.zeros(A.shape[1])
    return linalg.lstsq(A, b, lapack_driver="gelsd", check_finite=False)[0]


def _r2(y_true, y_pred):
    sse = float(np.sum((y_true - y_pred) ** 2))
    sst = float(np.sum((y_true - y_true.mean()) ** 2))
    if sst > 0:
        return 1.0 - sse / sst
    return -sse  # same ranking of candidates when y_true is constant


def _confounder_correction_target(problem):
    """Janzing's (2019) confounder correction: the target norm of the causal coefficients.

    Returns ``sqrt(1 - beta) * ||h_E||`` where ``h_E`` is least squares on the augmented
    data and ``beta`` the estimated confounding strength.
    """
    d = problem.n_features
    h_erm = problem.solve(np.inf)
    norm = float(np.linalg.norm(h_erm))
    if norm == 0.0 or problem.Rx.shape[0] < 2:
        return 0.0, 0.0, 0.0
    # sample covariance of the augmented X from Rx^T Rx = Xa^T Xa
    n_rows, m = problem.n_rows, problem.qr_mean
    sigma = (problem.Rx.T @ problem.Rx - n_rows * np.outer(m, m)) / max(n_rows - 1, 1)
    ev, U = linalg.eigh(sigma, check_finite=False)
    if ev.min() <= max(ev.max(), 0.0) * d * _EPS:
        raise ValueError(
            "alpha='confounder_correction' needs a non-singular covariance of the "
            "augmented X; it is singular here (collinear or constant features)."
        )
    inv_ev = 1.0 / ev
    v2 = (U.T @ (h_erm / norm)) ** 2

    def nll(theta):
        t = float(np.asarray(theta).ravel()[0])
        lam = 1.0 + t * inv_ev
        return 0.5 * np.sum(np.log(lam)) + 0.5 * d * np.log(np.sum(v2 / lam))

    theta = None
    for lower in (0.0, 1e-9):  # the reference retries with a positive lower bound
        res = optimize.minimize(nll, x0=[lower], method="L-BFGS-B", bounds=[(lower, None)])
        if res.success and np.all(np.isfinite(res.x)):
            theta = float(res.x[0])
            break
    if theta is None:
        warnings.warn(
            f"The confounder-correction likelihood did not converge ({res.message}); "
            "using the last iterate.",
            RuntimeWarning,
            stacklevel=3,
        )
        theta = float(res.x[0]) if np.all(np.isfinite(res.x)) else 0.0
    trace_term = float(np.sum(inv_ev)) / d
    beta = 1.0 / (1.0 + 1.0 / (0.001 + trace_term * theta))
    return float(np.sqrt(1.0 - beta) * norm), theta, beta


# --------------------------------------------------------------------------------------
# The estimator
# --------------------------------------------------------------------------------------
class AugmentedIVRegressor(RegressorMixin, BaseEstimator):
    """Linear causal-effect regression from outcome-invariant data augmentation (DA+IVL).

    The estimator augments the training data with a user-supplied augmentation that leaves
    the outcome unchanged, then regresses the outcome on the augmented features using the
    augmentation parameters ``G`` as an "IV-like" instrument. The closed form

    ``h_alpha = argmin_h ||P_G (y - X_aug h)||^2 + alpha ||y - X_aug h||^2``

    interpolates between the IV-like regression (``alpha -> 0``) and least squares on the
    augmented data (``alpha = inf``, "DA+ERM"). Both remove confounding bias that plain
    least squares keeps; the IV-like end removes more when the augmentation is strong.

    Parameters
    ----------
    augmentation : object, callable or None, default=None
        An object with ``augment(X, random_state) -> (X_aug, G)`` (for example
        :class:`NullSpaceTranslation`, :class:`GaussianNoiseAugmentation`,
        :class:`ComposeAugmentations`) or a callable ``f(X, rng) -> (X_aug, G)`` with
        ``rng`` a :class:`numpy.random.Generator`. It is called once per augmented copy
        on the full training ``X``; ``X_aug`` must have the shape of ``X`` and ``G`` one
        row per sample, drawn independently of the data. ``None`` means no augmentation:
        the estimator is ordinary least squares and ``alpha`` is ignored.
    alpha : float, np.inf or {"cv", "level_cv", "confounder_correction"}, default="cv"
        Weight of the least-squares risk next to the IV risk. ``0`` is the limit
        ``alpha -> 0+`` (the IV solution of smallest least-squares risk), ``np.inf`` is
        least squares on augmented data; a finite value gives the k-class estimator with
        ``kappa = 1 / (1 + alpha)`` and instrument ``G``. A string selects alpha from
        ``np.geomspace(*alpha_range, n_alphas)``: ``"cv"`` by held-out R^2 on a random
        split of the rows, ``"level_cv"`` by held-out MSE on held-out levels of the
        binned ``G``, ``"confounder_correction"`` by matching the norm of the
        coefficients to Janzing's (2019) confounding-corrected norm.
    n_alphas : int, default=10
        Number of candidate alphas for the selectors.
    alpha_range : tuple of two floats, default=(1e-4, 1.0)
        Smallest and largest candidate alpha (both > 0).
    n_augment : int, default=1
        Number of independently augmented copies of each row (stacked; ``y`` repeated).
    fit_intercept : bool, default=True
        Fit an intercept by centring the augmented ``X``, ``y`` and ``G``.
    validation_fraction : float, default=0.2
        Share of the original rows ("cv") or of the levels ("level_cv") held out.
    random_state : int, RandomState instance or None, default=None
        Seeds the augmentation draws and the validation split.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Estimated causal coefficients.
    intercept_ : float
        Intercept (0.0 when ``fit_intercept=False``).
    alpha_ : float
        The alpha of the final fit (``np.inf`` when ``augmentation=None``).
    cv_results_ : dict
        ``{"alphas": ndarray, "scores": ndarray}`` in grid order: the candidates and their
        selection scores. For a numeric ``alpha`` it holds that alpha and a NaN score;
        both arrays are empty when ``augmentation=None``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    NullSpaceTranslation : Outcome-invariant translation along given directions.
    GaussianNoiseAugmentation : Approximately invariant Gaussian jitter.
    ComposeAugmentations : Chain augmentations.
    sklearn_cispa.datasets.make_confounded_linear : The paper's linear simulation.
    sklearn.linear_model.LinearRegression : Least squares without augmentation (ERM).

    Notes
    -----
    The closed form is computed from a QR decomposition of ``G`` and of the augmented
    ``X`` (never an N x N projection, unlike the reference code), so a fit costs
    O(N (p^2 + d^2)) and each further candidate alpha O(d^3). ``alpha = 0`` takes, among
    the solutions of the (singular) IV normal equations, the one with the smallest
    least-squares risk on the augmented data.

    Departures from the reference implementation:

    - the selectors use a deterministic geometric grid over ``alpha_range`` instead of
      random log-uniform draws, and a seeded ``random_state`` instead of NumPy's global
      state;
    - ``"level_cv"`` bins ``G`` (2 equal-width bins per column) only to define the
      levels, and keeps the continuous ``G`` as the instrument;
    - with ``fit_intercept=True`` the augmented ``X``, ``y`` and ``G`` are centred
      (equivalent to a constant regressor and instrument); the reference has no
      intercept;
    - the augmentation is called inside ``fit`` (the reference takes ``fit(X, y, G,
      GX)``), so the estimator clones and works in pipelines;
    - ``"confounder_correction"`` evaluates the reference's angular-central-Gaussian
      likelihood (``det`` and ``sqrtm`` of ``I + theta Sigma^-1``) through one
      eigendecomposition of the covariance ``Sigma`` of the augmented ``X``, and raises
      when ``Sigma`` is singular.

    References
    ----------
    .. [1] U. Akbar, N. Kilbertus, H. Shen, K. Muandet, B. Dai, "An Analysis of Causal
       Effect Estimation using Outcome Invariant Data Augmentation", NeurIPS 2025,
       arXiv:2510.25128.
    .. [2] D. Rothenhaeusler, N. Meinshausen, P. Buehlmann, J. Peters, "Anchor regression:
       heterogeneous data meet causality", JRSS-B 2021, arXiv:1801.06229.
    .. [3] D. Janzing, "Causal Regularization", NeurIPS 2019.

    Examples
    --------
    >>> from sklearn_cispa.causal import AugmentedIVRegressor
    >>> from sklearn_cispa.datasets import make_confounded_linear
    >>> X, y, f, aug = make_confounded_linear(n_samples=500, n_features=8, random_state=0)
    >>> est = AugmentedIVRegressor(augmentation=aug, alpha="cv", random_state=0).fit(X, y)
    >>> est.coef_.shape
    (8,)
    >>> bool(est.alpha_ in est.cv_results_["alphas"])
    True
    """

    _parameter_constraints: dict = {
        "augmentation": [None, HasMethods(["augment"]), callable],
        "alpha": [
            Interval(numbers.Real, 0, None, closed="both"),
            StrOptions({"cv", "level_cv", "confounder_correction"}),
        ],
        "n_alphas": [Interval(numbers.Integral, 1, None, closed="left")],
        "alpha_range": [tuple, list, np.ndarray],
        "n_augment": [Interval(numbers.Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        augmentation=None,
        alpha="cv",
        n_alphas=10,
        alpha_range=(1e-4, 1.0),
        n_augment=1,
        fit_intercept=True,
        validation_fraction=0.2,
        random_state=None,
    ):
        self.augmentation = augmentation
        self.alpha = alpha
        self.n_alphas = n_alphas
        self.alpha_range = alpha_range
        self.n_augment = n_augment
        self.fit_intercept = fit_intercept
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # With an augmentation the fit targets the causal effect, not the observational
        # fit: its R^2 on confounded (or non-invariant) data is lower than least squares.
        tags.regressor_tags.poor_score = self.augmentation is not None
        return tags

    # ---------------------------------------------------------------------------------
    def _alpha_grid(self):
        try:
            lo, hi = (float(v) for v in self.alpha_range)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"alpha_range must be a pair of positive numbers, got {self.alpha_range!r}."
            ) from exc
        if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo <= hi):
            raise ValueError(
                "alpha_range must be (low, high) with 0 < low <= high < inf, got "
                f"{self.alpha_range!r}."
            )
        return np.geomspace(lo, hi, self.n_alphas)

    def _augment(self, X, rng):
        """Stack ``n_augment`` augmented copies of X; return Xa, G and G of copy 0."""
        children = rng.spawn(self.n_augment)
        Xs, Gs = [], []
        for child in children:
            X_aug, G = apply_augmentation(self.augmentation, X, child)
            if Gs and G.shape[1] != Gs[0].shape[1]:
                raise ValueError(
                    "The augmentation returned G with a different number of columns for "
                    f"different copies ({Gs[0].shape[1]} and {G.shape[1]})."
                )
            Xs.append(X_aug)
            Gs.append(G)
        if len(Xs) == 1:
            return Xs[0], Gs[0], Gs[0]
        return np.vstack(Xs), np.vstack(Gs), Gs[0]

    def _select_split(self, X, y, Xa, Ya, G, row_id, held_out, alphas, score):
        train_rows = ~held_out[row_id]
        problem = _ReducedProblem(Xa[train_rows], Ya[train_rows], G[train_rows], self.fit_intercept)
        scores = np.empty(alphas.size)
        Xv, yv = X[held_out], y[held_out]
        for i, a in enumerate(alphas):
            coef = problem.solve(a)
            scores[i] = score(yv, Xv @ coef + problem.intercept(coef))
        return scores

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Augment the data and fit the IV-like regression.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Treatments (un-augmented).
        y : array-like of shape (n_samples,)
            Outcome.

        Returns
        -------
        self : AugmentedIVRegressor
            The fitted estimator.
        """
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        n = X.shape[0]
        alphas = self._alpha_grid()
        rng = check_random_generator(self.random_state)

        if self.augmentation is None:
            problem = _ReducedProblem(X, y, np.zeros((n, 0)), self.fit_intercept)
            self.coef_ = problem.solve(np.inf)
            self.intercept_ = problem.intercept(self.coef_) if self.fit_intercept else 0.0
            self.alpha_ = np.inf
            self.cv_results_ = {"alphas": np.empty(0), "scores": np.empty(0)}
            return self

        Xa, G, G_first = self._augment(X, rng)
        Ya = np.tile(y, self.n_augment)
        row_id = np.tile(np.arange(n), self.n_augment)

        mode = self.alpha
        if isinstance(mode, str) and n < 2:
            raise ValueError(
                f"alpha={mode!r} selects alpha from held-out data and needs at least 2 "
                "samples; got n_samples = 1. Use a numeric alpha."
            )
        if mode == "level_cv":
            held_out = self._level_split(G_first, rng)
            if held_out is None:
                mode = "cv"
        if mode == "cv":
            n_val = min(max(1, round(self.validation_fraction * n)), n - 1)
            held_out = np.zeros(n, dtype=bool)
            held_out[rng.choice(n, size=n_val, replace=False)] = True

        if isinstance(mode, str):
            if mode == "confounder_correction":
                problem = _ReducedProblem(Xa, Ya, G, self.fit_intercept)
                target, _, _ = _confounder_correction_target(problem)
                scores = np.array(
                    [-((np.linalg.norm(problem.solve(a)) - target) ** 2) for a in alphas]
                )
            else:
                score = _r2 if mode == "cv" else _neg_mse
                scores = self._select_split(X, y, Xa, Ya, G, row_id, held_out, alphas, score)
            best = int(np.argmax(np.where(np.isnan(scores), -np.inf, scores)))
            alpha = float(alphas[best])
            self.cv_results_ = {"alphas": alphas, "scores": scores}
        else:
            alpha = float(mode)
            self.cv_results_ = {"alphas": np.array([alpha]), "scores": np.array([np.nan])}

        if mode != "confounder_correction":
            problem = _ReducedProblem(Xa, Ya, G, self.fit_intercept)
        self.coef_ = problem.solve(alpha)
        self.intercept_ = problem.intercept(self.coef_) if self.fit_intercept else 0.0
        self.alpha_ = alpha
        return self

    def _level_split(self, G, rng):
        """Held-out original rows for "level_cv", or None when there is a single level."""
        lo, hi = G.min(axis=0), G.max(axis=0)
        codes = (G >= (lo + hi) / 2) & (hi > lo)  # 2 equal-width bins per column
        _, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.ravel()
        n_levels = counts.size
        if n_levels == 1:
            warnings.warn(
                "alpha='level_cv': the binned augmentation parameters form a single level; "
                "falling back to alpha='cv'.",
                UserWarning,
                stacklevel=3,
            )
            return None
        shares = counts / counts.sum()
        prob = (1.0 - shares) / (n_levels - 1)
        n_hold = min(max(1, round(self.validation_fraction * n_levels)), n_levels - 1)
        n_hold = min(n_hold, int(np.count_nonzero(prob)))
        held_levels = rng.choice(n_levels, size=n_hold, replace=False, p=prob)
        return np.isin(inverse, held_levels)

    def predict(self, X):
        """Predict with the causal coefficients on un-augmented ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_


def _neg_mse(y_true, y_pred):
    return -float(np.mean((y_true - y_pred) ** 2))
