"""RCP1: robust split conformal prediction from one Gaussian-noised forward pass.

Zargarbashi, Akhondzadeh and Bojchevski, "One Sample is Enough to Make Conformal
Prediction Robust", NeurIPS 2025 (arXiv 2506.16553).
"""

import math
import numbers
import warnings
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.utils import check_in_unit_interval, check_random_generator, check_real

_FLOATS = [np.float64, np.float32]


# --------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------
def corrected_alpha(alpha, sigma, radius, kind="coverage", bound=1.0):
    """Return the miscoverage (or risk) level alpha' that RCP1 calibrates at.

    For Gaussian smoothing with standard deviation ``sigma`` and an l2 threat of
    radius ``radius``, the certificate ``c(beta) = Phi(Phi^-1(beta) - radius / sigma)``
    acts on the coverage probability of the whole conformal procedure. Solving
    ``c(1 - alpha') = 1 - alpha`` gives ``1 - alpha' = Phi(Phi^-1(1 - alpha) + radius /
    sigma)``, computed as ``alpha' = Phi(Phi^-1(alpha) - radius / sigma)`` to keep
    precision for tiny ``alpha'``. For risk control with a loss bounded by ``bound``
    (B), ``alpha' = B * Phi(Phi^-1(alpha / B) - radius / sigma)``; with ``B = 1`` both
    kinds agree.

    Parameters
    ----------
    alpha : float
        Target miscoverage under attack, in (0, 1); for ``kind="risk"`` the target
        risk, in (0, bound).
    sigma : float
        Standard deviation of the Gaussian noise, > 0.
    radius : float
        l2 radius of the adversary, >= 0, in the units of ``sigma``.
    kind : {"coverage", "risk"}, default="coverage"
        Which guarantee the level is for.
    bound : float, default=1.0
        Upper bound B of the loss (``kind="risk"`` only).

    Returns
    -------
    alpha_corrected : float
        The level to run ordinary conformal prediction (or risk control) at, on one
        noisy copy per point.

    Examples
    --------
    >>> from sklearn_cispa.conformal import corrected_alpha
    >>> round(1 - corrected_alpha(0.1, sigma=0.25, radius=0.12), 6)
    0.960927
    >>> corrected_alpha(0.1, sigma=0.25, radius=0.0)
    0.1
    """
    if kind not in ("coverage", "risk"):
        raise ValueError(f"kind must be 'coverage' or 'risk', got {kind!r}.")
    sigma = check_real(sigma, name="sigma", low=0, closed=(False, True))
    radius = check_real(radius, name="radius", low=0)
    if kind == "coverage":
        alpha = check_in_unit_interval(alpha, name="alpha")
        if radius == 0:
            return alpha
        return float(norm.cdf(norm.ppf(alpha) - radius / sigma))
    bound = check_real(bound, name="bound", low=0, closed=(False, True))
    alpha = check_real(alpha, name="alpha", low=0, high=bound, closed=(False, False))
    if radius == 0:
        return alpha
    return float(bound * norm.cdf(norm.ppf(alpha / bound) - radius / sigma))


def _snap(x):
    """Snap ``x`` to the nearest integer when within 1e-9 of it (float safety)."""
    r = round(x)
    return float(r) if abs(x - r) < 1e-9 else x


def _lower_rank(level, n):
    """``floor(level * (n + 1))``, the rank of the lower conformal order statistic."""
    if level <= 0:
        return 0
    return int(math.floor(_snap(level * (n + 1))))


def _upper_rank(level, n):
    """``ceil(level * (n + 1))``."""
    return int(math.ceil(_snap(level * (n + 1))))


def min_calibration_size(level):
    """Smallest ``n`` with ``floor(level * (n + 1)) >= 1`` (a non-trivial set)."""
    if level <= 0:
        return math.inf
    n = max(int(math.ceil(1.0 / level)) - 1, 0)
    while _lower_rank(level, n) < 1:
        n += 1
    while n > 0 and _lower_rank(level, n - 1) >= 1:
        n -= 1
    return n


def _kth_smallest(values, k):
    """The ``k``-th smallest (1-based) entry of a 1-d array, via ``np.partition``."""
    return float(np.partition(values, k - 1)[k - 1])


# --------------------------------------------------------------------------------------
# scores
# --------------------------------------------------------------------------------------
def _label_conformity(P, idx, u, score):
    """Conformity of the labels ``idx`` (one per row) under probabilities ``P``."""
    rows = np.arange(P.shape[0])
    py = P[rows, idx]
    if score == "tps":
        return py
    above = np.where(P > py[:, None], P, 0.0).sum(axis=1)
    return 1.0 - (above + u * py)


def _all_conformity(P, u, score, chunk_elems=4_000_000):
    """Conformity of every label, shape ``P.shape``; aps in chunks of rows."""
    if score == "tps":
        return P
    n, k = P.shape
    out = np.empty_like(P, dtype=np.float64)
    step = max(1, chunk_elems // max(k * k, 1))
    for start in range(0, n, step):
        Pc = P[start : start + step]
        above = np.where(Pc[:, None, :] > Pc[:, :, None], Pc[:, None, :], 0.0).sum(axis=2)
        out[start : start + step] = 1.0 - (above + u[start : start + step, None] * Pc)
    return out


def _label_indices(classes, y):
    """Column of each label of ``y`` in ``classes``; ``ValueError`` for unseen labels."""
    order = np.argsort(classes, kind="stable")
    sorted_classes = np.asarray(classes)[order]
    pos = np.searchsorted(sorted_classes, y)
    pos = np.clip(pos, 0, len(sorted_classes) - 1)
    bad = sorted_classes[pos] != y
    if np.any(bad):
        unseen = np.unique(np.asarray(y)[bad])
        raise ValueError(
            f"y contains labels not seen in fit: {unseen[:5].tolist()}; "
            f"known classes are {np.asarray(classes)[:10].tolist()}."
        )
    return order[pos]


# --------------------------------------------------------------------------------------
# shared wrapper machinery
# --------------------------------------------------------------------------------------
def _estimator_is_classifier(self):
    return get_tags(self.estimator).estimator_type == "classifier"


def _estimator_is_regressor(self):
    return get_tags(self.estimator).estimator_type == "regressor"


class _BaseNoisyConformal(MetaEstimatorMixin, BaseEstimator):
    """Fit / calibrate / predict machinery shared by RCP1 and the smoothing baselines."""

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "radius": [Interval(Real, 0, None, closed="left")],
        "score": [StrOptions({"auto", "tps", "aps"})],
        "prefit": ["boolean"],
        "noise_augmentation": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
    }

    # ---- tags -------------------------------------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            inner = get_tags(self.estimator)
        except (TypeError, AttributeError, ValueError):
            return tags
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = deepcopy(inner.classifier_tags)
        tags.regressor_tags = deepcopy(inner.regressor_tags)
        tags.target_tags.multi_output = False
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        return tags

    # ---- helpers ----------------------------------------------------------------------
    def _is_classifier(self):
        return _estimator_is_classifier(self)

    def _resolved_score(self):
        if self._is_classifier():
            return "tps" if self.score == "auto" else self.score
        if self.score != "auto":
            raise ValueError(
                f"score={self.score!r} is for classifiers; the wrapped estimator "
                f"{type(self.estimator).__name__} is a regressor. Use score='auto' "
                "(absolute residual)."
            )
        return "residual"

    def _check_estimator_kind(self):
        kind = get_tags(self.estimator).estimator_type
        if kind not in ("classifier", "regressor"):
            raise TypeError(
                f"{type(self).__name__} wraps a classifier or a regressor; "
                f"{type(self.estimator).__name__} is tagged {kind!r}."
            )
        if kind == "classifier" and not hasattr(self.estimator, "predict_proba"):
            raise TypeError(
                f"{type(self.estimator).__name__} has no predict_proba, which the "
                "conformal scores need. Wrap it in "
                "sklearn.calibration.CalibratedClassifierCV (or enable probabilities, "
                "e.g. SVC(probability=True))."
            )
        self._resolved_score()

    def _root_seedseq(self):
        if self.random_state is None:
            return np.random.SeedSequence()
        if isinstance(self.random_state, numbers.Integral):
            return np.random.SeedSequence(int(self.random_state))
        rng = check_random_generator(self.random_state)
        return np.random.SeedSequence(rng.integers(0, 2**63 - 1, size=2).tolist())

    def _noise(self, rng, shape, dtype):
        return self.sigma * rng.standard_normal(size=shape, dtype=dtype)

    def _clear_calibration(self):
        for name in ("alpha_corrected_", "quantile_", "n_calibration_"):
            if name in self.__dict__:
                delattr(self, name)
        self._predict_seedseq = None

    def _check_calibrated(self):
        check_is_fitted(self)
        if getattr(self, "_predict_seedseq", None) is None or not hasattr(self, "quantile_"):
            raise NotFittedError(
                f"This {type(self).__name__} is fitted but not calibrated; call "
                "calibrate(X_cal, y_cal) before predict_set / predict_interval."
            )

    def _model_input(self, Z, fitting=False):
        """Hand the model a DataFrame with the fit-time column names, if it uses them."""
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return Z
        if not fitting and not hasattr(self.estimator_, "feature_names_in_"):
            return Z
        import pandas as pd

        return pd.DataFrame(Z, columns=names)

    def _proba(self, Z):
        return np.asarray(self.estimator_.predict_proba(self._model_input(Z)), dtype=np.float64)

    def _regress(self, Z):
        pred = np.asarray(self.estimator_.predict(self._model_input(Z)), dtype=np.float64)
        if pred.ndim == 2 and pred.shape[1] == 1:
            pred = pred[:, 0]
        if pred.ndim != 1:
            raise ValueError(
                f"The wrapped regressor must predict one target; got shape {pred.shape}."
            )
        return pred

    def _warn_trivial(self, n, level, what):
        needed = min_calibration_size(level)
        warnings.warn(
            f"{type(self).__name__}: {n} calibration rows are too few for a non-trivial "
            f"{what} at corrected level {level:.4g} (alpha={self.alpha}, sigma={self.sigma}, "
            f"radius={self.radius}); at least {needed} are needed. Every "
            f"{'set is the full label set' if what == 'set' else 'interval is infinite'}.",
            UserWarning,
            stacklevel=3,
        )

    # ---- public API -------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit a clone of ``estimator`` on noise-augmented copies of the data.

        With ``prefit=True`` nothing is trained: the fitted ``estimator`` is checked
        and used as is. Fitting clears any previous calibration.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (float; float32 stays float32).
        y : array-like of shape (n_samples,)
            Training labels (classifiers) or targets (regressors).

        Returns
        -------
        self : object
            The fitted wrapper; call :meth:`calibrate` next.
        """
        self._check_estimator_kind()
        is_clf = self._is_classifier()
        X, y = validate_data(self, X, y, dtype=_FLOATS, y_numeric=not is_clf)
        if is_clf:
            check_classification_targets(y)
        root = self._root_seedseq()
        fit_ss, self._seedseq = root.spawn(2)
        if self.prefit:
            check_is_fitted(self.estimator)
            n_in = getattr(self.estimator, "n_features_in_", None)
            if n_in is not None and n_in != X.shape[1]:
                raise ValueError(
                    f"X has {X.shape[1]} features but the prefitted estimator expects {n_in}."
                )
            self.estimator_ = self.estimator
        else:
            rng = np.random.default_rng(fit_ss)
            reps = self.noise_augmentation
            if reps == 0:
                X_aug, y_aug = X, y
            else:
                X_aug = np.concatenate(
                    [X + self._noise(rng, X.shape, X.dtype) for _ in range(reps)], axis=0
                )
                y_aug = np.concatenate([y] * reps, axis=0)
            X_aug = self._model_input(X_aug, fitting=True)
            self.estimator_ = clone(self.estimator).fit(X_aug, y_aug)
        if is_clf:
            self.classes_ = np.asarray(self.estimator_.classes_)
        self._clear_calibration()
        return self

    def calibrate(self, X, y):
        """Calibrate the threshold on noisy copies of held-out data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Calibration inputs, exchangeable with the clean test inputs and disjoint
            from the training data.
        y : array-like of shape (n_samples,)
            Their labels (classifiers; each must be in ``classes_``) or targets.

        Returns
        -------
        self : object
            The calibrated wrapper.
        """
        check_is_fitted(self)
        self._validate_params()
        is_clf = self._is_classifier()
        X, y = validate_data(self, X, y, reset=False, dtype=_FLOATS, y_numeric=not is_clf)
        cal_ss, self._predict_seedseq = self._seedseq.spawn(2)
        rng = np.random.default_rng(cal_ss)
        self._calibrate(X, y, rng)
        self.n_calibration_ = X.shape[0]
        return self

    def predict(self, X):
        """Point prediction of the wrapped estimator on the clean input.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``estimator_.predict(X)``; its label need not be in the (noisy) set.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        return self.estimator_.predict(self._model_input(X))

    def _prediction_rng(self):
        return np.random.default_rng(self._predict_seedseq.spawn(1)[0])


class RCP1Conformal(_BaseNoisyConformal):
    """Robust split conformal prediction from one noisy forward pass per input (RCP1).

    Wraps a scikit-learn classifier (which needs ``predict_proba``) or regressor and
    returns prediction sets (classification) or intervals (regression) whose marginal
    coverage stays at least ``1 - alpha`` when an adversary moves each test input
    anywhere in an l2 ball of radius ``radius``. Every calibration and test input gets
    one Gaussian-noised copy ``x + eps``, ``eps ~ N(0, sigma^2 I)``, and one forward
    pass. Split conformal prediction runs on those noisy scores at the corrected level
    ``alpha' = Phi(Phi^-1(alpha) - radius / sigma)``.

    Parameters
    ----------
    estimator : estimator object
        An unfitted scikit-learn classifier or regressor (or a fitted one with
        ``prefit=True``); a :class:`~sklearn.pipeline.Pipeline` works. Classifiers need
        ``predict_proba``. Classifier vs regressor is read from its tags.
    alpha : float, default=0.1
        Target miscoverage under attack, in (0, 1).
    sigma : float, default=0.25
        Standard deviation of the Gaussian noise, > 0, in the units of ``X`` as passed
        to the wrapper (standardize outside to work in standardized units).
    radius : float, default=0.0
        l2 threat radius r >= 0, in the same units. ``radius=0`` is plain split
        conformal prediction on one noisy pass.
    score : {"auto", "tps", "aps"}, default="auto"
        Conformity score: ``"tps"`` is the predicted probability of the label,
        ``"aps"`` the randomized adaptive score ``1 - (sum of larger probabilities +
        u * p_y)`` with one uniform ``u`` per row, ``"auto"`` means ``"tps"`` for
        classifiers and the absolute residual ``|y - f(x + eps)|`` for regressors
        (``"tps"``/``"aps"`` with a regressor raise a ``ValueError``).
    prefit : bool, default=False
        If True, ``fit`` does not train: it checks that ``estimator`` is fitted, uses it
        as ``estimator_`` (no clone) and clears any calibration.
    noise_augmentation : int, default=10
        Number A >= 0 of noisy copies of the training set to fit on (no clean copy);
        ``A = 0`` trains on clean data, which gives poor robustness. Memory is A*n*d.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds independent streams for training, calibration and prediction noise. An
        int makes a fresh fit -> calibrate -> predict sequence reproducible; use None in
        deployment, because a known seed reveals the noise.

    Attributes
    ----------
    estimator_ : estimator object
        The fitted (noise-trained) estimator.
    classes_ : ndarray of shape (n_classes,)
        Class labels, the column order of :meth:`predict_set` (classifiers only).
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen in ``fit``, when ``X`` has string column names.
    alpha_corrected_ : float
        The level alpha' the conformal step ran at (set by :meth:`calibrate`).
    quantile_ : float
        Classifiers: conformity threshold q (a label enters the set when its noisy score
        is >= q; ``-inf`` makes every set full). Regressors: interval half-width q
        (``+inf`` makes every interval infinite).
    n_calibration_ : int
        Number of calibration rows.

    See Also
    --------
    SmoothedConformal : Smoothing-based robust CP (BinCP, RSCP) with many noisy passes.
    robust_risk_control : The same correction for conformal risk control.
    eot_pgd_l2_attack : The evaluation attack (PGD with expectation over the noise).

    Notes
    -----
    Guarantee (paper, Sec. 3; spec 3.2). For a fixed calibration set and threshold,
    ``p(x) = P_eps[y in C(x + eps)]`` is a Gaussian-smoothed [0, 1]-valued function, so
    ``Phi^-1(p(x + delta)) >= Phi^-1(p(x)) - r / sigma`` for ``||delta|| <= r`` (Cohen
    et al., 2019). Split CP on noisy scores gives ``E p(x) >= 1 - alpha'``; convexity of
    ``beta -> Phi(Phi^-1(beta) - r / sigma)`` and Jensen give attacked coverage
    ``>= 1 - alpha``. The adversary may know the model, the calibration data and q, and
    picks delta after seeing (x, y) but before the noise is drawn. Clean coverage is
    about ``1 - alpha'``; sets are random (each call draws fresh noise).

    Calibration uses the exact order statistic: with ``k = floor(alpha' (n + 1))``
    (snapped to the nearest integer within 1e-9), q is the k-th smallest noisy
    conformity score (``-inf`` if k < 1, with a warning naming the calibration size
    needed). Regression uses the ``(n + 1 - k)``-th smallest absolute residual.

    Departures from the reference code (soroushzargar/RCP1): the model is in the loop
    (the reference takes precomputed score tensors); the quantile index is the exact
    order statistic instead of ``ceil(alpha' (n + 1)) - 1`` and trivial sets are
    ``+-inf`` instead of a -1000 sentinel; aps draws one uniform per row (not per
    class) so sets stay nested. Noise and radius live in the space of ``X`` as given
    to the wrapper. Regression follows the paper's description (no reference code).

    The wrapped estimator receives 1-d targets; skorch regressors, whose default loss
    expects targets of shape (n, 1), need a module whose output is flattened. A
    DataFrame's column names are passed on to the wrapped model (noise is added to the
    numeric values).

    References
    ----------
    .. [1] S. H. Zargarbashi, M. S. Akhondzadeh, A. Bojchevski. "One Sample is Enough
       to Make Conformal Prediction Robust." NeurIPS 2025, arXiv:2506.16553.
    .. [2] J. Cohen, E. Rosenfeld, Z. Kolter. "Certified Adversarial Robustness via
       Randomized Smoothing." ICML 2019.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_cispa.conformal import RCP1Conformal
    >>> X, y = load_digits(return_X_y=True)
    >>> X = X / 16.0
    >>> rcp = RCP1Conformal(LogisticRegression(max_iter=500), alpha=0.1, sigma=0.25,
    ...                     radius=0.12, noise_augmentation=2, random_state=0)
    >>> rcp = rcp.fit(X[:700], y[:700]).calibrate(X[700:1100], y[700:1100])
    >>> round(1 - rcp.alpha_corrected_, 4)
    0.9609
    >>> sets = rcp.predict_set(X[1100:])
    >>> sets.shape
    (697, 10)
    """

    def __init__(
        self,
        estimator,
        alpha=0.1,
        sigma=0.25,
        radius=0.0,
        score="auto",
        prefit=False,
        noise_augmentation=10,
        random_state=None,
    ):
        self.estimator = estimator
        self.alpha = alpha
        self.sigma = sigma
        self.radius = radius
        self.score = score
        self.prefit = prefit
        self.noise_augmentation = noise_augmentation
        self.random_state = random_state

    def _calibrate(self, X, y, rng):
        n = X.shape[0]
        Z = X + self._noise(rng, X.shape, X.dtype)
        level = corrected_alpha(self.alpha, self.sigma, self.radius)
        k = _lower_rank(level, n)
        score = self._resolved_score()
        if self._is_classifier():
            idx = _label_indices(self.classes_, y)
            P = self._proba(Z)
            u = rng.uniform(size=n)
            S = _label_conformity(P, idx, u, score)
            q = _kth_smallest(S, k) if k >= 1 else -np.inf
            if k < 1:
                self._warn_trivial(n, level, "set")
        else:
            R = np.abs(np.asarray(y, dtype=np.float64) - self._regress(Z))
            q = _kth_smallest(R, n + 1 - k) if k >= 1 else np.inf
            if k < 1:
                self._warn_trivial(n, level, "interval")
        self.alpha_corrected_ = level
        self.quantile_ = float(q)

    @available_if(_estimator_is_classifier)
    def predict_set(self, X):
        """Robust prediction sets from one noisy forward pass per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs (possibly perturbed).

        Returns
        -------
        sets : ndarray of bool, shape (n_samples, n_classes)
            ``sets[i, j]`` is True when ``classes_[j]`` is in the set of row i. Fresh
            noise is drawn at each call.
        """
        self._check_calibrated()
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        rng = self._prediction_rng()
        Z = X + self._noise(rng, X.shape, X.dtype)
        P = self._proba(Z)
        u = rng.uniform(size=X.shape[0])
        S = _all_conformity(P, u, self._resolved_score())
        return S >= self.quantile_

    @available_if(_estimator_is_regressor)
    def predict_interval(self, X):
        """Robust prediction intervals from one noisy forward pass per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs (possibly perturbed).

        Returns
        -------
        intervals : ndarray of shape (n_samples, 2)
            Lower and upper ends ``f(x + eps) -+ quantile_``. Fresh noise is drawn at
            each call.
        """
        self._check_calibrated()
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        rng = self._prediction_rng()
        f = self._regress(X + self._noise(rng, X.shape, X.dtype))
        return np.column_stack([f - self.quantile_, f + self.quantile_])
