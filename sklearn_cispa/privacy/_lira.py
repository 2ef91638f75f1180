"""LiRAMembershipInference: likelihood-ratio membership inference with reference models."""

import hashlib
import numbers
import pickle
import sys
import warnings
from contextlib import contextmanager, nullcontext

import numpy as np
import scipy.sparse as sp
from joblib.parallel import get_active_backend
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context, clone
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.utils import ClassifierTags, _safe_indexing, get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _num_samples,
    check_is_fitted,
    column_or_1d,
    validate_data,
)
from threadpoolctl import threadpool_limits

from sklearn_cispa.metrics import tpr_at_fpr
from sklearn_cispa.privacy._scores import (
    _EPS,
    _FIX_VARIANCE,
    _OFFLINE_TESTS,
    _SIGMA_FLOOR,
    _SIGMA_TINY,
    _full_fit,
    _score_from_fit,
    logit_confidence,
)
from sklearn_cispa.utils import outer_n_jobs, parallel_map, pin_n_jobs, spawn_seeds

_N_JOBS = [
    Interval(numbers.Integral, None, -1, closed="right"),
    Interval(numbers.Integral, 1, None, closed="left"),
    None,
]


# ----------------------------------------------------------------------------------
# statistics of one fitted model (module level, so every joblib backend can ship them)
# ----------------------------------------------------------------------------------
def _class_columns(model_classes, classes):
    """Column of each of ``model_classes`` among ``classes`` (by label equality)."""
    lookup = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
    try:
        cols = [lookup[c] for c in np.asarray(model_classes).tolist()]
    except (KeyError, TypeError):
        raise ValueError(
            f"The model has classes {np.asarray(model_classes)!r} that are not among the "
            f"pool's classes {np.asarray(classes)!r}; the target (and every reference) must "
            "be trained on labels of the pool."
        ) from None
    return np.asarray(cols, dtype=np.intp)


def _aligned_proba(model, X, classes):
    """``predict_proba`` with columns aligned to ``classes`` by label (0 if unseen)."""
    proba = np.asarray(model.predict_proba(X), dtype=np.float64)
    model_classes = getattr(model, "classes_", None)
    if model_classes is None:
        if proba.shape[1] != classes.shape[0]:
            raise ValueError(
                f"The model returns {proba.shape[1]} probability columns and has no "
                f"classes_ to align them with the pool's {classes.shape[0]} classes."
            )
        return proba
    model_classes = np.asarray(model_classes)
    if model_classes.shape[0] != proba.shape[1]:
        raise ValueError("The model's classes_ do not match its predict_proba columns.")
    cols = _class_columns(model_classes, classes)
    out = np.zeros((proba.shape[0], classes.shape[0]))
    out[:, cols] = proba
    return out


def _aligned_logits(model, X, classes):
    z = np.asarray(model.decision_function(X), dtype=np.float64)
    model_classes = np.asarray(getattr(model, "classes_", classes))
    if z.ndim == 1:
        if model_classes.shape[0] != 2 or classes.shape[0] != 2:
            raise ValueError(
                "A 1-d decision_function is a binary logit; the model and the pool must "
                "both have 2 classes."
            )
        return z
    if model_classes.shape != classes.shape or not np.all(
        _class_columns(model_classes, classes) == np.arange(classes.shape[0])
    ):
        raise ValueError(
            "The model did not see every class of the pool and returns logits; their "
            "columns cannot be aligned. Give an estimator with predict_proba."
        )
    return z


def _label_codes(y, classes):
    """Index of each label of ``y`` in ``classes`` (by equality: 1.0 finds 1)."""
    lookup = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
    codes = np.fromiter((lookup.get(v, -1) for v in np.asarray(y).tolist()),
                        dtype=np.intp, count=len(y))
    return codes


def _statistic_one_view(model, X, y, classes, statistic):
    if callable(statistic):
        return np.asarray(statistic(model, X, y), dtype=np.float64)
    if statistic == "score_samples":
        return np.asarray(model.score_samples(X), dtype=np.float64)
    use_proba = hasattr(model, "predict_proba")
    cols = _label_codes(y, classes)
    if use_proba:
        proba = _aligned_proba(model, X, classes)
        unseen = proba[np.arange(len(y)), cols] == 0
        model_classes = getattr(model, "classes_", None)
        if model_classes is not None and len(model_classes) < len(classes) and np.any(unseen):
            warnings.warn(
                f"A model never saw {int(unseen.sum())} queried label(s) in training, so "
                "its probability of the true class is 0 there (statistic about -103.6).",
                UserWarning,
                stacklevel=2,
            )
        if statistic == "loss":
            p_y = proba[np.arange(len(y)), cols]
            return np.log(p_y + _EPS)
        return logit_confidence(proba=proba, y=cols, classes=np.arange(classes.shape[0]))
    z = _aligned_logits(model, X, classes)
    if statistic == "loss":
        if z.ndim == 1:
            s = np.where(cols == 1, z, -z)
            return -np.logaddexp(0.0, -s)
        return z[np.arange(len(y)), cols] - np.logaddexp.reduce(z, axis=1)
    return logit_confidence(logits=z, y=cols, classes=np.arange(classes.shape[0]))


def _views(X, augment, n_augment, aug_seed):
    if augment is None:
        return [X]
    return [augment(X, np.random.default_rng([aug_seed, a])) for a in range(n_augment)]


def _model_stats(model, X, y, classes, spec):
    """Statistic of a fitted model on (X, y), shape (n, n_augment), float64."""
    statistic, augment, n_augment, aug_seed = spec
    cols = []
    n_rows = _num_samples(X)
    for view in _views(X, augment, n_augment, aug_seed):
        s = _statistic_one_view(model, view, y, classes, statistic)
        if s.ndim == 0 or s.ndim > 2 or s.shape[0] != n_rows:
            raise ValueError(
                f"The statistic returned an array of shape {s.shape} for {n_rows} rows; "
                "it must have shape (n_rows,) or (n_rows, n_augment)."
            )
        cols.append(s.reshape(n_rows, -1))
    stats = np.concatenate(cols, axis=1)
    if stats.shape[1] != n_augment:
        raise ValueError(
            f"The statistic gives {stats.shape[1]} value(s) per row; n_augment={n_augment} "
            "expected."
        )
    if not np.all(np.isfinite(stats)):
        raise ValueError(
            "A model's statistic is NaN or infinite on some rows; check the estimator's "
            "predictions (it may have diverged) or the statistic callable."
        )
    return stats


def _uses_torch(estimator):
    objects = [estimator, *estimator.get_params(deep=True).values()]
    return any(type(o).__module__.split(".")[0] in {"skorch", "torch"} for o in objects)


@contextmanager
def _torch_threads(n_threads):
    """Limit torch's intra-op threads to ``n_threads`` (restored on exit)."""
    torch = sys.modules.get("torch")
    if torch is None or n_threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n_threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _train_one(estimator, X, y, rows, seed, classes, spec, keep_model, n_threads):
    """Fit one reference (or target) model on the pool rows ``rows`` (a boolean mask,
    by position) and compute its statistics on the whole pool.

    ``n_threads``: None in the calling process; in a parallel task the number of BLAS,
    OpenMP and torch threads the task may use."""
    names = [k for k in estimator.get_params(deep=True) if k.endswith("random_state")]
    model = clone(estimator)
    if names:
        model.set_params(**dict.fromkeys(names, int(seed)))
    limits = threadpool_limits(n_threads) if n_threads is not None else nullcontext()
    if _uses_torch(estimator):
        from sklearn_cispa.utils import torch_rng_context

        seeding = torch_rng_context(int(seed))
    else:
        seeding = nullcontext()
    positions = np.flatnonzero(rows)
    X_train = _safe_indexing(X, positions)
    with limits, _torch_threads(n_threads), seeding, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if y is None:
            model.fit(X_train)
        else:
            model.fit(X_train, y[positions])
        stats = _model_stats(model, X, y, classes, spec)
    # the warnings travel back with the result and are shown once by the caller
    messages = [(w.category, str(w.message)) for w in caught]
    return stats.astype(np.float32), (model if keep_model else None), messages


def _digest(*parts):
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(part)
    return h.digest()


def _element_bytes(value):
    """Bytes that identify one row that is not a numeric array row (a document, an
    object): strings by their UTF-8 text, anything else by its pickle."""
    if isinstance(value, str):
        return b"s" + value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return b"b" + value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return b"a" + np.ascontiguousarray(value, dtype=np.float64).tobytes()
    return b"p" + pickle.dumps(value, protocol=4)


def _row_digests(X, float_dtype=None):
    """One 16-byte digest per row of ``X``, from its content (never as floats unless
    the rows are numeric arrays).

    Numeric arrays (any number of dimensions: a row may be an image) are hashed by the
    bytes of each row cast to ``float_dtype`` (the pool's float type, so a float64 query
    of a float32 pool matches) and then to float64; sparse rows by their sorted indices
    and values; DataFrame rows by pandas' row hash; any other sequence (documents,
    objects) element by element (:func:`_element_bytes`).
    """
    n = _num_samples(X)
    out = np.empty(n, dtype="S16")
    if sp.issparse(X):
        X = sp.csr_array(X, copy=True)
        X.sum_duplicates()
        X.sort_indices()
        width = np.int64(X.shape[1]).tobytes()
        for i in range(n):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            out[i] = _digest(width, X.indices[lo:hi].astype(np.int64).tobytes(),
                             X.data[lo:hi].astype(np.float64).tobytes())
        return out
    if hasattr(X, "iloc") and hasattr(X, "columns"):
        import pandas as pd

        hashed = pd.util.hash_pandas_object(X, index=False).to_numpy(dtype=np.uint64)
        names = "\x1f".join(map(str, X.columns)).encode()
        for i in range(n):
            out[i] = _digest(names, hashed[i].tobytes())
        return out
    arr = None
    if isinstance(X, np.ndarray) or not isinstance(X, (list, tuple)) or (
        n and not isinstance(X[0], (str, bytes))
    ):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                arr = np.asarray(X)
        except (ValueError, TypeError):
            arr = None
    if arr is not None and arr.dtype.kind in "biufc" and arr.ndim >= 1:
        if float_dtype is not None and arr.dtype.kind != "c":
            arr = arr.astype(float_dtype, copy=False)
        arr = np.ascontiguousarray(arr.reshape(n, -1), dtype=(
            np.complex128 if arr.dtype.kind == "c" else np.float64))
        for i in range(n):
            out[i] = _digest(arr[i].tobytes())
        return out
    rows = arr if arr is not None and arr.ndim == 1 else X
    for i in range(n):
        out[i] = _digest(_element_bytes(rows[i]))
    return out


def _pool_float_dtype(X):
    """float32 for a float32 array pool, else float64 (the dtype queries are cast to)."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None and np.dtype(dtype) == np.float32:
        return np.float32
    return np.float64


def _balanced_keep(n_models, n_pool, rng):
    u = rng.random((n_models, n_pool))
    ranks = np.argsort(np.argsort(u, axis=0, kind="stable"), axis=0, kind="stable")
    return ranks < n_models // 2


class LiRAMembershipInference(MetaEstimatorMixin, BaseEstimator):
    """Likelihood-ratio membership inference (LiRA) against any scikit-learn classifier.

    ``fit(X, y)`` takes the candidate pool and trains ``n_reference`` clones of
    ``estimator`` (plus ``n_targets`` held-out targets), each on a random half of the
    pool, in parallel through :func:`sklearn_cispa.utils.parallel_map` (so a Dask
    cluster can train them). For each pool example the reference models that trained
    on it (IN) and those that did not (OUT) give two Gaussians of the model's
    confidence statistic; :meth:`score_samples` compares a target model's statistic
    under them (higher = more likely a member of the target's training set) and
    :meth:`evaluate` measures the attack on the held-out targets (AUC, TPR at low FPR,
    decisions for :func:`flip_rate`).

    Parameters
    ----------
    estimator : estimator object
        Classifier with ``fit`` and ``predict_proba`` or ``decision_function``
        (multiclass logits or a binary logit), or a model with ``fit(X)`` and
        ``score_samples(X)`` such as a language model; a ``Pipeline`` (a
        ``TfidfVectorizer`` on documents, a ``ColumnTransformer`` on a DataFrame) or a
        skorch ``NeuralNetClassifier`` works. It receives the pool rows as given
        (``fit`` never converts ``X``). It is cloned for every model; every parameter
        whose name ends in ``random_state`` gets the model's own seed (torch-based
        estimators are also fitted inside a seeded torch RNG context).
    n_reference : int, default=64
        Number of reference models M (at least 2). With the balanced design each
        example has M/2 IN and M/2 OUT references.
    n_targets : int, default=0
        Extra models from the same design, never used as references: the targets of
        :meth:`evaluate` (the last ``n_targets`` rows of ``keep_``).
    design : {"balanced", "bernoulli"}, default="balanced"
        "balanced": every example is IN for exactly ``M // 2`` references, chosen at
        random, and, drawn apart, for exactly ``T // 2`` targets (a fair coin when
        ``T = 1``); "bernoulli": independent fair coins per model and example.
    online : bool, default=True
        Score with the IN and OUT Gaussians (True) or the OUT Gaussian only (False,
        offline: no model needs to have trained on the queried example).
    fix_variance : bool or "global", default=True
        True: one sigma per side for all examples (pooled within-example standard
        deviation); False: per-example sigma; "global": the reference code's standard
        deviation of all the side's statistics (with its sigma_out bug fixed).
    offline_test : {"one-sided", "two-sided"}, default="one-sided"
        Offline test: the paper's one-sided z-value or the reference code's negated
        Gaussian log-density.
    statistic : {"auto", "logit", "loss", "score_samples"} or callable, default="auto"
        "logit": logit-scaled confidence of the true class (see
        :func:`logit_confidence`); "loss": minus the cross-entropy of the true class;
        "score_samples": the model's own ``score_samples(X)`` (for a language model such
        as :class:`~sklearn_cispa.language.TransformerLanguageModel`, the mean token
        log-likelihood of each document: minus its per-sequence loss, the statistic of
        Hayes et al.); "auto": "logit" for an estimator with ``predict_proba`` or
        ``decision_function``, else "score_samples"; a callable
        ``(fitted_model, X, y) -> (n,) or (n, n_augment)`` (``y`` is None when not
        given), higher = more member-like.
    augment : callable or None, default=None
        ``(X, rng) -> X_view`` applied ``n_augment`` times at query time, view ``a``
        with ``numpy.random.default_rng([seed, a])`` (the same views for every model);
        the log-likelihood ratios are averaged over views.
    n_augment : int, default=1
        Number of query views (with ``augment``), or of columns a callable statistic
        returns.
    n_jobs : int, default=None
        Models trained in parallel (joblib, through ``parallel_map``); None means 1
        unless in a ``joblib.parallel_config`` context; -1 all cores. Each parallel
        task limits BLAS, OpenMP and torch threads to 1 (or to the
        ``inner_max_num_threads`` of an active ``joblib.parallel_config``) and sets the
        clones' own ``n_jobs`` to 1.
    random_state : int, RandomState instance or None, default=None
        Seeds the keep design, the augmentation views and one seed per model, all
        drawn up front, so results do not depend on ``n_jobs`` or the backend.
    verbose : int, default=0
        When > 0, show progress over the models (a tqdm bar on a terminal, one line
        per chunk otherwise).
    keep_estimators : bool, default=False
        Keep the fitted references in ``estimators_``. They are needed only to score
        rows outside the pool in offline mode and for the identity check of a target;
        without them the memory is the statistics alone: ``4 * M * N * n_augment``
        bytes, 51 MB for 256 references on a 50,000-example pool (plus ``M * N`` bytes
        for ``keep_``).

    Attributes
    ----------
    keep_ : ndarray of bool, shape (n_reference + n_targets, n_pool)
        Training-set membership of each model (references first, then targets).
    estimators_ : list of estimators or None
        The fitted references when ``keep_estimators=True``, else None.
    ref_stats_ : ndarray of float32, shape (n_reference, n_pool, n_augment)
        Statistic of each reference on each pool example and view.
    mu_in_, mu_out_ : ndarray of shape (n_pool, n_augment)
        Medians of the IN and OUT statistics (NaN where a side has no reference).
    sigma_in_, sigma_out_ : float or ndarray of shape (n_pool, n_augment)
        Standard deviations (floats unless ``fix_variance=False``), floored at 1e-3 of
        the side's pooled sigma, plus 1e-30.
    n_in_, n_out_ : ndarray of int, shape (n_pool,)
        Number of IN and OUT references per example.
    targets_ : list of estimators
        The ``n_targets`` fitted targets.
    target_keep_ : ndarray of bool, shape (n_targets, n_pool)
        Training-set membership of the targets.
    target_stats_ : ndarray of float32, shape (n_targets, n_pool, n_augment)
        The targets' statistics.
    statistic_ : str or callable
        The statistic in use ("auto" resolved).
    classes_ : ndarray of shape (n_classes,)
        Labels of the pool (only when ``fit`` was given ``y``).
    n_features_in_ : int
        Number of features of the pool (only when ``X`` has a second dimension, not for
        a list of documents).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features, when ``X`` has string column names.

    See Also
    --------
    lira_scores : The stateless scores from statistic matrices.
    flip_rate : Per-example instability of membership decisions across targets.
    sklearn_cispa.metrics.tpr_at_fpr : TPR at a low false-positive rate.

    Notes
    -----
    Departures from the reference code (tensorflow/privacy ``research/mi_lira_2021``):
    sigma_out is computed from the OUT statistics (the reference's fixed-variance path
    uses std(IN) for both); the default fixed sigma pools within-example residuals
    instead of taking the standard deviation of the whole matrix (kept as
    ``fix_variance="global"``); every reference of every example is used (the reference
    truncates all examples to the minimum count); each sigma is floored at 1e-3 of its
    side's pooled sigma (the reference adds 1e-30 only), so saturated examples do not
    give infinite scores; the offline default is the paper's one-sided test, returned
    as a z-value; the balanced design is drawn apart for the references and the targets
    (in the reference's joint design a target's membership shifts the references' IN
    count, which lowered the null AUC to 0.478 at 8 references). Scores are "higher =
    member" everywhere.

    The estimator tags say "classifier" (it is fitted on labelled data, so scikit-learn's
    tools split its data stratified), but it has no ``predict`` or ``score``: to tune the
    audited model, search over the wrapped estimator and pass the search as the target.

    The pool is indexed by position only: each model is fitted on
    ``sklearn.utils._safe_indexing(X, rows)`` of the pool as given (a list of documents,
    a DataFrame, a sparse matrix, an array of images), so rows that are documents or
    objects are never converted to floats. Rows of ``score_samples`` are matched to the
    pool by a hash of their content (numeric rows by their bytes as floats, strings by
    their text, DataFrame rows by pandas' row hash, other objects by their pickle) and
    the label's index in ``classes_`` (so the label 1.0 finds a pool row labelled 1;
    pass ``index=`` to be explicit); a duplicated (row, label) pair maps to its first
    occurrence. A target is refused as a copy of a reference when its statistics on the
    queried rows equal those of exactly one reference; when several references share
    them (saturated probabilities of a grown tree or 1-NN on a few rows) the rows cannot
    tell models apart and the target is scored. A pool so small that some model would
    train on no example raises a ``ValueError``. Row order: the keep design is drawn by
    pool position, so permuting the pool changes which models train on which example.

    References
    ----------
    .. [1] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis, F. Tramer. "Membership
       Inference Attacks From First Principles". IEEE S&P 2022, arXiv:2112.03570.
    .. [2] J. Hayes et al. "Exploring the Limits of Strong Membership Inference Attacks
       on Large Language Models". NeurIPS 2025, arXiv:2505.18773.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_cispa.privacy import LiRAMembershipInference
    >>> X, y = load_digits(return_X_y=True)
    >>> X, y = X[:200] / 16, y[:200]
    >>> lira = LiRAMembershipInference(LogisticRegression(C=100, max_iter=300),
    ...                                n_reference=8, n_targets=2, random_state=0)
    >>> lira.fit(X, y).ref_stats_.shape
    (8, 200, 1)
    >>> result = lira.evaluate(fprs=(0.01,))
    >>> bool(result["auc"] > 0.5)
    True
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit"])],
        "n_reference": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_targets": [Interval(numbers.Integral, 0, None, closed="left")],
        "design": [StrOptions({"balanced", "bernoulli"})],
        "online": ["boolean"],
        "fix_variance": _FIX_VARIANCE,
        "offline_test": [_OFFLINE_TESTS],
        "statistic": [StrOptions({"auto", "logit", "loss", "score_samples"}), callable],
        "augment": [callable, None],
        "n_augment": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_jobs": _N_JOBS,
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "keep_estimators": ["boolean"],
    }

    def __init__(
        self,
        estimator,
        n_reference=64,
        n_targets=0,
        design="balanced",
        online=True,
        fix_variance=True,
        offline_test="one-sided",
        statistic="auto",
        augment=None,
        n_augment=1,
        n_jobs=None,
        random_state=None,
        verbose=0,
        keep_estimators=False,
    ):
        self.estimator = estimator
        self.n_reference = n_reference
        self.n_targets = n_targets
        self.design = design
        self.online = online
        self.fix_variance = fix_variance
        self.offline_test = offline_test
        self.statistic = statistic
        self.augment = augment
        self.n_augment = n_augment
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.keep_estimators = keep_estimators

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        # labels are needed by the confidence statistics, not by "score_samples" (a
        # language model's documents carry no labels)
        est = self.estimator
        unlabelled = self.statistic == "score_samples" or (
            self.statistic == "auto"
            and not (hasattr(est, "predict_proba") or hasattr(est, "decision_function"))
        )
        tags.target_tags.required = not unlabelled
        # the pool reaches the estimator as given: it accepts what the estimator accepts
        inner = get_tags(est).input_tags
        tags.input_tags.sparse = inner.sparse
        tags.input_tags.allow_nan = inner.allow_nan
        tags.input_tags.string = inner.string
        # it audits classifiers and is fitted on labelled data, like a classifier; it has
        # no predict (see the Notes)
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        return tags

    def _spec(self):
        return (self.statistic_, self.augment, self.n_augment, self._aug_seed)

    def _resolve_statistic(self):
        """The statistic in use: ``statistic`` with "auto" resolved for the estimator."""
        est = self.estimator
        is_classifier = hasattr(est, "predict_proba") or hasattr(est, "decision_function")
        if callable(self.statistic):
            return self.statistic
        if self.statistic == "auto":
            if is_classifier:
                return "logit"
            if hasattr(est, "score_samples"):
                return "score_samples"
            raise TypeError(
                f"estimator {type(est).__name__} has neither predict_proba nor "
                "decision_function (nor score_samples), so statistic='auto' has nothing to "
                "compute; give a probabilistic classifier, a model with score_samples (a "
                "language model) or a callable statistic."
            )
        if self.statistic == "score_samples":
            if not hasattr(est, "score_samples"):
                raise TypeError(
                    f"statistic='score_samples' needs an estimator with score_samples; "
                    f"{type(est).__name__} has none."
                )
            return "score_samples"
        if not is_classifier:
            raise TypeError(
                f"estimator {type(est).__name__} has neither predict_proba nor "
                f"decision_function, so statistic={self.statistic!r} cannot be computed; "
                "give a probabilistic classifier, statistic='score_samples' for a model "
                "that scores rows (a language model) or a callable statistic."
            )
        return self.statistic

    def _check_estimator(self):
        if self.augment is None and self.n_augment > 1 and not callable(self.statistic):
            raise ValueError(
                f"n_augment={self.n_augment} needs an augment callable (or a callable "
                "statistic that returns n_augment columns)."
            )
        return self._resolve_statistic()

    def _needs_labels(self):
        return self.statistic_ in ("logit", "loss")

    def _check_y(self, y, n_rows, *, fitting):
        """Labels as a 1-d array (None when not given and not needed)."""
        if y is None:
            if self._needs_labels():
                raise ValueError(
                    f"{type(self).__name__} with statistic={self.statistic_!r} requires y "
                    "to be passed, but the target y is None (the statistic is the "
                    "confidence of the true label; statistic='score_samples' or a callable "
                    "needs no labels)."
                )
            return None
        y = column_or_1d(np.asarray(y), warn=True)
        if y.shape[0] != n_rows:
            raise ValueError(f"y has {y.shape[0]} labels for {n_rows} rows.")
        if fitting:
            try:
                np.unique(y)
            except TypeError:
                raise ValueError(
                    "The labels y mix types that cannot be ordered (for example str and "
                    f"int): {sorted({type(v).__name__ for v in y.tolist()})}; give labels "
                    "of one type."
                ) from None
            if self._needs_labels():
                check_classification_targets(y)
        return y

    def _run(self, tasks):
        """Run the training tasks, with a progress display when verbose."""
        if not self.verbose:
            return parallel_map(_train_one, tasks, n_jobs=self.n_jobs)
        n_workers = outer_n_jobs(self.n_jobs)
        chunk = max(n_workers, -(-len(tasks) // 10))
        bar = None
        if sys.stderr.isatty():
            try:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(tasks), desc="LiRA models", unit="model", file=sys.stderr)
            except ImportError:  # pragma: no cover
                bar = None
        out = []
        for start in range(0, len(tasks), chunk):
            out += parallel_map(_train_one, tasks[start : start + chunk], n_jobs=self.n_jobs)
            if bar is not None:
                bar.update(len(tasks[start : start + chunk]))
            else:
                print(f"LiRA: trained {len(out)}/{len(tasks)} models", file=sys.stderr)
        if bar is not None:
            bar.close()
        return out

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Train the reference (and target) models on random halves of the pool.

        Parameters
        ----------
        X : array-like, sparse matrix, list of str or DataFrame of shape (n_pool, ...)
            The candidate pool, in any form the estimator takes (numeric arrays of any
            number of dimensions, documents, a DataFrame with string columns). It is
            passed to the estimator as given, indexed by position.
        y : array-like of shape (n_pool,), default=None
            Labels of the pool; required when the statistic uses them ("logit",
            "loss", and "auto" for a classifier).

        Returns
        -------
        self : LiRAMembershipInference
            The fitted attack.
        """
        validate_data(self, X, skip_check_array=True)
        n_pool = _num_samples(X)
        self.statistic_ = self._check_estimator()
        y = self._check_y(y, n_pool, fitting=True)
        if n_pool < 2:
            raise ValueError(
                f"The pool needs at least 2 examples; got n_samples={n_pool}."
            )
        if sp.issparse(X) and X.format not in ("csr", "csc"):
            X = X.tocsr()  # row indexing (the models' subsets) needs CSR or CSC
        if y is not None:
            self.classes_ = np.unique(y)
            if self._needs_labels() and self.classes_.shape[0] < 2:
                raise ValueError(
                    "LiRAMembershipInference needs a pool with at least 2 classes; the "
                    f"data contains only one class: {self.classes_[0]!r}."
                )
        elif hasattr(self, "classes_"):
            del self.classes_
        n_models = self.n_reference + self.n_targets
        seeds = spawn_seeds(self.random_state, n_models + 2)
        design_rng = np.random.default_rng(seeds[0])
        self._aug_seed = seeds[1]
        if self.design == "balanced":
            # references and targets are balanced apart: in one joint design a target's
            # membership changes how many references are IN (M//2 + ... - 1 when it is
            # IN), the IN median then comes from fewer models and is noisier, and the
            # leave-target-out AUC of a model that memorises nothing fell to 0.478 at
            # M = 8 (0.492 at M = 16) instead of 0.5
            keep = _balanced_keep(self.n_reference, n_pool, design_rng)
            if self.n_targets >= 2:
                targets = _balanced_keep(self.n_targets, n_pool, design_rng)
            else:
                targets = design_rng.random((self.n_targets, n_pool)) < 0.5
            keep = np.vstack([keep, targets])
        else:
            keep = design_rng.random((n_models, n_pool)) < 0.5
        empty = np.flatnonzero(~keep.any(axis=1))
        if empty.size:
            raise ValueError(
                f"The pool of {n_pool} examples is too small for "
                f"{n_models} models: {empty.size} model(s) would train on no example "
                f"(design={self.design!r}). Use a larger pool (each model trains on "
                "about half of it)."
            )
        parallel = outer_n_jobs(self.n_jobs) != 1
        # a parallel task keeps to one BLAS/OpenMP/torch thread, or to the
        # inner_max_num_threads of an active joblib.parallel_config
        n_threads = None
        if parallel:
            backend, _ = get_active_backend()
            n_threads = getattr(backend, "inner_max_num_threads", None) or 1
        classes = getattr(self, "classes_", None)
        estimator = clone(self.estimator)
        inner_jobs = [
            v for k, v in estimator.get_params(deep=True).items()
            if (k == "n_jobs" or k.endswith("__n_jobs")) and v not in (None, 1)
        ]
        if parallel and inner_jobs:
            # only when set: some estimators deprecate passing n_jobs at all
            estimator = pin_n_jobs(estimator)
        spec = self._spec()
        tasks = []
        for m in range(n_models):
            keep_model = m >= self.n_reference or self.keep_estimators
            tasks.append(
                (estimator, X, y, keep[m], seeds[2 + m], classes, spec, keep_model,
                 n_threads)
            )
        results = self._run(tasks)
        seen = {}
        for r in results:
            for category, message in r[2]:
                seen.setdefault((category, message), 0)
                seen[(category, message)] += 1
        for (category, message), count in seen.items():
            warnings.warn(f"{count} of {n_models} models: {message}", category, stacklevel=2)
        M = self.n_reference
        self.keep_ = keep
        self.ref_stats_ = np.stack([r[0] for r in results[:M]])
        self.estimators_ = [r[1] for r in results[:M]] if self.keep_estimators else None
        self.targets_ = [r[1] for r in results[M:]]
        self.target_keep_ = keep[M:]
        self.target_stats_ = np.stack([r[0] for r in results[M:]]) if self.n_targets else (
            np.zeros((0, n_pool, self.n_augment), dtype=np.float32)
        )
        self._fit_stats = _full_fit(keep[:M], self.ref_stats_.astype(np.float64),
                                    self.fix_variance)
        f = self._fit_stats
        self.mu_in_, self.mu_out_ = f["mu_in"], f["mu_out"]
        self.sigma_in_, self.sigma_out_ = f["sigma_in"], f["sigma_out"]
        self.n_in_, self.n_out_ = f["n_in"], f["n_out"]
        self._pool_float = _pool_float_dtype(X)
        self._pool_digests = _row_digests(X, self._pool_float)
        self._pool_codes = None if y is None else _label_codes(y, self.classes_)
        self._key_index = self._index_of(self._pool_digests, self._pool_codes)
        # rows queried without labels (a statistic that needs none) match on the row alone
        self._digest_index = (self._key_index if y is None or self._needs_labels()
                              else self._index_of(self._pool_digests, None))
        self._check_design_warnings()
        return self

    def _check_design_warnings(self):
        empty = int(np.sum((self.n_in_ == 0) | (self.n_out_ == 0)))
        if empty:
            warnings.warn(
                f"{empty} pool example(s) have no IN or no OUT reference model "
                f"(design={self.design!r}, n_reference={self.n_reference}); their scores "
                "use fallbacks. Use more references (and design='balanced').",
                UserWarning,
                stacklevel=3,
            )

    @staticmethod
    def _index_of(digests, codes):
        """First pool position of each row digest (with its label code when given)."""
        first = {}
        keys = digests.tolist() if codes is None else zip(digests.tolist(), codes.tolist())
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        return first

    def _match_rows(self, X, codes, index):
        """Pool positions of the rows (-1 where not in the pool).

        ``codes`` are the label codes of the rows (None when no labels were given).
        """
        n_rows = _num_samples(X)
        digests = _row_digests(X, self._pool_float)
        if codes is not None and self._pool_codes is None:
            codes = None  # the pool has no labels to match
        if index is not None:
            index = column_or_1d(np.asarray(index))
            if index.shape[0] != n_rows:
                raise ValueError(f"index has {index.shape[0]} entries for {n_rows} rows.")
            if not np.issubdtype(index.dtype, np.integer):
                raise ValueError("index must hold integer pool positions.")
            n_pool = self.keep_.shape[1]
            if np.any((index < 0) | (index >= n_pool)):
                raise ValueError(f"index must lie in [0, {n_pool}); got values outside.")
            bad = digests != self._pool_digests[index]
            if codes is not None:
                bad |= codes != self._pool_codes[index]
            if np.any(bad):
                raise ValueError(
                    f"{int(bad.sum())} row(s) (with their labels) differ from the pool rows "
                    "at the given index."
                )
            return index.astype(np.intp)
        if codes is None:
            lookup = self._digest_index
            keys = digests.tolist()
        else:
            lookup, keys = self._key_index, list(zip(digests.tolist(), codes.tolist()))
        return np.array([lookup.get(k, -1) for k in keys], dtype=np.intp)

    def _check_not_reference(self, target, stats, idx):
        if self.estimators_ is not None and any(target is est for est in self.estimators_):
            raise ValueError(
                "target is one of the reference models (estimators_); a target must not "
                "be among the references. Use a model trained apart (or one of targets_)."
            )
        pos = idx >= 0
        if np.any(pos):
            t = stats[pos].astype(np.float32)
            ref = self.ref_stats_[:, idx[pos], :]
            same = np.all(ref == t[None], axis=(1, 2))
            # the match identifies a reference only when no other reference has the same
            # statistics on these rows: a model with saturated or discrete probabilities
            # (a grown tree, 1-NN: every member at the clipped 103.6) matches many
            # references on a few rows without being any of them
            if np.sum(same) == 1:
                raise ValueError(
                    f"target gives exactly the statistics of reference model "
                    f"{int(np.argmax(same))} on the queried pool rows: it is (a copy of) a "
                    "reference. A target must not be among the references."
                )

    def score_samples(self, X, y=None, target=None, index=None):
        """Membership score of each row for ``target``: higher = more likely a member.

        Parameters
        ----------
        X : array-like, list of str or DataFrame of shape (n_samples, ...)
            Rows to score, in any form the estimator takes. Online mode needs rows of
            the pool; offline mode also accepts other rows (all references are then
            OUT; needs ``keep_estimators=True``).
        y : array-like of shape (n_samples,), default=None
            Their labels; required when the statistic uses them ("logit", "loss").
        target : estimator object
            The fitted model under audit (never one of the references). Required.
        index : array-like of int, shape (n_samples,), default=None
            Pool positions of the rows; by default rows are matched to the pool by a
            hash of their content (and label).

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            LiRA scores (log-likelihood ratios online, z-values or negated
            log-densities offline).
        """
        check_is_fitted(self)
        if target is None:
            raise TypeError(
                "score_samples needs target=, the fitted model under audit (for example "
                "one of targets_, or a model trained apart)."
            )
        validate_data(self, X, reset=False, skip_check_array=True)
        n_rows = _num_samples(X)
        y = self._check_y(y, n_rows, fitting=False)
        codes = None
        if y is not None and hasattr(self, "classes_"):
            codes = _label_codes(y, self.classes_)
            unknown = codes < 0
            if np.any(unknown):
                values = sorted({repr(v) for v in y[unknown].tolist()})[:5]
                raise ValueError(
                    f"{int(unknown.sum())} label(s) of y are not among the pool's classes_ "
                    f"{self.classes_!r}: {', '.join(values)}. Query with the labels the "
                    "attack (and the target) was trained on."
                )
        elif y is not None and self._needs_labels():
            raise ValueError("The attack was fitted without labels; query with y=None.")
        if not callable(self.statistic_):
            if self.statistic_ == "score_samples":
                if not hasattr(target, "score_samples"):
                    raise TypeError(
                        "statistic='score_samples' needs a target with score_samples; "
                        f"{type(target).__name__} has none."
                    )
            elif not (hasattr(target, "predict_proba") or hasattr(target, "decision_function")):
                raise TypeError("target has neither predict_proba nor decision_function.")
        if (self._pool_float is np.float32 and isinstance(X, np.ndarray)
                and X.dtype.kind == "f"):
            X = X.astype(np.float32, copy=False)  # as the pool, so a target scores alike
        idx = self._match_rows(X, codes, index)
        missing = idx < 0
        if np.any(missing) and self.online:
            raise ValueError(
                f"{int(missing.sum())} of {n_rows} row(s) are not in the pool the attack "
                "was fitted on; online LiRA needs pool rows (fit on a pool that contains "
                "them, or use online=False)."
            )
        if self.estimators_ is not None and any(target is est for est in self.estimators_):
            self._check_not_reference(target, np.zeros((0, 1)), np.zeros(0, dtype=np.intp))
        # rounded like the stored statistics, so a target scores as in evaluate
        stats = _model_stats(target, X, y, getattr(self, "classes_", None), self._spec())
        stats = stats.astype(np.float32).astype(np.float64)
        self._check_not_reference(target, stats, idx)
        scores = np.empty(n_rows)
        pos = ~missing
        if np.any(pos):
            scores[pos] = _score_from_fit(
                self._fit_stats, stats[pos], self.online, self.offline_test, idx[pos]
            )
        if np.any(missing):
            rows = np.flatnonzero(missing)
            scores[missing] = self._score_unseen(
                _safe_indexing(X, rows), None if y is None else y[rows], stats[missing]
            )
        return scores

    def _score_unseen(self, X, y, target_stats):
        """Offline scores of rows outside the pool: every reference is OUT."""
        n_rows = _num_samples(X)
        if self.estimators_ is None:
            raise ValueError(
                f"{n_rows} row(s) are not in the pool; scoring them needs the reference "
                "models: fit with keep_estimators=True."
            )
        classes = getattr(self, "classes_", None)
        ref = np.stack(
            [_model_stats(est, X, y, classes, self._spec()) for est in self.estimators_]
        ).astype(np.float32).astype(np.float64)
        mu = np.median(ref, axis=0)
        pooled = self._fit_stats["pooled_out"]
        if self.fix_variance is False:
            sigma = np.maximum(ref.std(axis=0), _SIGMA_FLOOR * pooled) + _SIGMA_TINY
        else:
            sigma = self.sigma_out_
        fit = {
            "mu_in": np.full_like(mu, np.nan), "mu_out": mu, "sigma_in": sigma,
            "sigma_out": sigma, "n_in": np.zeros(n_rows, dtype=np.int64),
            "n_out": np.full(n_rows, ref.shape[0]), "pooled_out": pooled,
        }
        return _score_from_fit(fit, target_stats, False, self.offline_test)

    def evaluate(self, fprs=(0.001, 0.01)):
        """Leave-target-out evaluation of the attack on the held-out targets.

        Every pool example is scored for every target in ``targets_`` (with the cached
        statistics); the results are pooled over targets, as the reference does.

        Parameters
        ----------
        fprs : tuple of float, default=(0.001, 0.01)
            False-positive rates at which the TPR (strict, see
            :func:`~sklearn_cispa.metrics.tpr_at_fpr`) and the decisions are given.

        Returns
        -------
        result : dict
            ``auc``, ``balanced_accuracy`` (best over thresholds), ``tpr_at_fpr``
            (dict fpr -> TPR), ``decisions`` (dict fpr -> bool array (n_targets,
            n_pool), each target thresholded on its own non-members so that at most
            ``floor(fpr * n_non_members)`` of them are flagged), ``scores`` and
            ``membership`` (n_targets, n_pool), and the loss (global threshold)
            baseline that ranks by the target's statistic alone: ``baseline_auc``,
            ``baseline_tpr_at_fpr``.
        """
        check_is_fitted(self)
        if self.n_targets < 1:
            raise ValueError("evaluate needs held-out targets: fit with n_targets >= 1.")
        fprs = tuple(float(f) for f in np.atleast_1d(fprs))
        if not fprs or any(not (0 < f <= 1) for f in fprs):
            raise ValueError(f"fprs must be rates in (0, 1]; got {fprs}.")
        stats = self.target_stats_.astype(np.float64)
        scores = np.stack(
            [_score_from_fit(self._fit_stats, s, self.online, self.offline_test) for s in stats]
        )
        membership = self.target_keep_.astype(bool)
        labels = membership.ravel()
        if labels.all() or not labels.any():
            raise ValueError("The targets' pool has only members or only non-members.")
        flat = scores.ravel()
        if not np.all(np.isfinite(flat)):
            raise ValueError("Some scores are not finite; see the warnings above.")
        fpr_curve, tpr_curve, _ = roc_curve(labels, flat)
        baseline = stats.mean(axis=2)
        decisions = {}
        for f in fprs:
            d = np.zeros_like(membership)
            for t in range(scores.shape[0]):
                non = np.sort(scores[t][~membership[t]])[::-1]
                k = int(np.floor(f * non.size + 1e-9))
                tau = non[k] if k < non.size else -np.inf
                d[t] = scores[t] > tau
            decisions[f] = d
        return {
            "auc": float(roc_auc_score(labels, flat)),
            "balanced_accuracy": float(np.max(1 - (fpr_curve + (1 - tpr_curve)) / 2)),
            "tpr_at_fpr": {f: tpr_at_fpr(labels, flat, fpr=f) for f in fprs},
            "decisions": decisions,
            "scores": scores,
            "membership": membership,
            "baseline_auc": float(roc_auc_score(labels, baseline.ravel())),
            "baseline_tpr_at_fpr": {f: tpr_at_fpr(labels, baseline.ravel(), fpr=f) for f in fprs},
        }
