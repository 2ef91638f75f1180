"""MMIUncertainty: a credal ensemble scored with maximum mean imprecision."""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context, clone
from sklearn.ensemble import RandomForestClassifier
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.uncertainty._iipm import (
    _METHODS,
    _mmi_bruteforce,
    _mmi_exact,
    _mmi_linear,
)
from sklearn_cispa.utils import outer_n_jobs, parallel_map, pin_n_jobs, spawn_seeds

_MMI_KERNELS = {"exact": _mmi_exact, "linear": _mmi_linear, "bruteforce": _mmi_bruteforce}

# Ranges of the default credal ensemble's random hyperparameters (see the class Notes).
_DEFAULT_N_ESTIMATORS = (10, 100)  # integers in [10, 100)
_DEFAULT_MAX_FEATURES = (0.1, 1.0)  # uniform on [0.1, 1.0)
_DEFAULT_MIN_SAMPLES_LEAF = (1, 4)  # integers in [1, 4)
_DEFAULT_CRITERIA = ("gini", "entropy")
# probe points used to detect an ensemble of identical members
_PROBE_ROWS = 200


def _draw_forest_params(seed):
    """Random hyperparameters of one default member, drawn from its own seed."""
    rng = np.random.default_rng(seed)
    return {
        "n_estimators": int(rng.integers(*_DEFAULT_N_ESTIMATORS)),
        "max_features": float(rng.uniform(*_DEFAULT_MAX_FEATURES)),
        "min_samples_leaf": int(rng.integers(*_DEFAULT_MIN_SAMPLES_LEAF)),
        "criterion": str(rng.choice(_DEFAULT_CRITERIA)),
        "bootstrap": True,
        "max_depth": None,
        "random_state": int(seed),
    }


def _seed_params(estimator, seed):
    """Parameters named ``*random_state`` of ``estimator`` set to distinct integers."""
    names = sorted(k for k in estimator.get_params(deep=True) if k.endswith("random_state"))
    # one integer per parameter, derived from the member's seed
    ints = np.random.default_rng(seed).integers(0, np.iinfo(np.int32).max, size=len(names))
    return {name: int(v) for name, v in zip(names, ints)}


def _fit_member(estimator, X, y):
    """Fit one member (module-level so that every joblib backend can ship it)."""
    return estimator.fit(X, y)


class MMIUncertainty(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Credal ensemble classifier whose transform is the maximum mean imprecision (MMI).

    The members of an ensemble each output a class-probability vector; together they
    span a credal set whose lower probability is ``P_(A) = min_j p_j(A)``. The
    epistemic uncertainty of an input is its MMI, the largest gap over all events
    between upper and lower probability, ``max_A [P^(A) - P_(A)]``, a number in
    ``[0, 1]`` that is 0 when the members agree. ``transform`` returns it;
    ``predict_proba`` and ``predict`` use the centroid of the credal set.

    Parameters
    ----------
    estimator : estimator object, list of estimator objects or None, default=None
        - None: the credal ensemble of the paper, ``n_members`` random forests with
          randomly drawn hyperparameters (see Notes).
        - An estimator with ``fit`` and ``predict_proba``: cloned ``n_members`` times,
          each clone with different integers in every parameter whose name ends in
          ``random_state``.
        - A list of such estimators: each is cloned and fitted on the data;
          ``n_members`` is ignored.
    n_members : int, default=10
        Number of members when ``estimator`` is None or a single estimator. With 1 the
        credal set is precise and MMI is 0 everywhere.
    method : {"exact", "linear", "bruteforce"}, default="exact"
        How MMI is computed (see :func:`maximum_mean_imprecision`): ``"exact"`` is the
        pairwise form, ``O(m**2 K)``; ``"linear"`` the MMI-Lin upper bound, ``O(m K)``;
        ``"bruteforce"`` the maximum over all events, for ``K <= 12`` only.
    random_state : int, RandomState instance, numpy Generator or None, default=None
        Seeds the members: one integer per member is drawn up front (so the result does
        not depend on ``n_jobs``) and used for its hyperparameter draw and its own seed.
        Pass an int for reproducible fits.
    n_jobs : int, default=None
        Number of members fitted in parallel through joblib; None means 1 unless in a
        ``joblib.parallel_config`` context, -1 all processors; 0 is refused. When the
        members are fitted in parallel, their own ``n_jobs`` parameters (for example the
        default random forests') are set to 1, so the workers are not oversubscribed
        and a Dask cluster receives one task per batch of members, not per tree.

    Attributes
    ----------
    estimators_ : list of estimators
        The fitted members of the credal ensemble.
    member_params_ : list of dict
        Parameters given to each member before fitting: the drawn hyperparameters for
        the default ensemble, the seeds set for a cloned estimator, and an empty dict
        for members of a list.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during ``fit``, when ``X`` has string column names.

    See Also
    --------
    maximum_mean_imprecision : MMI of a given probability tensor.
    generalized_hartley : Generalized Hartley measure, exponential in the classes.
    entropy_difference : Upper minus lower entropy over the credal set.
    accuracy_rejection_curve : Evaluates an uncertainty score by selective prediction.

    Notes
    -----
    The paper's tabular experiments use 10 random forests "with randomly chosen
    hyperparameters" without giving the ranges. The default members here are
    full-depth forests (``max_depth=None``, bootstrap on) with ``n_estimators`` drawn in
    ``{10, ..., 99}``, ``max_features`` uniform on ``[0.1, 1)``, ``min_samples_leaf`` in
    ``{1, 2, 3}`` and the criterion in ``{"gini", "entropy"}``. Every member is then a
    competent model: mixing very shallow forests with deep ones makes the disagreement
    track the shallow members' underfitting, which is largest on easy points, and
    rejecting by MMI then lowered accuracy in a measured case.

    ``method="exact"`` uses the identity ``MMI = max_{i,j} TV(p_i, p_j)``, valid for the
    lower envelope of finitely many members (not stated in the paper, which gives an
    ``O(2**K)`` cost); it is checked against ``"bruteforce"`` in the tests.

    Row order: the default members are bootstrapped random forests, which draw their
    bootstrap samples by row position, so permuting the training rows changes the
    members (not their distribution) and hence the scores. ``transform`` and the other
    prediction methods treat each row on its own.

    Each member's ``predict_proba`` is aligned to ``classes_`` by label, a class a member
    never saw getting probability 0. A single deterministic estimator, such as a
    ``LogisticRegression`` with the lbfgs solver, gives identical members; a warning is
    raised when the members agree exactly on 200 midpoints of random pairs of training
    rows.

    References
    ----------
    .. [1] S. L. Chau, M. Caprio, K. Muandet. "Integral Imprecise Probability Metrics".
       NeurIPS 2025, arXiv:2505.16156.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from sklearn_cispa.uncertainty import MMIUncertainty
    >>> X, y = load_iris(return_X_y=True)
    >>> model = MMIUncertainty(DecisionTreeClassifier(max_features=2), n_members=5,
    ...                        random_state=0).fit(X, y)
    >>> model.transform(X[:3]).shape
    (3, 1)
    >>> model.predict(X[:3])
    array([0, 0, 0])
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict_proba"]), list, None],
        "n_members": [Interval(numbers.Integral, 1, None, closed="left")],
        "method": [StrOptions(set(_METHODS))],
        "random_state": ["random_state", np.random.Generator],
        "n_jobs": [
            Interval(numbers.Integral, None, -1, closed="right"),
            Interval(numbers.Integral, 1, None, closed="left"),
            None,
        ],
    }

    def __init__(
        self, estimator=None, n_members=10, method="exact", random_state=None, n_jobs=None
    ):
        self.estimator = estimator
        self.n_members = n_members
        self.method = method
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _build_members(self):
        """Unfitted members and the parameters given to each."""
        if isinstance(self.estimator, list):
            if not self.estimator:
                raise ValueError("estimator is an empty list; give at least one estimator.")
            for i, est in enumerate(self.estimator):
                if not (hasattr(est, "fit") and hasattr(est, "predict_proba")):
                    raise TypeError(
                        f"estimator[{i}] ({type(est).__name__}) must have fit and "
                        "predict_proba methods."
                    )
            return [clone(est) for est in self.estimator], [{} for _ in self.estimator]
        random_state = self.random_state
        if isinstance(random_state, np.random.Generator):
            random_state = int(random_state.integers(np.iinfo(np.int32).max))
        seeds = spawn_seeds(random_state, self.n_members)
        if self.estimator is None:
            params = [_draw_forest_params(s) for s in seeds]
            return [RandomForestClassifier(**p) for p in params], params
        params = [_seed_params(self.estimator, s) for s in seeds]
        if self.n_members > 1 and not params[0]:
            warnings.warn(
                f"{type(self.estimator).__name__} has no random_state parameter, so all "
                f"{self.n_members} members are identical and MMI is 0 everywhere. Give a "
                "randomised estimator or a list of different estimators.",
                UserWarning,
                stacklevel=3,
            )
        return [clone(self.estimator).set_params(**p) for p in params], params

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the members of the credal ensemble on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : MMIUncertainty
            The fitted ensemble.
        """
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] < 2:
            raise ValueError(
                "MMIUncertainty needs samples of at least 2 classes in the data, but the "
                f"data contains only one class: {self.classes_[0]!r}."
            )
        members, params = self._build_members()
        order = np.arange(len(members))
        if outer_n_jobs(self.n_jobs) != 1:
            members = [pin_n_jobs(est) for est in members]
            if self.estimator is None:
                # largest forests first (trees x features tried per split): the workers
                # then finish together instead of one waiting on a late large member
                cost = [p["n_estimators"] * p["max_features"] for p in params]
                order = np.argsort(-np.asarray(cost), kind="stable")
        fitted = parallel_map(
            _fit_member,
            [(members[i], X, y) for i in order],
            n_jobs=self.n_jobs,
            prefer="threads",
        )
        self.estimators_ = [None] * len(members)
        for i, est in zip(order, fitted):
            self.estimators_[i] = est
        self.member_params_ = params
        if len(self.estimators_) > 1 and params[0]:
            # probe midpoints of random pairs of training rows: interpolating members
            # (full-depth trees) agree on the training rows themselves
            pairs = np.random.default_rng(0).integers(0, X.shape[0], size=(2, _PROBE_ROWS))
            probes = 0.5 * (X[pairs[0]] + X[pairs[1]])
            if np.all(np.ptp(self._member_probas(probes), axis=1) <= 1e-12):
                warnings.warn(
                    "All members of the ensemble predict identical probabilities on probe "
                    "points between training rows, so MMI is likely 0 everywhere. The "
                    "estimator may be deterministic (its random_state unused); give a "
                    "randomised estimator or a list of different estimators.",
                    UserWarning,
                    stacklevel=2,
                )
        return self

    def _member_probas(self, X):
        """Probability tensor (n_samples, n_members, n_classes), aligned to classes_."""
        n_classes = self.classes_.shape[0]
        out = np.zeros((X.shape[0], len(self.estimators_), n_classes), dtype=np.float64)
        for j, est in enumerate(self.estimators_):
            proba = np.asarray(est.predict_proba(X), dtype=np.float64)
            member_classes = getattr(est, "classes_", None)
            if member_classes is None:
                if proba.shape[1] != n_classes:
                    raise ValueError(
                        f"Member {j} returns {proba.shape[1]} probability columns and has no "
                        f"classes_ attribute to align them with the {n_classes} classes."
                    )
                out[:, j, :] = proba
                continue
            cols = np.searchsorted(self.classes_, member_classes)
            cols = np.clip(cols, 0, n_classes - 1)
            if not np.array_equal(self.classes_[cols], member_classes):
                raise ValueError(
                    f"Member {j} has classes {member_classes!r} outside the fitted classes "
                    f"{self.classes_!r}."
                )
            out[:, j, cols] = proba
        return out

    def predict_credal_set(self, X):
        """Return the members' aligned class probabilities: the credal set per row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        probas : ndarray of shape (n_samples, n_members, n_classes)
            ``probas[i, j]`` is member ``j``'s probability vector at row ``i``, its columns
            in the order of ``classes_``. This is the input of the module's functions.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self._member_probas(X)

    def transform(self, X):
        """Maximum mean imprecision of the credal set at each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        mmi : ndarray of shape (n_samples, 1)
            MMI of each row in ``[0, 1]``, computed with ``method``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        probas = self._member_probas(X)
        # the members' probabilities were aligned above: no second validation pass
        mmi = _MMI_KERNELS[self.method](probas)
        if not np.all(np.isfinite(mmi)):
            raise ValueError(
                "A member returned NaN or infinite probabilities; MMI is undefined there."
            )
        return mmi.reshape(-1, 1)

    def predict_proba(self, X):
        """Centroid of the credal set: the mean of the members' probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Class probabilities, columns in the order of ``classes_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self._member_probas(X).mean(axis=1)

    def predict(self, X):
        """Class with the largest centroid probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy of :meth:`predict` on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test data.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        score : float
            Mean accuracy of ``self.predict(X)`` with respect to ``y``.
        """
        return super().score(X, y, sample_weight=sample_weight)

    def get_feature_names_out(self, input_features=None):
        """Name of the single output column of ``transform``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Ignored; checked against the names seen in ``fit`` when given.

        Returns
        -------
        feature_names_out : ndarray of str objects
            ``["mmi"]``.
        """
        check_is_fitted(self)
        if input_features is not None:
            from sklearn.utils.validation import _check_feature_names_in

            _check_feature_names_in(self, input_features)
        return np.asarray(["mmi"], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
