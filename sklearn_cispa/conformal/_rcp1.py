"""RCP1: robust split conformal prediction from one Gaussian-noised forward pass.

Zargarbashi, Akhondzadeh and Bojchevski, "One Sample is Enough to Make Conformal
Prediction Robust", NeurIPS 2025 (arXiv 2506.16553).
"""

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import validate_data

from sklearn_cispa.conformal._base import (
    _FLOATS,
    _all_conformity,
    _BaseNoisyConformal,
    _calibration_rank,
    _estimator_is_classifier,
    _estimator_is_regressor,
    _kth_smallest,
    _label_conformity,
    _label_indices,
    corrected_alpha,
)


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
    conformity_score : {"auto", "tps", "aps"}, default="auto"
        Conformity score (the name follows MAPIE): ``"tps"`` is the predicted
        probability of the label, ``"aps"`` the randomized adaptive score
        ``1 - (sum of larger probabilities + u * p_y)`` with one uniform ``u`` per row,
        ``"auto"`` means ``"tps"`` for
        classifiers and the absolute residual ``|y - f(x + eps)|`` for regressors
        (``"tps"``/``"aps"`` with a regressor raise a ``ValueError``).
    delta : float or None, default=None
        ``None``: the guarantee holds on average over calibration draws (marginal).
        A float in (0, 1) asks for a calibration-conditional guarantee: with
        probability at least ``1 - delta`` over the calibration set (and its noise),
        the coverage on clean noisy inputs is ``>= 1 - alpha'`` and so, by the
        certificate, the attacked coverage is ``>= 1 - alpha``. The threshold rank is
        then the largest k with ``P(Binomial(n, alpha') <= k - 1) <= delta`` instead of
        ``floor(alpha' (n + 1))``; sets are larger and more calibration rows are
        needed (at least ``log(delta) / log(1 - alpha')``).
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
        The miscoverage level alpha' the conformal step ran at, after the certificate
        (set by :meth:`calibrate`).
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
    needed). Regression uses the ``(n + 1 - k)``-th smallest absolute residual. A
    level within 1e-9 of 1 is capped at rank n. The calibration size a non-trivial set
    needs is computed in closed form; when alpha' underflows to 0 (``radius / sigma``
    of about 38 or more) a warning says that the guarantee is unattainable and every set
    is full.

    Calibration-conditional guarantee (``delta``). The marginal guarantee averages over
    calibration draws: at n = 25 and ``radius=0`` about a quarter of the calibration
    draws give a coverage below ``1 - alpha'``. With ``delta``, the rank k is the
    largest with ``P(Binomial(n, alpha') >= k) >= 1 - delta``; since the conditional
    miscoverage of the k-th order statistic is ``Beta(k, n + 1 - k)``-distributed (or
    smaller with ties), coverage ``>= 1 - alpha'`` holds with probability
    ``>= 1 - delta`` over calibration (Vovk, 2012). The certificate then applies to
    that fixed calibration set, so attacked coverage is ``>= 1 - alpha`` with the same
    probability.

    Units and row order. Noise and radius are in the units of ``X``: rescaling the
    features by c together with ``sigma`` and ``radius`` (or adding an offset) leaves
    the sets unchanged up to floating point when the wrapped model is itself
    equivariant (for example a Pipeline starting with ``StandardScaler``), and
    ``alpha_corrected_`` depends only on ``radius / sigma``. Results depend on the
    order of the rows: noise is drawn row by row from one stream, so permuting the
    training (or calibration, or test) rows gives each row a different noise draw. The
    fitted model, the threshold and the sets change accordingly; their distribution,
    and so the guarantee, does not.

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
    .. [3] V. Vovk. "Conditional validity of inductive conformal predictors." ACML
       2012.

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

    _parameter_constraints = {
        **_BaseNoisyConformal._parameter_constraints,
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
    }

    def __init__(
        self,
        estimator,
        alpha=0.1,
        sigma=0.25,
        radius=0.0,
        conformity_score="auto",
        delta=None,
        prefit=False,
        noise_augmentation=10,
        random_state=None,
    ):
        self.estimator = estimator
        self.alpha = alpha
        self.sigma = sigma
        self.radius = radius
        self.conformity_score = conformity_score
        self.delta = delta
        self.prefit = prefit
        self.noise_augmentation = noise_augmentation
        self.random_state = random_state

    def _calibrate(self, X, y, rng):
        n = X.shape[0]
        Z = self._noisy(X, rng)
        level = corrected_alpha(self.alpha, self.sigma, self.radius)
        k = _calibration_rank(level, n, self.delta)
        score = self._resolved_score()
        if self._is_classifier():
            idx = _label_indices(self.classes_, y)
            P = self._proba(Z)
            u = rng.uniform(size=n)
            S = _label_conformity(P, idx, u, score)
            q = _kth_smallest(S, k) if k >= 1 else -np.inf
        else:
            R = np.abs(np.asarray(y, dtype=np.float64) - self._regress(Z))
            q = _kth_smallest(R, n + 1 - k) if k >= 1 else np.inf
        if k < 1:
            self._warn_trivial(n, level, "set" if self._is_classifier() else "interval",
                               self.delta)
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
        P = self._proba(self._noisy(X, rng))
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
        f = self._regress(self._noisy(X, rng))
        return np.column_stack([f - self.quantile_, f + self.quantile_])
