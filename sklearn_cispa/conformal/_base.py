"""Code shared by the robust conformal wrappers, risk control and the attack.

Closed forms (the corrected level alpha', conformal ranks, the calibration size a
non-trivial set needs), conformity scores, label lookup and the fit / calibrate /
predict machinery of :class:`RCP1Conformal` and :class:`SmoothedConformal`.
"""

import math
import numbers
import warnings
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from scipy.stats import binom, norm
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions, validate_params
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.utils import check_random_generator

_FLOATS = [np.float64, np.float32]


# --------------------------------------------------------------------------------------
# closed forms
# --------------------------------------------------------------------------------------
@validate_params(
    {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "radius": [Interval(Real, 0, None, closed="left")],
        "kind": [StrOptions({"coverage", "risk"})],
        "bound": [Interval(Real, 0, None, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
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

    Only the ratio ``radius / sigma`` enters, so alpha' does not change when ``sigma``
    and ``radius`` are given in another unit. alpha' underflows to 0 when
    ``radius / sigma`` is about 38 or more (for ``alpha = 0.1``): no calibration set is
    then large enough for a non-trivial set.

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
    top = 1.0 if kind == "coverage" else float(bound)
    if not alpha < top:
        what = "1" if kind == "coverage" else f"bound={top}"
        raise ValueError(f"alpha must be in (0, {what}) for kind={kind!r}, got {alpha!r}.")
    alpha, sigma, radius = float(alpha), float(sigma), float(radius)
    if radius == 0:
        return alpha
    ratio = radius / sigma
    if not math.isfinite(ratio):  # sigma subnormal: the correction is total
        return 0.0
    return float(top * norm.cdf(norm.ppf(alpha / top) - ratio))


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


def _conditional_rank(level, n, delta):
    """Largest ``k`` in ``[0, n]`` with ``P(Binomial(n, level) <= k - 1) <= delta``.

    The k-th smallest of n i.i.d. continuous conformity scores leaves out a test score
    with probability ``F(S_(k)) ~ Beta(k, n + 1 - k)``, and
    ``P(Beta(k, n + 1 - k) <= level) = P(Binomial(n, level) >= k)``. So with this k the
    miscoverage conditional on the calibration set is at most ``level`` with
    probability at least ``1 - delta`` (Vovk 2012; ties only make it smaller).
    """
    if level <= 0 or n < 1:
        return 0
    # j = k - 1 is the largest j in [-1, n - 1] with P(Bin <= j) <= delta. binom.ppf gives
    # the smallest j with P(Bin <= j) >= delta; a few exact steps settle float rounding,
    # so the cost does not grow with n.
    j = int(min(max(binom.ppf(delta, n, level), 0), n - 1))
    while j >= 0 and binom.cdf(j, n, level) > delta:
        j -= 1
    while j + 1 <= n - 1 and binom.cdf(j + 1, n, level) <= delta:
        j += 1
    return j + 1


def _calibration_rank(level, n, delta=None):
    """Rank k of the conformity threshold: marginal (delta None) or conditional.

    ``k = 0`` means that no order statistic is valid (trivial sets). The marginal rank
    is capped at n: a level within 1e-9 of 1 would otherwise snap to n + 1.
    """
    if delta is None:
        return min(_lower_rank(level, n), n)
    return _conditional_rank(level, n, delta)


def min_calibration_size(level, delta=None):
    """Smallest calibration size n whose rank is >= 1 (a non-trivial set), closed form.

    Marginal (``delta=None``): ``floor(level (n + 1)) >= 1``, so ``n = ceil(1 / level)
    - 1``. Calibration-conditional: ``(1 - level)^n <= delta``, so ``n = ceil(log(delta)
    / log(1 - level))``. Returns ``math.inf`` when ``level`` is 0 (underflow). The
    value is checked against the rank rule on both sides when it is small enough to be
    exact in floating point; the cost is bounded whatever the level.
    """
    if level <= 0:
        return math.inf
    if delta is None:
        n = max(int(math.ceil((1.0 - 1e-9) / level)) - 1, 0)

        def ok(m):
            return _lower_rank(level, m) >= 1
    else:
        n = max(int(math.ceil(math.log(delta) / math.log1p(-level))), 1)

        def ok(m):
            return m >= 1 and m * math.log1p(-level) <= math.log(delta)
    if n < 2**50:  # exact integers: fix float rounding of the closed form (a few steps)
        for _ in range(4):
            if not ok(n):
                n += 1
            elif n > 0 and ok(n - 1):
                n -= 1
            else:
                break
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


def _estimator_has_score(self):
    return hasattr(self.estimator, "score")


class _BaseNoisyConformal(MetaEstimatorMixin, BaseEstimator):
    """Fit / calibrate / predict machinery shared by RCP1 and the smoothing baselines."""

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"])],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "radius": [Interval(Real, 0, None, closed="left")],
        "conformity_score": [StrOptions({"auto", "tps", "aps"})],
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
            return "tps" if self.conformity_score == "auto" else self.conformity_score
        if self.conformity_score != "auto":
            raise ValueError(
                f"conformity_score={self.conformity_score!r} is for classifiers; the wrapped "
                f"estimator {type(self.estimator).__name__} is a regressor. Use "
                "conformity_score='auto' (absolute residual)."
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

    def _noisy(self, X, rng):
        """``X`` plus fresh Gaussian noise; a ``ValueError`` if the sum overflows."""
        with np.errstate(over="ignore", invalid="ignore"):
            Z = X + self._noise(rng, X.shape, X.dtype)
        if not np.all(np.isfinite(Z)):
            raise ValueError(
                f"X + noise is not finite: sigma={self.sigma} (or X) is too large for "
                f"{X.dtype}. Rescale X, and sigma and radius with it."
            )
        return Z

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

    def _check_finite_output(self, out, method):
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"The wrapped estimator's {method} returned NaN or infinite values on the "
                "noisy inputs (a diverged fit, or inputs far outside the training range); "
                "the conformal sets would be meaningless."
            )
        return out

    def _proba(self, Z):
        P = np.asarray(self.estimator_.predict_proba(self._model_input(Z)), dtype=np.float64)
        return self._check_finite_output(P, "predict_proba")

    def _regress(self, Z):
        pred = np.asarray(self.estimator_.predict(self._model_input(Z)), dtype=np.float64)
        self._check_finite_output(pred, "predict")
        if pred.ndim == 2 and pred.shape[1] == 1:
            pred = pred[:, 0]
        if pred.ndim != 1:
            raise ValueError(
                f"The wrapped regressor must predict one target; got shape {pred.shape}."
            )
        return pred

    def _warn_trivial(self, n, level, what, delta=None):
        full = "set is the full label set" if what == "set" else "interval is infinite"
        ratio = self.radius / self.sigma
        if level <= 0:
            msg = (
                f"{type(self).__name__}: the requested guarantee is unattainable: the "
                f"corrected level alpha' underflows to 0 (alpha={self.alpha}, "
                f"radius/sigma={ratio:.4g}), so no calibration size gives a non-trivial "
                f"{what}. Every {full}. Lower radius/sigma or raise alpha."
            )
        else:
            needed = min_calibration_size(level, delta)
            cond = "" if delta is None else f" with delta={delta}"
            msg = (
                f"{type(self).__name__}: {n} calibration rows are too few for a non-trivial "
                f"{what} at corrected level {level:.4g}{cond} (alpha={self.alpha}, "
                f"sigma={self.sigma}, radius={self.radius}); at least {needed:.6g} are "
                f"needed{' (unattainable in practice)' if needed > 1e9 else ''}. Every {full}."
            )
        warnings.warn(msg, UserWarning, stacklevel=3)

    def _inner_fit_error(self, estimator, exc, X, y):
        """The wrapped estimator's fit error, with the scale of its inputs when it is
        an overflow of huge (finite) values: numpy and scipy only say "array must not
        contain infs or NaNs"."""
        big_x = float(np.max(np.abs(X), initial=0.0)) if np.size(X) else 0.0
        y_num = np.asarray(y)
        big_y = (
            float(np.max(np.abs(y_num), initial=0.0))
            if y_num.dtype.kind in "fiu" and y_num.size
            else 0.0
        )
        text = str(exc)
        overflow = isinstance(exc, ArithmeticError) or any(
            w in text.lower() for w in ("inf", "nan", "overflow")
        )
        if not (overflow and max(big_x, big_y) > 1e100):
            return exc
        return ValueError(
            f"{type(self).__name__}: the wrapped {type(estimator).__name__} failed to fit "
            f"on the noise-augmented training data ({type(exc).__name__}: {text}). Its "
            f"inputs reach |X| = {big_x:.3g} and |y| = {big_y:.3g} (sigma={self.sigma!r}): "
            "values this large overflow inside the estimator's own computation (squares "
            "and products beyond 1e308). Rescale X (and y) before the wrapper (sigma and "
            "radius are then in the new units), or wrap a Pipeline that starts with a "
            "scaler that does not square its input (MaxAbsScaler; StandardScaler "
            "overflows too), or lower sigma."
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
                    [self._noisy(X, rng) for _ in range(reps)], axis=0
                )
                y_aug = np.concatenate([y] * reps, axis=0)
            X_aug = self._model_input(X_aug, fitting=True)
            estimator = clone(self.estimator)
            try:
                self.estimator_ = estimator.fit(X_aug, y_aug)
            except (ValueError, ArithmeticError) as exc:
                raise self._inner_fit_error(estimator, exc, X_aug, y_aug) from exc
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

    @available_if(_estimator_has_score)
    def score(self, X, y, sample_weight=None):
        """Score of the wrapped estimator's point prediction on clean inputs.

        Delegates to ``estimator_.score`` (accuracy for classifiers, R^2 for
        regressors), so that ``cross_val_score`` and ``GridSearchCV`` with their default
        scoring tune the noise-trained model. It does not measure the conformal sets:
        calibrate the selected model and check coverage and set size on held-out data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            True labels or targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Passed on to ``estimator_.score`` when given.

        Returns
        -------
        score : float
            ``estimator_.score(X, y)``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=_FLOATS)
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        return float(self.estimator_.score(self._model_input(X), y, **kwargs))

    def _prediction_rng(self):
        return np.random.default_rng(self._predict_seedseq.spawn(1)[0])


