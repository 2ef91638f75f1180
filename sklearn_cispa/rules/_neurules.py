"""Neural rule lists (NeuRules): ordered rule lists learned end to end by gradient descent."""

import dataclasses
import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_cispa.utils import resolve_device, seed_from_random_state, torch_generator

__all__ = ["NeurulesClassifier", "Rule"]

# smoothing constant of the relaxed conjunction (the paper's epsilon; fixed, not public)
_CONJUNCTION_EPS = 1e-3
# Gumbel noise: uniforms are clamped to [_U_EPS, 1 - _U_EPS] before -log(-log(U))
_U_EPS = 1e-12


def _format_threshold(value):
    return f"{value:.4g}"


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule of a learned rule list: a conjunction of open intervals and a label.

    A condition ``(feature_index, low, high)`` holds for a row ``x`` iff
    ``low < x[feature_index] < high``; an open side is ``-inf`` or ``+inf``. The rule
    fires iff all its conditions hold.

    Parameters
    ----------
    conditions : tuple of (int, float, float)
        The conditions, sorted by feature index, at most one per feature, in the units of
        the data the model was fitted on. Stored as a tuple so that the rule is
        immutable and hashable.
    prediction : object
        The label the rule predicts (an element of the fitted model's ``classes_``).
    feature_names : tuple of str or None, default=None
        Names used by ``str(rule)`` (``x0, x1, ...`` when None). Not part of equality.

    See Also
    --------
    NeurulesClassifier : Learns an ordered list of such rules.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_cispa.rules import Rule
    >>> rule = Rule(conditions=((0, 1.0, np.inf), (2, -np.inf, 0.5)), prediction="yes")
    >>> print(rule)
    if x0 > 1 and x2 < 0.5 then yes
    >>> rule.covers(np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])).tolist()
    [True, False]
    """

    conditions: tuple
    prediction: object
    feature_names: tuple | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self):
        conds = tuple(
            (int(f), float(low), float(high)) for f, low, high in self.conditions
        )
        object.__setattr__(self, "conditions", tuple(sorted(conds)))
        if self.feature_names is not None:
            object.__setattr__(self, "feature_names", tuple(str(n) for n in self.feature_names))

    def covers(self, X):
        """Return a boolean mask of the rows of ``X`` on which the rule fires.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data in the units the rule was learned in.

        Returns
        -------
        mask : ndarray of bool of shape (n_samples,)
        """
        X = np.asarray(X, dtype=np.float64)
        mask = np.ones(X.shape[0], dtype=bool)
        for f, low, high in self.conditions:
            mask &= (X[:, f] > low) & (X[:, f] < high)
        return mask

    def to_text(self, feature_names=None):
        """Return the rule as ``if <c1> and <c2> then <label>``.

        Parameters
        ----------
        feature_names : sequence of str, default=None
            Column names; defaults to the rule's ``feature_names``, else ``x0, x1, ...``.

        Returns
        -------
        text : str
        """
        names = feature_names if feature_names is not None else self.feature_names
        parts = []
        for f, low, high in self.conditions:
            name = str(names[f]) if names is not None else f"x{f}"
            if np.isfinite(low) and np.isfinite(high):
                parts.append(f"{_format_threshold(low)} < {name} < {_format_threshold(high)}")
            elif np.isfinite(low):
                parts.append(f"{name} > {_format_threshold(low)}")
            else:
                parts.append(f"{name} < {_format_threshold(high)}")
        return f"if {' and '.join(parts)} then {self.prediction}"

    def __str__(self):
        return self.to_text()


def _check_temperature_pair(value, name):
    try:
        pair = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a pair (start, end) of floats, got {value!r}.") from exc
    if pair.shape != (2,):
        raise ValueError(f"{name} must be a pair (start, end) of floats, got {value!r}.")
    start, end = float(pair[0]), float(pair[1])
    if not (np.isfinite(start) and np.isfinite(end) and start >= end > 0):
        raise ValueError(
            f"{name} must satisfy start >= end > 0 with finite values, got {value!r}."
        )
    return start, end


def _soft_forward(torch, x, a, b, w_raw, mask, p, H, t_pred, t_sel, noise=None):
    """Soft NeuRules model on standardised ``x``; returns (logits, selection g)."""
    xa = x[:, :, None]  # (B, F, 1)
    d1 = (xa - a) / t_pred  # (B, F, R): (x - a) / T_p
    d2 = (2.0 * xa - a - b) / t_pred  # (x - a) / T_p - (b - x) / T_p
    zero = torch.zeros_like(d1)
    log_den = torch.logsumexp(torch.stack((zero, d1, d2)), dim=0)
    q = torch.exp(d1 - log_den)  # middle entry of softmax(0, d1, d2)

    w = torch.relu(w_raw) * mask  # (R, F); constant columns held at 0
    s = w.sum(dim=1)  # (R,)
    alive = s > 0
    s_safe = torch.where(alive, s, torch.ones_like(s))
    eta = (_CONJUNCTION_EPS / s_safe).detach()  # (R,)
    inv = (1.0 + eta) / (q + eta)  # (B, F, R)
    den = torch.einsum("bfr,rf->br", inv, w)  # (B, R)
    den_safe = torch.where(alive, den, torch.ones_like(den))
    c = torch.where(alive, s_safe / den_safe, torch.zeros_like(den))  # (B, R)

    pi = p - p.min().detach() + 1.0
    u = c * pi
    if noise is not None:
        u = u + noise
    g = torch.softmax(u / t_sel, dim=1)  # (B, R)
    return g @ H.T, g


class NeurulesClassifier(ClassifierMixin, BaseEstimator):
    """Neural rule list classifier (NeuRules): thresholds, rules and order in one go.

    Learns an ordered list of rules ``if <conjunction of intervals> then <class>`` on
    numeric data by gradient descent on a relaxed model: soft interval predicates with
    learned cut points, a smoothed weighted harmonic mean as the conjunction (the
    paper's gradient shaping), and a Gumbel-softmax first-match selection driven by
    learned rule priorities. After training the relaxed model is turned into a strict
    rule list; ``predict`` is exactly that list (see :meth:`export_text`).

    Parameters
    ----------
    n_rules : int, default=10
        Number of rule slots R that are trained; an upper bound on ``n_rules_``. It is
        the literal number of rules for any number of classes (the paper scripts use
        ``n_classes * n_rules // 2`` slots for multi-class data).
    max_epochs : int, default=500
        Number of epochs E. The first ``E // 2`` train with the class head frozen and
        fixed temperatures; the rest train everything and anneal the temperatures
        linearly from start to end. There is no early stopping.
    lr : float, default=0.01
        Adam learning rate (default betas, no weight decay).
    batch_size : int or None, default=None
        None trains on full batches; an int uses shuffled mini-batches (the last
        partial batch is kept).
    min_support : float in (0, 1], default=0.2
        Coverage target of the support penalty: each rule should be selected for at
        least this fraction of a batch. Lower it to find rules that cover less.
    support_weight : float >= 0, default=0.4
        Weight lambda of the support penalty; 0 switches it off.
    predicate_temperature : tuple of (float, float), default=(0.2, 0.04)
        Start and end temperature of the soft interval predicates (start >= end > 0).
    selector_temperature : tuple of (float, float), default=(1.0, 0.2)
        Start and end temperature of the soft first-match selector (start >= end > 0).
    device : str, default="cpu"
        Torch device used for training ("cpu", "cuda", "cuda:<index>" or "auto").
        Prediction never uses torch.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial priorities and class head, the batch shuffling and the Gumbel
        noise through a private ``torch.Generator``; the global torch RNG is untouched.
    verbose : int, default=0
        0 is silent; a positive value prints the epoch loss about ten times per fit.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Sorted class labels.
    rules_ : list of Rule
        The learned rules in firing order (conditions in the caller's units).
    default_class_ : object
        Label predicted when no rule fires: the majority class of the training rows
        that no rule covers (of all training rows when every row is covered).
    n_rules_ : int
        ``len(rules_)``: the rules that can fire (``<= n_rules``).
    n_conditions_ : int
        Number of conditions over all rules (a two-sided interval counts once).
    loss_curve_ : ndarray of shape (max_epochs,)
        Mean training loss per epoch.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.tree.DecisionTreeClassifier : A tree; with ``max_leaf_nodes`` a comparable
        size knob and often the strongest cheap baseline.
    Rule : The value object stored in ``rules_``.

    Notes
    -----
    The model is the one of Xu et al. (2025) and its reference code; for data with N
    rows, F features and R rules training costs O(E N F R) time and O(B F R) memory for
    the activations of a batch of B rows (full batch by default: set ``batch_size`` on
    large data). Prediction costs ``O(N * n_conditions_)``. Columns are standardised
    internally with the training mean and standard deviation; the printed thresholds
    are mapped back to the caller's units.

    Training runs a plain torch loop rather than a skorch net: the schedule (head frozen
    for the first half, temperatures annealed after every optimizer step, cut points
    re-ordered after each step, Gumbel noise drawn from a private generator, batches
    with a non-finite loss skipped) is the whole training loop, and skorch would add
    callbacks and overhead without a validation split or early stopping to offer.

    Departures from the reference code (all deliberate):

    - one Adam step per batch (the reference steps twice with the same gradient);
    - an explicit default rule, the majority class of the uncovered training rows
      (the reference falls back to class 0);
    - a cut at or beyond the training range becomes an open side (-inf / +inf), so the
      training row holding a minimum satisfies an untouched lower side;
    - constant columns never enter a rule, and a rule slot whose conjunction weights
      are all zero scores 0 instead of 0/0;
    - prediction uses only the strict list; the relaxed model is noise-free outside
      training;
    - with mini-batches, the temperature decrement is sized by the real number of
      steps in the second half of training; a batch skipped for a non-finite loss
      still advances the schedule, so training always ends at the end temperatures;
    - no imputation or one-hot encoding inside the estimator: use a Pipeline
      (``SimpleImputer``, ``OneHotEncoder``); feature indices then refer to the
      encoded matrix.

    ``predict_proba`` returns the softmax of the firing rule's class head (for the
    default rule, the class frequencies of the uncovered training rows). These are not
    calibrated probabilities; their argmax equals ``predict``.

    References
    ----------
    .. [1] S. Xu, N. P. Walter, J. Vreeken. "Neural Rule Lists: Learning
       Discretizations, Rules, and Order in One Go". NeurIPS 2025. arXiv:2411.06428.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_cispa.rules import NeurulesClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = NeurulesClassifier(n_rules=4, max_epochs=100, random_state=0).fit(X, y)
    >>> clf.n_rules_ <= 4
    True
    >>> print(clf.export_text().splitlines()[-1])  # doctest: +SKIP
    else 2
    >>> bool(clf.score(X, y) > 0.6)
    True
    """

    _parameter_constraints = {
        "n_rules": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_epochs": [Interval(numbers.Integral, 2, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "batch_size": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "min_support": [Interval(numbers.Real, 0, 1, closed="right")],
        "support_weight": [Interval(numbers.Real, 0, None, closed="left")],
        "predicate_temperature": [tuple, list],
        "selector_temperature": [tuple, list],
        "device": [str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_rules=10,
        max_epochs=500,
        lr=0.01,
        batch_size=None,
        min_support=0.2,
        support_weight=0.4,
        predicate_temperature=(0.2, 0.04),
        selector_temperature=(1.0, 0.2),
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.n_rules = n_rules
        self.max_epochs = max_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.min_support = min_support
        self.support_weight = support_weight
        self.predicate_temperature = predicate_temperature
        self.selector_temperature = selector_temperature
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the rule list from training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric training data without NaN or infinite values.
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).

        Returns
        -------
        self : NeurulesClassifier
            The fitted estimator.
        """
        return self._fit(X, y)

    def _fit(self, X, y, _double_step=False):
        import torch

        t_pred = _check_temperature_pair(self.predicate_temperature, "predicate_temperature")
        t_sel = _check_temperature_pair(self.selector_temperature, "selector_temperature")
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        n_classes = len(self.classes_)
        if n_classes < 2:
            raise ValueError(
                "NeurulesClassifier needs at least 2 classes in y; got 1 class: "
                f"{self.classes_[0]!r}."
            )
        device = resolve_device(self.device)
        seed = seed_from_random_state(self.random_state)
        gen = torch_generator(seed, device=device)

        n_samples, n_features = X.shape
        R = self.n_rules
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale == 0] = 1.0
        Xs = (X - mean) / scale
        lo, hi = Xs.min(axis=0), Xs.max(axis=0)
        usable = lo < hi
        self._mean, self._scale, self._lo, self._hi = mean, scale, lo, hi

        dt = torch.float64
        kw = {"dtype": dt, "device": device}
        x_all = torch.as_tensor(Xs, **kw)
        y_all = torch.as_tensor(y_enc, dtype=torch.long, device=device)
        a = torch.as_tensor(np.repeat(lo[:, None], R, axis=1), **kw).requires_grad_()
        b = torch.as_tensor(np.repeat(hi[:, None], R, axis=1), **kw).requires_grad_()
        W = torch.full((R, n_features), 0.5, **kw).requires_grad_()
        mask = torch.as_tensor(np.broadcast_to(usable, (R, n_features)).copy(), **kw)
        p = torch.rand(R, generator=gen, **kw).requires_grad_()
        bound = 1.0 / math.sqrt(R)
        H = ((torch.rand(n_classes, R, generator=gen, **kw) * 2.0 - 1.0) * bound).requires_grad_()
        params = [a, b, W, p, H]
        optimizer = torch.optim.Adam(params, lr=self.lr)

        batch_size = n_samples if self.batch_size is None else min(self.batch_size, n_samples)
        n_batches = math.ceil(n_samples / batch_size)
        E = self.max_epochs
        e_half = E // 2
        total_anneal = (E - e_half) * n_batches
        tp, ts = t_pred[0], t_sel[0]
        step = 0
        warned = False
        loss_curve = np.full(E, np.nan)
        report_every = max(1, E // 10)
        lam, s_min = float(self.support_weight), float(self.min_support)

        for epoch in range(E):
            if n_batches == 1:
                batches = [None]
            else:
                perm = torch.randperm(n_samples, generator=gen, device=device)
                batches = [perm[i : i + batch_size] for i in range(0, n_samples, batch_size)]
            epoch_losses = []
            for idx in batches:
                xb, yb = (x_all, y_all) if idx is None else (x_all[idx], y_all[idx])
                unif = torch.rand(xb.shape[0], R, generator=gen, **kw)
                unif = unif.clamp(_U_EPS, 1.0 - _U_EPS)
                noise = -torch.log(-torch.log(unif))
                logits, g = _soft_forward(torch, xb, a, b, W, mask, p, H, tp, ts, noise)
                loss = torch.nn.functional.cross_entropy(logits, yb)
                if lam > 0:
                    loss = loss + lam * torch.relu(s_min - g.mean(dim=0)).mean()
                if not torch.isfinite(loss):
                    if not warned:
                        warnings.warn(
                            "NeurulesClassifier: a batch gave a non-finite loss; its "
                            "optimizer step was skipped.",
                            RuntimeWarning,
                            stacklevel=3,
                        )
                        warned = True
                else:
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    if epoch < e_half:
                        H.grad = None  # Adam leaves H and its moments untouched
                    optimizer.step()
                    if _double_step:  # reference-code behaviour, for side-by-side runs only
                        optimizer.step()
                    with torch.no_grad():
                        low, high = torch.minimum(a, b), torch.maximum(a, b)
                        a.copy_(low)
                        b.copy_(high)
                    epoch_losses.append(float(loss.detach()))
                if epoch >= e_half:
                    step += 1
                    frac = step / total_anneal
                    tp = t_pred[0] + (t_pred[1] - t_pred[0]) * frac
                    ts = t_sel[0] + (t_sel[1] - t_sel[0]) * frac
            if epoch_losses:
                loss_curve[epoch] = np.mean(epoch_losses)
            if self.verbose > 0 and (epoch % report_every == 0 or epoch == E - 1):
                print(
                    f"[NeurulesClassifier] epoch {epoch + 1}/{E} loss {loss_curve[epoch]:.4f} "
                    f"T_p {tp:.3g} T_s {ts:.3g}"
                )

        self.loss_curve_ = loss_curve
        self._a = a.detach().cpu().numpy()
        self._b = b.detach().cpu().numpy()
        self._W = W.detach().cpu().numpy()
        self._p = p.detach().cpu().numpy()
        self._H = H.detach().cpu().numpy()
        self._usable = usable
        self._final_temperatures = (tp, ts)
        self._extract(X, y_enc)
        return self

    def _extract(self, X, y_enc):
        """Turn the trained parameters into the strict list (section 3.6 of the spec)."""
        a, b, W, H = self._a, self._b, self._W, self._H
        lo, hi, mean, scale = self._lo, self._hi, self._mean, self._scale
        names = getattr(self, "feature_names_in_", None)
        names = None if names is None else tuple(str(n) for n in names)
        head = H - H.max(axis=0, keepdims=True)
        proba = np.exp(head) / np.exp(head).sum(axis=0, keepdims=True)  # (K, R)
        order = np.argsort(-self._p, kind="stable")
        rules, rule_proba = [], []
        for r in order:
            used = np.flatnonzero((W[r] > 0) & self._usable)
            if used.size == 0:
                continue
            conds, can_fire = [], True
            for f in used:
                af, bf = a[f, r], b[f, r]
                if af >= hi[f] or bf <= lo[f] or af >= bf:
                    can_fire = False
                    break
                low = -np.inf if af <= lo[f] else mean[f] + scale[f] * af
                high = np.inf if bf >= hi[f] else mean[f] + scale[f] * bf
                if np.isinf(low) and np.isinf(high):
                    continue
                conds.append((int(f), float(low), float(high)))
            if not can_fire:
                continue
            if not conds:
                break  # r always fires: it and every later rule are dropped
            k = int(np.argmax(proba[:, r]))
            rules.append(Rule(tuple(conds), self.classes_[k], feature_names=names))
            rule_proba.append(proba[:, r])
        self.rules_ = rules
        self.n_rules_ = len(rules)
        self.n_conditions_ = int(sum(len(r.conditions) for r in rules))
        self._rule_proba = (
            np.asarray(rule_proba) if rules else np.zeros((0, len(self.classes_)))
        )
        fired = self._firing_rule(X) >= 0
        rows = y_enc[~fired] if (~fired).any() else y_enc
        counts = np.bincount(rows, minlength=len(self.classes_)).astype(np.float64)
        self._default_proba = counts / counts.sum()
        default = int(np.argmax(counts))
        self.default_class_ = self.classes_[default]
        self._label_index = np.array(
            [int(np.argmax(row)) for row in self._rule_proba] + [default], dtype=np.intp
        )

    def _firing_rule(self, X):
        """Index into ``rules_`` of the first rule that fires on each row, -1 if none."""
        which = np.full(X.shape[0], -1, dtype=np.intp)
        free = np.ones(X.shape[0], dtype=bool)
        for i, rule in enumerate(self.rules_):
            m = free.copy()
            for f, low, high in rule.conditions:
                m &= (X[:, f] > low) & (X[:, f] < high)
            which[m] = i
            free &= ~m
        return which

    def predict(self, X):
        """Predict with the strict rule list: the first rule that fires, else the default.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric data without NaN or infinite values.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted class labels.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        which = self._firing_rule(X)
        return self.classes_[self._label_index[which]]  # which == -1 picks the default

    def predict_proba(self, X):
        """Class scores of the firing rule (not calibrated probabilities).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric data without NaN or infinite values.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            For a row on which rule ``r`` fires first, the softmax of the rule's class
            head; for a row no rule covers, the class frequencies of the uncovered
            training rows. The argmax of each row equals :meth:`predict`.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        table = np.vstack([self._rule_proba, self._default_proba[None, :]])
        return table[self._firing_rule(X)].copy()

    def export_text(self, feature_names=None):
        """Print the rule list, one line per rule and one for the default.

        Parameters
        ----------
        feature_names : sequence of str, default=None
            Names of the columns; defaults to ``feature_names_in_`` when the model was
            fitted on a DataFrame, else ``x0, x1, ...``.

        Returns
        -------
        text : str
            Lines ``if <c1> and <c2> then <label>``, ``else if ...`` and a final
            ``else <label>``. Thresholds are rounded to 4 significant digits; the
            exact values are in ``rules_``.
        """
        check_is_fitted(self)
        if feature_names is not None:
            feature_names = [str(n) for n in feature_names]
            if len(feature_names) != self.n_features_in_:
                raise ValueError(
                    f"feature_names has {len(feature_names)} names but the model was "
                    f"fitted on {self.n_features_in_} features."
                )
        elif hasattr(self, "feature_names_in_"):
            feature_names = [str(n) for n in self.feature_names_in_]
        else:
            feature_names = [f"x{i}" for i in range(self.n_features_in_)]
        lines = []
        for i, rule in enumerate(self.rules_):
            text = rule.to_text(feature_names)
            lines.append(text if i == 0 else "else " + text)
        lines.append(f"else {self.default_class_}" if self.rules_ else f"{self.default_class_}")
        return "\n".join(lines)

    def _soft_predict_proba(self, X, temperatures=None):
        """Noise-free relaxed model (for tests): class probabilities of ``softmax(H g)``."""
        import torch

        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        tp, ts = self._final_temperatures if temperatures is None else temperatures
        kw = {"dtype": torch.float64}
        x = torch.as_tensor((X - self._mean) / self._scale, **kw)
        mask = torch.as_tensor(np.broadcast_to(self._usable, self._W.shape).copy(), **kw)
        with torch.no_grad():
            logits, _ = _soft_forward(
                torch,
                x,
                torch.as_tensor(self._a, **kw),
                torch.as_tensor(self._b, **kw),
                torch.as_tensor(self._W, **kw),
                mask,
                torch.as_tensor(self._p, **kw),
                torch.as_tensor(self._H, **kw),
                tp,
                ts,
            )
            return torch.softmax(logits, dim=1).numpy()
