"""Evaluation attack: l2 PGD with expectation over the Gaussian noise (EOT-PGD)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.validation import check_array, check_is_fitted

from sklearn_cispa.conformal._base import _BaseNoisyConformal, _label_indices
from sklearn_cispa.utils import check_random_generator, eval_mode, optional_import

_LOGISTIC = ("LogisticRegression", "LogisticRegressionCV")


def _project_l2(delta, radius):
    norms = np.linalg.norm(delta, axis=1)
    scale = np.ones_like(norms)
    big = norms > radius
    scale[big] = radius / norms[big]
    return delta * scale[:, None]


def _eot_pgd(grad_fn, X, radius, sigma, n_steps, n_noise, step_size, clip, rng):
    """Generic l2 EOT-PGD ascent on ``grad_fn(Z) -> mean gradient`` (Z: draws x rows x d)."""
    n, d = X.shape
    delta = np.zeros_like(X)
    if radius == 0:
        return X.copy()
    t = 2.5 * radius / n_steps if step_size is None else float(step_size)
    draws = n_noise if sigma > 0 else 1
    for _ in range(n_steps):
        Z = (X + delta)[None, :, :]
        if sigma > 0:
            Z = Z + sigma * rng.standard_normal(size=(draws, n, d))
        g = grad_fn(Z)
        norms = np.linalg.norm(g, axis=1)
        moving = norms > 0
        delta[moving] += t * g[moving] / norms[moving, None]
        delta = _project_l2(delta, radius)
        if clip is not None:
            delta = np.clip(X + delta, clip[0], clip[1]) - X
            delta = _project_l2(delta, radius)
    return X + delta


def _softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def _unwrap(model):
    """Attack the fitted inner model of the robust CP wrappers."""
    if isinstance(model, _BaseNoisyConformal):
        check_is_fitted(model)
        return model.estimator_
    return model


def _linear_parts(model):
    """(final estimator, W (k, d), b (k,)) in input space, folding a leading StandardScaler."""
    scaler = None
    final = model
    if isinstance(model, Pipeline):
        steps = [s for _, s in model.steps if s is not None and s != "passthrough"]
        if len(steps) == 1:
            final = steps[0]
        elif len(steps) == 2 and isinstance(steps[0], StandardScaler):
            scaler, final = steps
        else:
            raise TypeError(
                "eot_pgd_l2_attack supports a Pipeline of at most a leading StandardScaler "
                f"and a linear model; got steps {[type(s).__name__ for s in steps]}."
            )
    if not (hasattr(final, "coef_") and hasattr(final, "intercept_")):
        raise TypeError(
            f"eot_pgd_l2_attack: {type(final).__name__} is neither a fitted linear "
            "scikit-learn model (coef_, intercept_) nor a torch module / skorch net."
        )
    W = np.atleast_2d(np.asarray(final.coef_, dtype=np.float64))
    b = np.atleast_1d(np.asarray(final.intercept_, dtype=np.float64)).astype(np.float64)
    if b.size == 1 and W.shape[0] > 1:
        b = np.full(W.shape[0], float(b[0]))
    if scaler is not None:
        scale = scaler.scale_ if scaler.scale_ is not None else 1.0
        mean = scaler.mean_ if scaler.mean_ is not None else 0.0
        W = W / scale
        b = b - W @ np.broadcast_to(mean, (W.shape[1],))
    return final, W, b


def _class_indices(classes, y):
    return _label_indices(np.asarray(classes), np.asarray(y))


def _linear_classifier_grad(final, W, b, y, objective):
    classes = np.asarray(final.classes_)
    if W.shape[0] == 1:  # binary: logits [0, w x + b]
        W = np.vstack([np.zeros_like(W), W])
        b = np.concatenate([[0.0], b])
    if W.shape[0] != len(classes):
        raise TypeError(f"{type(final).__name__}: cannot read a softmax model from coef_.")
    idx = _class_indices(classes, y)
    Wy = W[idx]  # (n, d)
    rows = np.arange(len(idx))

    def grad(Z):
        P = _softmax(Z @ W.T + b)  # (draws, n, k)
        diff = Wy[None] - P @ W  # d log p_y / dx
        if objective == "prob":
            g = -P[:, rows, idx][..., None] * diff  # ascend -p_y
        else:
            g = -diff  # ascend -log p_y
        return g.mean(axis=0)

    return grad


def _torch_grad(model, y, objective, output, n_features):
    torch = optional_import("torch", purpose="eot_pgd_l2_attack on torch models")
    module = model.module_ if hasattr(model, "module_") else model
    if not isinstance(module, torch.nn.Module):
        raise TypeError(
            f"eot_pgd_l2_attack: {type(model).__name__} is neither a torch.nn.Module, a "
            "skorch net (module_) nor a linear scikit-learn model."
        )
    params = list(module.parameters())
    dtype = params[0].dtype if params else torch.float32
    device = params[0].device if params else torch.device("cpu")
    if output != "regression":
        y_arr = np.asarray(y)
        if hasattr(model, "classes_") and model is not module:
            y_idx = _class_indices(model.classes_, y_arr)
        else:
            y_idx = y_arr.astype(np.int64)
        y_t = torch.as_tensor(y_idx, dtype=torch.long, device=device)
    else:
        y_t = torch.as_tensor(np.asarray(y, dtype=np.float64), dtype=dtype, device=device)
    state = {"sign": None}

    def forward(Zt):
        draws, n, d = Zt.shape
        try:
            out = module(Zt.reshape(draws * n, d))
        except RuntimeError as exc:
            raise ValueError(
                f"eot_pgd_l2_attack: the torch model failed on X with {n_features} features "
                f"(is X as wide as the model's input?): {exc}"
            ) from exc
        out = out.reshape(draws, n, -1)
        if output != "regression" and (
            int(y_t.min()) < 0 or int(y_t.max()) >= out.shape[-1]
        ):
            raise ValueError(
                f"y holds class indices outside 0..{out.shape[-1] - 1}, the model's "
                f"{out.shape[-1]} outputs."
            )
        return out

    def grad(Z):
        Zt = torch.as_tensor(Z, dtype=dtype, device=device).requires_grad_(True)
        out = forward(Zt)
        draws = out.shape[0]
        if output == "regression":
            f = out[..., 0]
            if state["sign"] is None:
                s = torch.sign(f.detach().mean(0) - y_t)
                state["sign"] = torch.where(s == 0, torch.ones_like(s), s)
            obj = (state["sign"] * f).sum() / draws
        else:
            if output == "logits":
                logp = torch.log_softmax(out, dim=-1)
            else:
                logp = torch.log(out.clamp_min(torch.finfo(out.dtype).tiny))
            logp_y = logp.gather(-1, y_t.view(1, -1, 1).expand(draws, -1, 1))[..., 0]
            obj = (-logp_y.exp()).sum() / draws if objective == "prob" else (-logp_y).sum() / draws
        (g,) = torch.autograd.grad(obj, Zt)
        return g.sum(0).detach().cpu().numpy().astype(np.float64)

    return module, grad


@validate_params(
    {
        "model": "no_validation",
        "X": ["array-like"],
        "y": ["array-like"],
        "radius": [Interval(Real, 0, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="left")],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "n_noise": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither"), None],
        "objective": [StrOptions({"prob", "ce"})],
        "output": [StrOptions({"logits", "proba", "regression"})],
        "clip": [tuple, list, None],
        "random_state": ["random_state", np.random.Generator],
    },
    prefer_skip_nested_validation=True,
)
def eot_pgd_l2_attack(
    model,
    X,
    y,
    radius,
    sigma,
    n_steps=30,
    n_noise=8,
    step_size=None,
    objective="prob",
    output="logits",
    clip=None,
    random_state=None,
):
    """l2 PGD with expectation over Gaussian noise (EOT), the attack for smoothed CP.

    Starting from ``delta = 0``, each of ``n_steps`` steps averages the gradient of the
    objective over ``n_noise`` fresh draws ``eps ~ N(0, sigma^2 I)``, moves each row by
    ``step_size`` along its normalised gradient (rows with zero gradient stay), projects
    onto ``||delta||_2 <= radius`` and, with ``clip``, clips ``x + delta`` into the box
    and projects again. Objectives: classifiers minimise ``E p_y(x + delta + eps)``
    (``"prob"``, the tps coverage event) or maximise ``E[-log p_y]`` (``"ce"``);
    regressors maximise ``s * E f(x + delta + eps)`` with
    ``s = sign(E f(x + eps) - y)`` (+1 on ties). ``sigma=0`` is plain PGD (the attack
    for vanilla CP).

    Parameters
    ----------
    model : estimator or torch module
        A fitted ``LogisticRegression`` (binary or multinomial), a fitted linear
        regressor (``coef_``, ``intercept_``), either behind a leading
        ``StandardScaler`` in a Pipeline (folded into the weights), a
        ``torch.nn.Module``, an object with ``module_`` (a skorch net), or a fitted
        :class:`RCP1Conformal` / :class:`SmoothedConformal` (its ``estimator_`` is
        attacked). Other scikit-learn models raise a ``TypeError``.
    X : array-like of shape (n_samples, n_features)
        Clean inputs (not modified).
    y : array-like of shape (n_samples,)
        True labels (values of ``classes_`` for scikit-learn classifiers and skorch
        nets with ``classes_``; indices 0..K-1 for bare torch modules) or targets.
    radius : float
        l2 budget r >= 0 per row.
    sigma : float
        Noise standard deviation >= 0 of the defended model (0: plain PGD).
    n_steps : int, default=30
        Number of PGD steps.
    n_noise : int, default=8
        Noise draws averaged per step.
    step_size : float, default=None
        Step length; None means ``2.5 * radius / n_steps``.
    objective : {"prob", "ce"}, default="prob"
        Classification objective (ignored for regressors).
    output : {"logits", "proba", "regression"}, default="logits"
        What a torch module returns (ignored for scikit-learn models): logits
        (softmax applied), probabilities, or one regression output.
    clip : tuple of (float, float), default=None
        Box ``(lo, hi)`` the attacked inputs must stay in.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the attack's noise; keep it independent of the defender's.

    Returns
    -------
    X_adv : ndarray of shape (n_samples, n_features)
        Attacked inputs with ``||X_adv - X||_2 <= radius`` on every row.

    See Also
    --------
    RCP1Conformal : The defended conformal wrapper.

    Notes
    -----
    Linear models use analytic gradients: for a softmax model with weights W,
    ``grad_x p_y = p_y (W_y - sum_k p_k W_k)``; a binary model is written as
    ``W = [0; w]``. Linear regressors are attacked exactly, in closed form:
    ``delta = r * s * w / ||w||`` (noise does not change the gradient); with ``clip``
    that step is clipped and projected once. Torch models get autograd gradients in
    ``eval()`` mode (the module's mode is restored); only the input gradient is
    computed. The last iterate is returned. The noise is drawn for all rows at once
    from one stream, so a row's attack depends on its position (permuting the rows
    gives other draws, equal in distribution).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn_cispa.conformal import eot_pgd_l2_attack
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=500).fit(X, y)
    >>> X_adv = eot_pgd_l2_attack(clf, X, y, radius=0.5, sigma=0.25, n_steps=10,
    ...                           random_state=0)
    >>> bool(np.all(np.linalg.norm(X_adv - X, axis=1) <= 0.5 + 1e-9))
    True
    >>> bool(clf.predict_proba(X_adv)[np.arange(150), y].mean()
    ...      < clf.predict_proba(X)[np.arange(150), y].mean())
    True
    """
    if clip is not None:
        if len(clip) != 2 or not all(np.isfinite(c) for c in clip) or not clip[0] < clip[1]:
            raise ValueError(
                f"clip must be a pair (lo, hi) of finite numbers with lo < hi, got {clip!r}."
            )
        clip = (float(clip[0]), float(clip[1]))
    X = check_array(X, dtype=np.float64, copy=True, input_name="X")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-d with {X.shape[0]} entries, got shape {y.shape}.")
    if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values.")
    radius, sigma = float(radius), float(sigma)
    rng = check_random_generator(random_state)
    model = _unwrap(model)

    torch_like = hasattr(model, "module_") or type(model).__module__.startswith("torch")
    if not torch_like:
        try:
            import torch

            torch_like = isinstance(model, torch.nn.Module)
        except ImportError:  # pragma: no cover
            torch_like = False
    if torch_like:
        module, grad = _torch_grad(model, y, objective, output, X.shape[1])
        with eval_mode(module):
            return _eot_pgd(grad, X, radius, sigma, n_steps, n_noise, step_size, clip, rng)

    check_is_fitted(model)
    final, W, b = _linear_parts(model)
    if W.shape[1] != X.shape[1]:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(final).__name__} expects {W.shape[1]}."
        )
    if is_regressor(final):
        if W.shape[0] != 1:
            raise TypeError("eot_pgd_l2_attack supports single-output linear regressors.")
        w = W[0]
        f = X @ w + b[0]
        s = np.where(f - y.astype(np.float64) >= 0, 1.0, -1.0)
        wn = np.linalg.norm(w)
        if wn == 0 or radius == 0:
            return X
        delta = radius * s[:, None] * (w / wn)[None, :]
        if clip is not None:
            delta = _project_l2(np.clip(X + delta, clip[0], clip[1]) - X, radius)
        return X + delta
    if not is_classifier(final) or type(final).__name__ not in _LOGISTIC:
        raise TypeError(
            f"eot_pgd_l2_attack: analytic gradients are implemented for LogisticRegression "
            f"and linear regressors, not {type(final).__name__}; pass a torch module instead."
        )
    grad = _linear_classifier_grad(final, W, b, y, objective)
    return _eot_pgd(grad, X, radius, sigma, n_steps, n_noise, step_size, clip, rng)
