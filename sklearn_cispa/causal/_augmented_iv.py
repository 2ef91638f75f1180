"""Outcome-invariant data augmentation as an IV-like regression (Akbar et al., NeurIPS 2025)."""

import numbers
import warnings

import numpy as np
from scipy import linalg, optimize, stats
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.causal._augmentations import (
    ComposeAugmentations,
    GaussianNoiseAugmentation,
    apply_augmentation,
)
from sklearn_cispa.utils import check_random_generator

__all__ = ["AugmentedIVRegressor"]

_EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------------------
# Linear algebra: the IVL_alpha family through reduced (never N x N) quantities
# --------------------------------------------------------------------------------------
# Rows of the stacked matrix [G | Xa | Ya] factorised at a time: the QR is updated block
# by block (tall-skinny QR), so a fit never holds a second N-row copy of the data.
_BLOCK_ROWS = 8192


def _row_blocks(n_rows, rows):
    """Yield row selectors (slices, or index arrays when ``rows`` is given) of bounded size."""
    total = n_rows if rows is None else rows.size
    for start in range(0, total, _BLOCK_ROWS):
        stop = min(total, start + _BLOCK_ROWS)
        yield slice(start, stop) if rows is None else rows[start:stop]


class _ReducedProblem:
    """Sufficient statistics of one (Xa, Ya, G) triple for every alpha.

    A QR decomposition (R factor only) of ``M = [G | Xa | Ya]`` gives everything: with
    ``M = Q R`` and ``R = [R_G | R_X | r_y]``, ``G = Q R_G``, so an orthonormal basis of
    col(G) is ``Q U_r`` with ``U_r`` the left singular vectors of ``R_G`` above the rank
    tolerance ``max(N, p) * eps * s_max``. Then

    - IV risk: ``||P (Ya - Xa h)||^2 = ||U_r^T r_y - U_r^T R_X h||^2``;
    - ERM risk: ``||Ya - Xa h||^2 = ||r_y - R_X h||^2``.

    Every estimator of the family then works on arrays with at most ``p + d + 1`` rows:
    the fit is one O(N (p + d)^2) factorisation, and each extra alpha costs O((p + d) d^2).
    No N x N matrix, no N-row orthogonal factor and no N-row copy of the data is formed:
    ``R`` is updated block by block of ``_BLOCK_ROWS`` rows (``rows`` selects a subset of
    the rows, for the held-out split of ``alpha="cv"``, without copying it).
    """

    def __init__(self, Xa, Ya, G, fit_intercept, rows=None):
        n_features = Xa.shape[1]
        p = G.shape[1]
        n_rows = Xa.shape[0] if rows is None else rows.size
        self.n_rows, self.n_features = n_rows, n_features
        k = p + n_features + 1
        blocks = list(_row_blocks(Xa.shape[0], rows))
        # column means over the selected rows (one pass, block by block)
        means = np.zeros(k)
        if fit_intercept and n_rows:
            for sel in blocks:
                means[:p] += G[sel].sum(axis=0)
                means[p : p + n_features] += Xa[sel].sum(axis=0)
                means[-1] += Ya[sel].sum()
            means /= n_rows
        self.x_mean = means[p : p + n_features].copy()
        self.y_mean = float(means[-1])
        if not fit_intercept:
            self.x_mean[:] = 0.0
            self.y_mean = 0.0
        # column means of the Xa that enters the QR (zero when centred), for its covariance
        if fit_intercept or not n_rows:
            self.qr_mean = np.zeros(n_features)
        else:
            self.qr_mean = sum(Xa[sel].sum(axis=0) for sel in blocks) / n_rows
        R = np.zeros((0, k))
        for sel in blocks:
            block = np.empty((R.shape[0] + _sel_len(sel), k), order="F")
            block[: R.shape[0]] = R
            rest = block[R.shape[0] :]
            rest[:, :p] = G[sel]
            rest[:, p : p + n_features] = Xa[sel]
            rest[:, -1] = Ya[sel]
            if fit_intercept:
                rest -= means
            # "raw" mode factorises in place and returns the reduced (min(rows, k) x k) R
            R = linalg.qr(block, mode="raw", overwrite_a=True, check_finite=False)[1]
            R = np.array(R[: min(R.shape[0], k)])
            del block, rest  # free the block before the next one is allocated
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

    def ar_statistic(self, coef):
        """Anderson-Rubin statistic ``N ||P_G r||^2 / ||r||^2`` of the residual ``r``."""
        iv = float(np.sum((self.QtY - self.QtX @ coef) ** 2))
        erm = float(np.sum((self.QxtY - self.Rx @ coef) ** 2))
        if erm <= 0.0:
            return 0.0
        return self.n_rows * iv / erm

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
        """alpha -> 0+: the IV solution with the smallest ERM risk.

        Solved for the coefficients of unit-norm columns of ``Rx`` and scaled back (as
        in ``_lstsq``), so that features in very different units keep their digits.
        """
        D = _column_norms(self.Rx)
        QtX, Rx = self.QtX / D, self.Rx / D
        d = self.n_features
        # A = X^T P X = V diag(s^2) V^T from the SVD of Q^T Xa
        _, s, Vt = linalg.svd(QtX, full_matrices=True, check_finite=False)
        lam = np.zeros(d)
        lam[: s.size] = s**2
        tol = (lam.max() if d else 0.0) * d * _EPS
        keep = lam > tol
        V = Vt.T
        R, Nn = V[:, keep], V[:, ~keep]
        b = QtX.T @ self.QtY
        h_p = R @ ((R.T @ b) / lam[keep])
        if Nn.shape[1] == 0:
            return h_p / D
        c = _lstsq(Rx @ Nn, self.QxtY - Rx @ h_p)
        return (h_p + Nn @ c) / D


def _sel_len(sel):
    return sel.stop - sel.start if isinstance(sel, slice) else sel.size


def _lstsq(A, b):
    """Least squares with the columns of ``A`` equilibrated to unit norm first.

    The SVD solver's error on a column is relative to the largest singular value, so
    features in very different units (1e-6 beside 1e5) lost digits of their
    coefficients; solving for the coefficients of unit-norm columns and scaling back
    makes the solution equivariant under a change of units per feature, up to rounding
    (and the minimum-norm solution of a rank-deficient problem is the one in those
    unit-free coordinates).
    """
    if A.shape[0] == 0 or A.shape[1] == 0:
        return np.zeros(A.shape[1])
    norms = _column_norms(A)
    return linalg.lstsq(A / norms, b, lapack_driver="gelsd", check_finite=False)[0] / norms


def _column_norms(A):
    """Euclidean norms of the columns of ``A`` (1 for a zero column), for equilibration."""
    if A.shape[0] == 0:
        return np.ones(A.shape[1])
    norms = np.sqrt(np.sum(A * A, axis=0))
    if not np.all(np.isfinite(norms)):  # the squares overflow: the largest entry instead
        norms = np.max(np.abs(A), axis=0)
    norms[~(norms > 0)] = 1.0
    return norms


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
    # Work in the units of X: with ev divided by its harmonic mean ``s`` the likelihood's
    # argument is ``theta / s`` and the trace term is 1, so the optimiser starts from a
    # problem of order one whatever the units (the reference's absolute tolerances
    # otherwise stop it at the start point when X is in large units, and the selected
    # alpha moved with the units). ``beta`` is unchanged: it depends on ``theta / s`` only.
    inv_ev = 1.0 / ev
    harmonic = d / float(np.sum(inv_ev))
    inv_ev = inv_ev * harmonic
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
    trace_term = float(np.sum(inv_ev)) / d  # 1 up to rounding after the normalisation
    beta = 1.0 / (1.0 + 1.0 / (0.001 + trace_term * theta))
    # theta in the units of the covariance, as the reference reports it
    return float(np.sqrt(1.0 - beta) * norm), theta * harmonic, beta


def _pulse_alpha(problem, p_min):
    """PULSE (Jakobsen and Peters, 2022): the largest alpha not rejected by the AR test.

    The Anderson-Rubin statistic ``T(h) = N ||P_G r||^2 / ||r||^2`` of the residual
    ``r = Ya - Xa h`` is compared with the ``1 - p_min`` quantile of the chi-square
    distribution with ``rank(G)`` degrees of freedom. Along the k-class path ``T(h_alpha)``
    is non-decreasing in alpha (a larger alpha trades IV risk for least-squares risk), so
    the largest accepted alpha is found by bisection on ``kappa = 1 / (1 + alpha)``.

    Returns the alpha and the p-value of the test at it. When even ``alpha = 0`` is
    rejected (over-identified, invalid instruments), warns and returns 0.
    """
    df = problem.rank_G
    if df == 0:
        return np.inf, np.nan
    quantile = stats.chi2.isf(p_min, df)

    def statistic(alpha):
        return problem.ar_statistic(problem.solve(alpha))

    t_inf = statistic(np.inf)
    if t_inf <= quantile:
        return np.inf, float(stats.chi2.sf(t_inf, df))
    t_zero = statistic(0.0)
    if t_zero > quantile:
        warnings.warn(
            f"alpha='pulse': the Anderson-Rubin test rejects at level p_min={p_min} even at "
            "alpha = 0 (the augmentation parameters are not valid instruments, or p_min is "
            "too large); using alpha = 0.",
            UserWarning,
            stacklevel=3,
        )
        return 0.0, float(stats.chi2.sf(t_zero, df))
    # invariant: kappa = lo is rejected, kappa = hi is accepted
    lo, hi, t_hi = 0.0, 1.0, t_zero
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi or hi - lo <= 1e-12 * hi:
            break
        t_mid = statistic((1.0 - mid) / mid)
        if t_mid <= quantile:
            hi, t_hi = mid, t_mid
        else:
            lo = mid
    alpha = (1.0 - hi) / hi if hi < 1.0 else 0.0
    return float(alpha), float(stats.chi2.sf(t_hi, df))


def _has_gaussian_noise(augmentation):
    """Whether the augmentation is, or composes, a GaussianNoiseAugmentation."""
    if isinstance(augmentation, GaussianNoiseAugmentation):
        return True
    if isinstance(augmentation, ComposeAugmentations):
        return any(_has_gaussian_noise(a) for a in augmentation.augmentations)
    return False


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
    alpha : float, np.inf or {"pulse", "cv", "confounder_correction"}, default="pulse"
        Weight of the least-squares risk next to the IV risk. ``0`` is the limit
        ``alpha -> 0+`` (the IV solution of smallest least-squares risk), ``np.inf`` is
        least squares on augmented data; a finite value gives the k-class estimator with
        ``kappa = 1 / (1 + alpha)`` and instrument ``G``. A string selects alpha:

        - ``"pulse"`` (default): the PULSE of Jakobsen and Peters (2022), the largest
          alpha (closest to least squares) whose residual passes the Anderson-Rubin
          test ``N ||P_G r||^2 / ||r||^2 <= chi2_{rank(G)}(1 - p_min)``, with
          ``N = n_samples * n_augment``. It uses all rows (no split, no random draw)
          and ignores ``n_alphas`` and ``alpha_range``.
        - ``"cv"``: held-out R^2 on a random split of the original rows over
          ``np.geomspace(*alpha_range, n_alphas)``. The held-out R^2 is measured on
          confounded data, so it favours the larger (more confounded) alphas and in
          practice returns the top of ``alpha_range`` (``alpha = 1`` by default); it is
          kept for comparison with the paper.
        - ``"confounder_correction"``: over the same grid, the alpha whose coefficient
          norm is closest to Janzing's (2019) confounding-corrected norm.
    p_min : float, default=0.05
        Significance level of the Anderson-Rubin test of ``alpha="pulse"``; a larger
        value demands a residual less correlated with ``G`` and gives a smaller alpha.
    n_alphas : int, default=10
        Number of candidate alphas for the selectors.
    alpha_range : tuple of two floats, default=(1e-4, 1.0)
        Smallest and largest candidate alpha (both > 0).
    n_augment : int, default=1
        Number of independently augmented copies of each row (stacked; ``y`` repeated).
    fit_intercept : bool, default=True
        Fit an intercept by centring the augmented ``X``, ``y`` and ``G``.
    validation_fraction : float, default=0.2
        Share of the original rows held out by ``alpha="cv"``.
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
        selection scores. For ``alpha="pulse"`` it holds the selected alpha and the
        p-value of the Anderson-Rubin test there; for a numeric ``alpha`` that alpha and a
        NaN score; both arrays are empty when ``augmentation=None``.
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
    - the paper's ``"level_cv"`` selector is not offered: with continuous ``G`` every
      row forms its own level, so it reduces to a random split (``"cv"``); PULSE, which
      tests the instrument itself, is the default selector instead;
    - with ``fit_intercept=True`` the augmented ``X``, ``y`` and ``G`` are centred
      (equivalent to a constant regressor and instrument); the reference has no
      intercept;
    - the augmentation is called inside ``fit`` (the reference takes ``fit(X, y, G,
      GX)``), so the estimator clones and works in pipelines;
    - ``"confounder_correction"`` evaluates the reference's angular-central-Gaussian
      likelihood (``det`` and ``sqrtm`` of ``I + theta Sigma^-1``) through one
      eigendecomposition of the covariance ``Sigma`` of the augmented ``X``, and raises
      when ``Sigma`` is singular; ``theta`` is optimised relative to the harmonic mean of
      the eigenvalues of ``Sigma``, so the selected alpha does not change when all of
      ``X`` is multiplied by a constant (the reference's optimiser stops at its start
      point when ``X`` is in large units).

    The augmentation must be outcome invariant for ``G`` to be a valid instrument.
    :class:`GaussianNoiseAugmentation` is not: a fit with it and a finite ``alpha_``
    warns (on unconfounded data ``alpha=0`` then gives a large error where least
    squares is exact). A constant ``G`` carries no instrument and warns too.

    Row order: the augmentation draws ``G`` row by row from ``random_state`` and
    ``alpha="cv"`` draws its split by row position, so permuting the training rows
    changes the draws and the result (not its distribution). With a fixed
    augmentation (the same ``(X_aug, G)`` rows permuted alike) the fit with a numeric
    alpha, ``"pulse"`` or ``"confounder_correction"`` does not depend on the row order
    up to rounding.

    References
    ----------
    .. [1] U. Akbar, N. Kilbertus, H. Shen, K. Muandet, B. Dai, "An Analysis of Causal
       Effect Estimation using Outcome Invariant Data Augmentation", NeurIPS 2025,
       arXiv:2510.25128.
    .. [2] D. Rothenhaeusler, N. Meinshausen, P. Buehlmann, J. Peters, "Anchor regression:
       heterogeneous data meet causality", JRSS-B 2021, arXiv:1801.06229.
    .. [3] D. Janzing, "Causal Regularization", NeurIPS 2019.
    .. [4] M. E. Jakobsen, J. Peters, "Distributional robustness of K-class estimators
       and the PULSE", The Econometrics Journal 25(2), 2022, arXiv:2005.03353.

    Examples
    --------
    >>> from sklearn_cispa.causal import AugmentedIVRegressor
    >>> from sklearn_cispa.datasets import make_confounded_linear
    >>> X, y, f, aug = make_confounded_linear(n_samples=500, n_features=8, random_state=0)
    >>> est = AugmentedIVRegressor(augmentation=aug, random_state=0).fit(X, y)
    >>> est.coef_.shape
    (8,)
    >>> bool(est.cv_results_["scores"][0] >= 0.05)  # the AR test accepts at alpha_
    True
    """

    _parameter_constraints: dict = {
        "augmentation": [None, HasMethods(["augment"]), callable],
        "alpha": [
            Interval(numbers.Real, 0, None, closed="both"),
            StrOptions({"pulse", "cv", "confounder_correction"}),
        ],
        "p_min": [Interval(numbers.Real, 0, 1, closed="neither")],
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
        alpha="pulse",
        p_min=0.05,
        n_alphas=10,
        alpha_range=(1e-4, 1.0),
        n_augment=1,
        fit_intercept=True,
        validation_fraction=0.2,
        random_state=None,
    ):
        self.augmentation = augmentation
        self.alpha = alpha
        self.p_min = p_min
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
        """Stack ``n_augment`` augmented copies of X into preallocated arrays; return Xa, G."""
        children = rng.spawn(self.n_augment)
        n = X.shape[0]
        Xa = G = None
        for c, child in enumerate(children):
            X_aug, G_c = apply_augmentation(self.augmentation, X, child)
            if self.n_augment == 1:
                return X_aug, G_c
            if G is None:
                Xa = np.empty((n * self.n_augment, X.shape[1]))
                G = np.empty((n * self.n_augment, G_c.shape[1]))
            elif G_c.shape[1] != G.shape[1]:
                raise ValueError(
                    "The augmentation returned G with a different number of columns for "
                    f"different copies ({G.shape[1]} and {G_c.shape[1]})."
                )
            Xa[c * n : (c + 1) * n] = X_aug
            G[c * n : (c + 1) * n] = G_c
            del X_aug, G_c
        return Xa, G

    def _select_cv(self, X, y, Xa, Ya, G, held_out, alphas):
        """Held-out R^2 of every candidate, fitted on the other rows (no copy of them)."""
        n = X.shape[0]
        train_rows = np.flatnonzero(~np.tile(held_out, Xa.shape[0] // n))
        problem = _ReducedProblem(Xa, Ya, G, self.fit_intercept, rows=train_rows)
        del train_rows
        scores = np.empty(alphas.size)
        Xv, yv = X[held_out], y[held_out]
        for i, a in enumerate(alphas):
            coef = problem.solve(a)
            scores[i] = _r2(yv, Xv @ coef + problem.intercept(coef))
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

        Xa, G = self._augment(X, rng)
        Ya = np.tile(y, self.n_augment)

        mode = self.alpha
        if mode == "cv":
            if n < 2:
                raise ValueError(
                    "alpha='cv' selects alpha from held-out rows and needs at least 2 "
                    "samples; got n_samples = 1. Use alpha='pulse' or a numeric alpha."
                )
            n_val = min(max(1, round(self.validation_fraction * n)), n - 1)
            held_out = np.zeros(n, dtype=bool)
            held_out[rng.choice(n, size=n_val, replace=False)] = True
            scores = self._select_cv(X, y, Xa, Ya, G, held_out, alphas)

        problem = _ReducedProblem(Xa, Ya, G, self.fit_intercept)
        del Xa, Ya
        if problem.rank_G == 0:
            warnings.warn(
                "The augmentation parameters G are constant (rank 0 after centring), so "
                "they carry no instrument: the fit is least squares on the augmented data "
                "(DA+ERM) whatever alpha is.",
                UserWarning,
                stacklevel=2,
            )
        if mode == "cv":
            alpha = float(alphas[int(np.argmax(np.where(np.isnan(scores), -np.inf, scores)))])
            self.cv_results_ = {"alphas": alphas, "scores": scores}
        elif mode == "confounder_correction":
            target, _, _ = _confounder_correction_target(problem)
            scores = np.array([-((np.linalg.norm(problem.solve(a)) - target) ** 2) for a in alphas])
            alpha = float(alphas[int(np.argmax(np.where(np.isnan(scores), -np.inf, scores)))])
            self.cv_results_ = {"alphas": alphas, "scores": scores}
        elif mode == "pulse":
            alpha, p_value = _pulse_alpha(problem, self.p_min)
            self.cv_results_ = {"alphas": np.array([alpha]), "scores": np.array([p_value])}
        else:
            alpha = float(mode)
            self.cv_results_ = {"alphas": np.array([alpha]), "scores": np.array([np.nan])}

        self.coef_ = problem.solve(alpha)
        self.intercept_ = problem.intercept(self.coef_) if self.fit_intercept else 0.0
        self.alpha_ = alpha
        if np.isfinite(alpha) and problem.rank_G and _has_gaussian_noise(self.augmentation):
            warnings.warn(
                "GaussianNoiseAugmentation is not outcome invariant, so its parameters G "
                f"are not a valid instrument: the fit with the finite alpha_={alpha:.3g} "
                "can be biased even without confounding. Use alpha=np.inf (least squares "
                "on the augmented data) with this augmentation.",
                UserWarning,
                stacklevel=2,
            )
        return self

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
