"""Latent Bayesian optimisation over a fixed set of candidate suffixes (GASP's search).

Implemented from the project's specification (``specs/gasp.md``) only; no code of the
GPL reference was read or reused.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.spatial.distance import pdist
from scipy.special import ndtr
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
from sklearn.manifold import TSNE
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.validation import check_array

from sklearn_cispa.utils import optional_import, spawn_seeds


def join_prompt(goal, candidate):
    """Goal + " " + candidate; no space before a leading "."; the candidate alone if no goal."""
    if not goal:
        return candidate
    if candidate.startswith("."):
        return goal + candidate
    return goal + " " + candidate


def _as_candidates(candidates, name="candidates"):
    """List of candidate strings from a list of str or a 2-D array (one candidate per row)."""
    if isinstance(candidates, str):
        raise TypeError(
            f"{name} must be a list of strings, got a single string; wrap it in a list"
        )
    arr = np.asarray(candidates, dtype=object)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 2:  # tabular candidates: each row's values, written as text
        numeric = check_array(np.asarray(candidates), dtype=np.float64,
                              ensure_all_finite=False, input_name=name)
        return [" ".join(repr(float(v)) for v in row) for row in numeric]
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D list of strings, got an array with {arr.ndim} dimensions"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: pass at least one string")
    out = []
    for i, c in enumerate(arr):
        if not isinstance(c, str):
            raise TypeError(f"{name} must be strings; {name}[{i}] is {type(c).__name__}")
        out.append(c)
    return out


def _dedup(candidates):
    """Unique candidates keeping the first occurrence, and their positions."""
    seen = {}
    for i, c in enumerate(candidates):
        seen.setdefault(c, i)
    keep = sorted(seen.values())
    return [candidates[i] for i in keep], np.asarray(keep, dtype=np.intp)


def _median_distance(Z):
    if Z.shape[0] < 2:
        return 1.0
    d = pdist(Z)
    d = d[d > 0]
    m = float(np.median(d)) if d.size else 1.0
    return m if np.isfinite(m) and m > 0 else 1.0


def default_gp(Z, n_observed, seed):
    """The scikit-learn form of the default GP (spec 3.3), for users who want to start from it.

    Matern 5/2 with the median pairwise latent distance m as length scale (bounds
    [0.1 m, 10 m]) times a constant, plus a white-noise term, with ``normalize_y``;
    hyperparameters are fixed below 5 observations and fitted with 2 restarts from 5 on.
    The search itself uses :class:`MaternGP`, the same model in numpy with the
    hyperparameters chosen on a grid (much cheaper per call).
    """
    m = _median_distance(Z)
    kernel = ConstantKernel(1.0) * Matern(
        length_scale=m, length_scale_bounds=(0.1 * m, 10.0 * m), nu=2.5
    ) + WhiteKernel(1e-3)
    if n_observed < 5:
        return GaussianProcessRegressor(kernel, optimizer=None, normalize_y=True)
    return GaussianProcessRegressor(
        kernel, n_restarts_optimizer=2, normalize_y=True, random_state=seed
    )


def _matern(D, length_scale, nu):
    r = D / length_scale
    if nu == 0.5:
        return np.exp(-r)
    if nu == 1.5:
        r = np.sqrt(3.0) * r
        return (1.0 + r) * np.exp(-r)
    if nu == 2.5:
        r = np.sqrt(5.0) * r
        return (1.0 + r + r * r / 3.0) * np.exp(-r)
    return np.exp(-0.5 * r * r)  # nu = inf: the squared exponential


def _distances(A, B):
    d = np.sum(A * A, axis=1)[:, None] + np.sum(B * B, axis=1)[None, :] - 2.0 * A @ B.T
    return np.sqrt(np.maximum(d, 0.0))


class MaternGP(BaseEstimator):
    """Numpy Gaussian process: constant * Matern + white noise, with ``normalize_y``.

    The default surrogate of :class:`LatentBOSuffixSearch`: the model of
    :func:`default_gp` without scikit-learn's gradient optimiser. Below ``fit_from``
    observations the length scale is ``length_scale`` and the constant 1; from
    ``fit_from`` on both are chosen by the log marginal likelihood on a fixed grid (13
    length scales from 0.1 to 10 times ``length_scale``, 5 constants from 0.25 to 4),
    which is deterministic and costs a few small Cholesky factorisations.

    Parameters
    ----------
    length_scale : float or None, default=None
        Base length scale; None: the search sets the median pairwise latent distance.
        At fit time None means the median distance of the training points.
    nu : {0.5, 1.5, 2.5, inf}, default=2.5
        Smoothness of the Matern kernel (inf: the squared exponential).
    noise : float, default=1e-3
        White-noise variance, in units of the normalised scores.
    fit_from : int, default=5
        Number of observations from which the hyperparameters are fitted.

    Attributes
    ----------
    length_scale_, constant_ : float
        The hyperparameters used.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.redteam._search import MaternGP
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> gp = MaternGP(length_scale=1.0).fit(X, [0.0, 1.0, 0.0])
    >>> mu, sd = gp.predict(X, return_std=True)
    >>> np.round(mu, 2).tolist(), bool(sd.max() < 0.1)
    ([0.0, 1.0, 0.0], True)
    """

    _parameter_constraints = {
        "length_scale": [Interval(Real, 0, None, closed="neither"), None],
        "nu": [Options(Real, {0.5, 1.5, 2.5, np.inf})],
        "noise": [Interval(Real, 0, None, closed="neither")],
        "fit_from": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, length_scale=None, nu=2.5, noise=1e-3, fit_from=5):
        self.length_scale = length_scale
        self.nu = nu
        self.noise = noise
        self.fit_from = fit_from

    def fit(self, X, y):
        """Fit the GP to observations.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Latent points.
        y : array-like of shape (n_samples,)
            Scores.

        Returns
        -------
        self : MaternGP
            The fitted GP.
        """
        # private and called once per acquisition step: light checks only (the search's
        # latent points are already validated)
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != X.shape[0] or not np.all(np.isfinite(y)):
            raise ValueError("y must be finite with one value per row of X")
        self.mean_ = float(y.mean())
        sd = float(y.std())
        self.std_ = sd if sd > 0 else 1.0
        yn = (y - self.mean_) / self.std_
        D = _distances(X, X)
        base = (_median_distance(X) if self.length_scale is None
                else float(self.length_scale))
        if len(y) < self.fit_from:
            ells, consts = np.array([base]), np.array([1.0])
        else:
            ells = np.repeat(base * np.geomspace(0.1, 10.0, 13), 5)
            consts = np.tile([0.25, 0.5, 1.0, 2.0, 4.0], 13)
        # every grid point at once: one stacked Cholesky and one stacked solve
        K = consts[:, None, None] * _matern(D[None], ells[:, None, None], self.nu)
        K += self.noise * np.eye(len(y))[None]
        L = np.linalg.cholesky(K)
        alpha = np.linalg.solve(K, np.broadcast_to(yn[:, None], (len(ells), len(y), 1)))
        lml = (-0.5 * np.einsum("i,gi->g", yn, alpha[..., 0])
               - np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1))
        g = int(np.argmax(lml))
        self.length_scale_, self.constant_ = float(ells[g]), float(consts[g])
        self._L, self._alpha = L[g], alpha[g, :, 0]
        self.X_ = X
        return self

    def predict(self, X, return_std=False):
        """Posterior mean (and standard deviation of the latent function).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Latent points.
        return_std : bool, default=False
            Also return the posterior standard deviation (without the noise).

        Returns
        -------
        mu : ndarray of shape (n_samples,)
        sd : ndarray of shape (n_samples,), only with ``return_std=True``
        """
        X = np.asarray(X, dtype=np.float64)
        Ks = self.constant_ * _matern(_distances(X, self.X_), self.length_scale_, self.nu)
        mu = Ks @ self._alpha * self.std_ + self.mean_
        if not return_std:
            return mu
        v = np.linalg.solve(self._L, Ks.T)
        var = np.maximum(self.constant_ - np.sum(v * v, axis=0), 1e-12)
        return mu, np.sqrt(var) * self.std_


def acquisition(mu, sd, f_best, acq_func, xi, kappa):
    """Acquisition values for minimisation, larger is better (LCB returned negated)."""
    sd = np.maximum(np.asarray(sd, dtype=float), 1e-12)
    mu = np.asarray(mu, dtype=float)
    if acq_func == "LCB":
        return -(mu - kappa * sd)
    improvement = f_best - mu - xi
    u = improvement / sd
    # scipy.special.ndtr and the closed-form density: scipy.stats.norm's per-call
    # argument checks were an eighth of a small search's time
    if acq_func == "PI":
        return ndtr(u)
    return improvement * ndtr(u) + sd * np.exp(-0.5 * u * u) / np.sqrt(2.0 * np.pi)


class _ObjectiveError(RuntimeError):
    pass


class _SearchBase(BaseEstimator):
    """Bookkeeping shared by the searches: queries, cache, results."""

    def _reset(self, candidates, goal, n_repeated):
        if not np.isfinite(self.unqueried_score):
            raise ValueError(f"unqueried_score must be finite, got {self.unqueried_score}")
        self.candidates_ = candidates
        self.goal_ = goal
        self.n_repeated_candidates_ = n_repeated
        self._score_of = {}
        self._order = []
        self.history_ = []

    def _query(self, index):
        """Score candidate ``index`` (never twice); return (score, was_duplicate)."""
        if index in self._score_of:
            return self._score_of[index], True
        candidate = self.candidates_[index]
        prompt = join_prompt(self.goal_, candidate)
        try:
            value = self.objective(prompt)
        except Exception as exc:
            n_done = len(self._order)
            self._finalize()
            raise _ObjectiveError(
                f"the objective raised {type(exc).__name__} on candidate {index} "
                f"({candidate!r}) after {n_done} successful queries; the "
                "scores so far are kept in scores_ and history_"
            ) from exc
        try:
            score = float(value)
        except (TypeError, ValueError):
            self._finalize()
            raise TypeError(
                f"the objective must return a real number; it returned "
                f"{type(value).__name__} for candidate {index} ({candidate!r})"
            ) from None
        if not np.isfinite(score):
            self._finalize()
            raise ValueError(
                f"the objective returned {score} for candidate {index} ({candidate!r}); "
                "scores must be finite (lower is better)"
            )
        self._score_of[index] = score
        self._order.append(index)
        return score, False

    def _stop(self):
        thr = self.success_threshold
        return thr is not None and any(s <= thr for s in self._score_of.values())

    def _finalize(self):
        n = len(self.candidates_)
        queried = np.zeros(n, dtype=bool)
        queried[self._order] = True
        self.queried_ = queried
        self.scores_ = {self.candidates_[i]: self._score_of[i] for i in self._order}
        full = np.full(n, float(self.unqueried_score))
        for i, s in self._score_of.items():
            full[i] = s
        order = sorted(range(n), key=lambda i: (full[i], not queried[i], i))
        self.ranking_ = [(self.candidates_[i], float(full[i])) for i in order]
        self.chosen_ = _chosen_string(self.ranking_, [bool(queried[i]) for i in order])
        self.n_queries_ = len(self._order)
        self.n_proposals_ = len(self.history_)
        self.n_duplicates_ = sum(bool(h["duplicate"]) for h in self.history_)
        if self._order:
            best = min(self._order, key=lambda i: (self._score_of[i], i))
            self.best_candidate_ = self.candidates_[best]
            self.best_prompt_ = join_prompt(self.goal_, self.best_candidate_)
            self.best_score_ = self._score_of[best]
        else:
            self.best_candidate_ = self.best_prompt_ = None
            self.best_score_ = float(self.unqueried_score)
        del self._score_of, self._order

    def _record(self, proposal, index, score, duplicate):
        self.history_.append({
            "step": len(self.history_),
            "proposal": None if proposal is None else np.asarray(proposal, dtype=float),
            "candidate": int(index),
            "score": float(score),
            "duplicate": bool(duplicate),
        })

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.target_tags.required = False
        return tags


def _chosen_string(ranking, queried):
    """" | a | b | ... |": queried candidates first (ascending), then the unqueried."""
    names = [c for (c, _), q in zip(ranking, queried) if q]
    names += [c for (c, _), q in zip(ranking, queried) if not q]
    return " | " + " | ".join(names) + " |"


class LatentBOSuffixSearch(_SearchBase):
    """Latent Bayesian optimisation over a fixed set of candidate suffixes (GASP).

    The candidates are embedded, reduced to a low-dimensional latent map, and a
    Gaussian process over that map picks which candidate to send to the user's
    ``objective`` next (lower scores are better, as GASP's judge: 0 = the probed
    behaviour happened, 2 = refusal). The default ``strategy="discrete"`` maximises the
    acquisition over the unqueried candidates only, so every call reaches a new
    candidate; ``strategy="skopt"`` is the reference's continuous ``gp_minimize`` with
    nearest-neighbour decoding, kept for comparison. For authorised evaluations of
    systems you may test; the library ships no prompts, targets or judges beyond a
    benign toy harness.

    Parameters
    ----------
    objective : callable
        ``objective(prompt: str) -> float``, lower is better. Never called twice for
        the same candidate.
    embedder : "char-tfidf", "precomputed", transformer or callable, default="char-tfidf"
        "char-tfidf": character 2-4-gram TF-IDF then ``TruncatedSVD(min(32, n - 1))``;
        "precomputed": the ``embeddings`` passed to ``fit``; an object with
        ``fit_transform(list_of_str)`` (a scikit-learn ``Pipeline`` works), cloned; or a
        callable ``embedder(candidates, goal)`` returning an array of shape
        ``(len(candidates), n_dims)``, called with the de-duplicated candidates and
        ``fit``'s goal, so that an embedding can read the candidates in the goal's
        context (for example the generator's hidden states:
        :func:`~sklearn_cispa.language.hidden_state_embeddings` with the goal as
        prefix). A callable is not cloned.
    reducer : {"tsne", "pca"} or None, default=None
        Reduction of the embeddings to the latent map: t-SNE (the reference, perplexity
        ``min(max(n - 1, 1), 30)``), PCA, or None (the embeddings as they are, the
        default: it beat random on every benchmark of issue 36, the 2-d maps did not).
    n_components : int, default=2
        Dimension of the latent map.
    strategy : {"discrete", "skopt", "random"}, default="discrete"
        "discrete": duplicate-free acquisition over the unqueried candidates;
        "skopt": scikit-optimize's ``gp_minimize`` over the latent bounding box with
        nearest-neighbour decoding (needs scikit-optimize); "random": a uniform subset.
    n_calls : int, default=6
        Budget: unique objective calls for "discrete" and "random"; proposals,
        duplicates included, for "skopt" (as in the reference).
    n_initial_points : int, default=2
        Candidates (proposals for "skopt") drawn at random before the GP is used.
    acq_func : {"EI", "PI", "LCB"}, default="PI"
        Acquisition function (for minimisation); PI was the strongest on the toy
        benchmarks (issue 36; the reference uses skopt's default).
    xi : float, default=0.01
        Improvement margin of EI and PI, in score units.
    kappa : float, default=1.96
        Exploration weight of LCB.
    gp : regressor with ``predict(X, return_std=True)`` or None, default=None
        Surrogate of the discrete strategy (cloned for every step), for example a
        scikit-learn ``GaussianProcessRegressor``; None uses a numpy GP with the kernel
        ``constant * Matern(nu=2.5, length_scale=m) + white noise`` (m the median latent
        distance), hyperparameters fixed below 5 observations and chosen on a grid by
        the marginal likelihood from 5 on (``default_gp`` is the same model in
        scikit-learn, fitted by gradient; about 40 times slower per call).
    success_threshold : float or None, default=None
        Stop as soon as a score at most this value is observed; None uses the budget.
    unqueried_score : float, default=2.0
        Score given to unqueried candidates in ``ranking_``.
    random_state : int, RandomState instance or None, default=None
        Seeds the embedding's SVD, t-SNE, the initial points and the GP optimiser.

    Attributes
    ----------
    candidates_ : list of str
        The de-duplicated candidates (first occurrences, in the given order).
    n_repeated_candidates_ : int
        Number of repeated candidate strings dropped before embedding.
    latent_ : ndarray of shape (n_candidates, n_components)
        The latent map.
    scores_ : dict
        Queried candidate -> score, in query order.
    queried_ : ndarray of bool of shape (n_candidates,)
        Whether each candidate was queried.
    ranking_ : list of (str, float)
        Every candidate with its score, ascending; unqueried ones at
        ``unqueried_score``; ties: queried first, then the given order.
    chosen_ : str
        ``" | c1 | c2 | ... |"``: queried candidates in ascending score, then the
        unqueried ones in the given order.
    best_candidate_, best_prompt_ : str
        The best queried candidate and its prompt.
    best_score_ : float
        Its score, the minimum of ``scores_``.
    n_queries_ : int
        Unique objective calls.
    n_proposals_ : int
        Proposals made, duplicates included.
    n_duplicates_ : int
        Proposals that decoded to an already-queried candidate (0 unless "skopt").
    history_ : list of dict
        One dict per proposal: ``step``, ``proposal`` (latent point), ``candidate``
        (index into ``candidates_``), ``score``, ``duplicate``.

    Notes
    -----
    Departures from the reference (GASP, Basani and Zhang, NeurIPS 2025): the default
    strategy never proposes a queried candidate (the reference's nearest-neighbour
    decoding repeats candidates and still counts them against the budget); repeated
    candidate strings are dropped before embedding and counted; seeds come from
    ``random_state`` (the reference fixes 42); the embedding is offline character
    TF-IDF unless the user passes a model-based embedder; an empty ``goal`` gives the
    candidate alone as the prompt. The defaults (no reduction, PI, numpy Matern 5/2 GP)
    were chosen by the measurement of issue 36 (user guide); the reference reduces to 2-d
    with t-SNE, which did not beat random at equal unique calls. The embeddings are
    divided by their largest absolute value before the reduction, so the latent map does
    not depend on their units. The latent map, and hence the result, depends on the
    order of the candidates through the random draws. An exception raised by the
    objective is re-raised as a ``RuntimeError`` naming the candidate, with the scores
    so far kept in the fitted
    attributes.

    Examples
    --------
    >>> from sklearn_cispa.redteam import LatentBOSuffixSearch, make_toy_landscape
    >>> candidates, embeddings, objective = make_toy_landscape(random_state=0)
    >>> search = LatentBOSuffixSearch(objective, embedder="precomputed", reducer="pca",
    ...                               random_state=0)
    >>> search = search.fit(candidates, embeddings=embeddings)
    >>> search.n_queries_, search.n_duplicates_
    (6, 0)
    >>> search.best_score_ == min(search.scores_.values())
    True
    """

    _parameter_constraints = {
        "objective": [callable],
        "embedder": [StrOptions({"char-tfidf", "precomputed"}), HasMethods(["fit_transform"]),
                     callable],
        "reducer": [StrOptions({"tsne", "pca"}), None],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "strategy": [StrOptions({"discrete", "skopt", "random"})],
        "n_calls": [Interval(Integral, 1, None, closed="left")],
        "n_initial_points": [Interval(Integral, 1, None, closed="left")],
        "acq_func": [StrOptions({"EI", "PI", "LCB"})],
        "xi": [Interval(Real, 0, None, closed="left")],
        "kappa": [Interval(Real, 0, None, closed="left")],
        "gp": [HasMethods(["fit", "predict"]), None],
        "success_threshold": [Interval(Real, None, None, closed="both"), None],
        "unqueried_score": [Interval(Real, None, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        objective,
        embedder="char-tfidf",
        reducer=None,
        n_components=2,
        strategy="discrete",
        n_calls=6,
        n_initial_points=2,
        acq_func="PI",
        xi=0.01,
        kappa=1.96,
        gp=None,
        success_threshold=None,
        unqueried_score=2.0,
        random_state=None,
    ):
        self.objective = objective
        self.embedder = embedder
        self.reducer = reducer
        self.n_components = n_components
        self.strategy = strategy
        self.n_calls = n_calls
        self.n_initial_points = n_initial_points
        self.acq_func = acq_func
        self.xi = xi
        self.kappa = kappa
        self.gp = gp
        self.success_threshold = success_threshold
        self.unqueried_score = unqueried_score
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, candidates, goal="", embeddings=None):
        """Search the candidates, querying the objective at most ``n_calls`` times.

        Parameters
        ----------
        candidates : list of str of length n, or array of shape (n, n_features)
            Candidate suffixes, de-duplicated keeping the first occurrence. A 2-D
            numeric array is read as one candidate per row, written as its values.
        goal : str, default=""
            Prompt that every candidate is appended to (no space before a leading
            ".").
        embeddings : array-like of shape (n, n_dims) or None, default=None
            Row-aligned with ``candidates``; required with ``embedder="precomputed"``.

        Returns
        -------
        self : LatentBOSuffixSearch
            The fitted search.
        """
        if not isinstance(goal, str):
            raise TypeError(
                f"goal must be a str (the prompt the candidates are appended to), got "
                f"{type(goal).__name__}; the search has no target y"
            )
        raw = _as_candidates(candidates)
        unique, keep = _dedup(raw)
        seeds = spawn_seeds(self.random_state, 4)
        E = self._embed(raw, unique, keep, embeddings, seeds[0], goal)
        self.latent_ = self._reduce(E, seeds[1])
        self._reset(unique, goal, len(raw) - len(unique))
        rng = np.random.RandomState(seeds[2])
        if self.strategy == "random":
            _random_subset(self, rng)
        elif self.strategy == "skopt":
            self._run_skopt(seeds[3])
        else:
            self._run_discrete(rng, seeds[3])
        self._finalize()
        return self

    def _embed(self, raw, unique, keep, embeddings, seed, goal=""):
        n = len(unique)
        if self.embedder == "precomputed":
            if embeddings is None:
                raise ValueError('embedder="precomputed" needs fit(..., embeddings=array)')
            E = check_array(embeddings, dtype=np.float64, input_name="embeddings")
            if E.shape[0] != len(raw):
                raise ValueError(
                    f"embeddings has {E.shape[0]} rows for {len(raw)} candidates"
                )
            E = E[keep]
        else:
            if embeddings is not None:
                raise ValueError(
                    'embeddings are only used with embedder="precomputed"; got embedder='
                    f"{self.embedder!r}"
                )
            if n == 1:
                return np.zeros((1, 1))
            if isinstance(self.embedder, str) and self.embedder == "char-tfidf":
                tfidf = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4))
                T = tfidf.fit_transform(unique)
                k = min(32, n - 1, T.shape[1] - 1)
                if k >= 1:
                    E = TruncatedSVD(k, random_state=seed).fit_transform(T)
                else:
                    E = T.toarray()
            else:
                if hasattr(self.embedder, "fit_transform"):
                    E = clone(self.embedder).fit_transform(list(unique))
                else:  # a callable embedder(candidates, goal)
                    E = self.embedder(list(unique), goal)
                if hasattr(E, "toarray"):
                    E = E.toarray()
                E = check_array(E, dtype=np.float64, input_name="embedder output")
                if E.shape[0] != n:
                    raise ValueError(
                        f"the embedder returned {E.shape[0]} rows for {n} candidates"
                    )
        top = float(np.max(np.abs(E), initial=0.0))
        return E / top if top > 0 else E

    def _reduce(self, E, seed):
        n, p = E.shape
        k = self.n_components
        if self.reducer is not None and not np.any(E - E.mean(axis=0)):
            # every candidate has the same embedding: no map to learn (and t-SNE's
            # PCA initialisation would divide by a zero spread)
            return np.zeros((n, k))
        if self.reducer is None or n == 1:
            Z = E
        elif self.reducer == "pca":
            q = min(k, n, p)
            Z = PCA(q, svd_solver="full").fit_transform(E)
            Z = np.hstack([Z, np.zeros((n, k - q))]) if q < k else Z
        else:
            if n < 3:
                Z = np.zeros((n, k))
                Z[:, 0] = E[:, 0] - E[:, 0].mean()
            else:
                Z = TSNE(
                    n_components=k,
                    perplexity=float(min(max(n - 1, 1), 30)),
                    method="barnes_hut" if k < 4 else "exact",
                    random_state=seed,
                    init="pca" if p >= k else "random",
                ).fit_transform(E)
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        if not np.all(np.isfinite(Z)):
            raise ValueError(
                f"the {self.reducer!r} reduction gave non-finite latent points; check the "
                "embeddings or use reducer='pca'"
            )
        return Z

    def _budget(self):
        return min(self.n_calls, len(self.candidates_))

    def _fit_surrogate(self, Z, y, median):
        """A fresh copy of the search's GP (``gp``; default :class:`MaternGP` at the
        median latent distance ``median``) fitted to latent points ``Z`` and scores ``y``."""
        if self.gp is None:
            model = MaternGP(length_scale=median)
        else:
            model = clone(self.gp)
            if isinstance(model, MaternGP) and model.length_scale is None:
                model.set_params(length_scale=median)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(Z, y)
        return model

    def _run_discrete(self, rng, seed):
        n = len(self.candidates_)
        Z = self.latent_
        n_init = min(self.n_initial_points, self._budget())
        for c in rng.choice(n, n_init, replace=False):
            score, _ = self._query(int(c))
            self._record(Z[c], c, score, False)
            if self._stop():
                return
        median = _median_distance(Z)
        while len(self._order) < self._budget() and not self._stop():
            done = np.asarray(self._order)
            y = np.asarray([self._score_of[i] for i in self._order])
            model = self._fit_surrogate(Z[done], y, median)
            free = np.setdiff1d(np.arange(n), done)
            mu, sd = model.predict(Z[free], return_std=True)
            acq = acquisition(mu, sd, float(y.min()), self.acq_func, self.xi, self.kappa)
            acq = np.where(np.isfinite(acq), acq, -np.inf)
            c = int(free[int(np.argmax(acq))])
            score, _ = self._query(c)
            self._record(Z[c], c, score, False)

    def _run_skopt(self, seed):
        skopt = optional_import("skopt")
        Z = self.latent_
        if len(self.candidates_) == 1:
            score, _ = self._query(0)
            self._record(Z[0], 0, score, False)
            return
        lo, hi = Z.min(axis=0), Z.max(axis=0)
        lo = np.where(hi - lo > 0, lo, hi - 1e-9)
        box = [(float(a), float(b)) for a, b in zip(lo, hi)]

        def f(x):
            x = np.asarray(x, dtype=float)
            c = int(np.argmin(np.sum((Z - x) ** 2, axis=1)))
            score, duplicate = self._query(c)
            self._record(x, c, score, duplicate)
            return score

        def stop(_result):
            return self._stop()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # skopt: repeated points
            skopt.gp_minimize(
                f,
                box,
                acq_func=self.acq_func,
                xi=self.xi,
                kappa=self.kappa,
                n_calls=self.n_calls,
                n_initial_points=min(self.n_initial_points, self.n_calls),
                acq_optimizer="sampling",
                random_state=seed,
                callback=[stop],
            )


def _random_subset(search, rng):
    n = len(search.candidates_)
    for c in rng.permutation(n)[: min(search.n_calls, n)]:
        score, _ = search._query(int(c))
        search._record(None, c, score, False)
        if search._stop():
            return


class RandomSubsetSearch(_SearchBase):
    """Query a uniformly random subset of the candidates: the baseline of every benchmark.

    Parameters
    ----------
    objective : callable
        ``objective(prompt: str) -> float``, lower is better.
    n_calls : int, default=6
        Number of distinct candidates queried (at most the number of candidates).
    unqueried_score : float, default=2.0
        Score given to unqueried candidates in ``ranking_``.
    random_state : int, RandomState instance or None, default=None
        Seeds the subset.

    Attributes
    ----------
    candidates_, scores_, queried_, ranking_, chosen_, best_candidate_, best_prompt_, \
best_score_, n_queries_, n_proposals_, n_duplicates_, history_, n_repeated_candidates_
        As in :class:`LatentBOSuffixSearch`.
    latent_ : None
        No latent map is built.

    Examples
    --------
    >>> from sklearn_cispa.redteam import RandomSubsetSearch, make_toy_landscape
    >>> candidates, _, objective = make_toy_landscape(random_state=0)
    >>> search = RandomSubsetSearch(objective, random_state=0).fit(candidates)
    >>> search.n_queries_, len(search.ranking_)
    (6, 20)
    """

    _parameter_constraints = {
        "objective": [callable],
        "n_calls": [Interval(Integral, 1, None, closed="left")],
        "unqueried_score": [Interval(Real, None, None, closed="neither")],
        "random_state": ["random_state"],
    }
    success_threshold = None

    def __init__(self, objective, n_calls=6, unqueried_score=2.0, random_state=None):
        self.objective = objective
        self.n_calls = n_calls
        self.unqueried_score = unqueried_score
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, candidates, goal="", embeddings=None):
        """Query ``n_calls`` distinct candidates drawn uniformly at random.

        Parameters
        ----------
        candidates : list of str of length n, or array of shape (n, n_features)
            Candidate suffixes, de-duplicated keeping the first occurrence.
        goal : str, default=""
            Prompt that every candidate is appended to.
        embeddings : None or array-like, default=None
            Ignored (accepted so that both searches share ``fit``).

        Returns
        -------
        self : RandomSubsetSearch
            The fitted search.
        """
        if not isinstance(goal, str):
            raise TypeError(
                f"goal must be a str (the prompt the candidates are appended to), got "
                f"{type(goal).__name__}; the search has no target y"
            )
        unique, _ = _dedup(_as_candidates(candidates))
        raw_n = len(_as_candidates(candidates))
        self._reset(unique, goal, raw_n - len(unique))
        self.latent_ = None
        rng = np.random.RandomState(spawn_seeds(self.random_state, 1)[0])
        _random_subset(self, rng)
        self._finalize()
        return self
