"""MLPNetClassifier: a scikit-learn MLP classifier trained through a private skorch net."""

import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn
from torch.nn.utils import prune

from sklearn_cispa.neural._losses import AlphaSchedule, LabelSmoothingLoss, MaxSupLoss
from sklearn_cispa.neural._nanoadam import NanoAdam
from sklearn_cispa.neural._sign_in import SignInReset, apply_sign_in, merge_sign_in
from sklearn_cispa.pruning._prune_at_init import prune_at_init
from sklearn_cispa.utils import (
    resolve_device,
    spawn_seeds,
    torch_generator,
    torch_rng_context,
)
from sklearn_cispa.utils._torch import DivergenceCheck

__all__ = ["MLPNetClassifier"]

_SCORED_ROWS = 512  # rows scored by "snip" / "grasp"


class _MLP(nn.Module):
    """Linear-ReLU blocks (``layers``) and a Linear ``head``; float64, torch's default init."""

    def __init__(self, n_features, hidden_layer_sizes, n_classes, dtype=torch.float64):
        super().__init__()
        blocks, width = [], n_features
        for h in hidden_layer_sizes:
            blocks += [nn.Linear(width, h, dtype=dtype), nn.ReLU()]
            width = h
        self.layers = nn.Sequential(*blocks)
        self.head = nn.Linear(width, n_classes, dtype=dtype)

    def forward(self, X):
        return self.head(self.layers(X))


def _softmax(logits):
    """Module-level predict nonlinearity (a lambda would not pickle)."""
    return torch.softmax(logits, dim=-1)


def _standardisation(X):
    """Per-feature (mean, scale) computed without overflow for any finite X.

    Columns are divided by their largest magnitude first, so that squares of values
    near 1e300 do not overflow; constant columns get scale 1 (only centred).
    """
    peak = np.max(np.abs(X), axis=0)
    peak[peak == 0] = 1.0
    unit = X / peak
    mean = unit.mean(axis=0)
    std = unit.std(axis=0)
    std[std <= 1e-12 * np.maximum(np.abs(mean), 1.0)] = 0.0  # constant up to rounding
    return mean, std, peak


def _children_seeds(seed, n):
    children = np.random.SeedSequence(seed).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF) for c in children]


class MLPNetClassifier(ClassifierMixin, BaseEstimator):
    """Multi-layer perceptron classifier trained with MaxSup, NanoAdam or Sign-In via skorch.

    A scikit-learn classifier (not a skorch subclass): ``fit`` validates the data,
    standardises every feature (mean 0, standard deviation 1 over the training rows),
    builds a float64 ReLU MLP with torch's default initialisation, optionally prunes it
    at initialisation and wraps the weights in :class:`SignIn`, and trains it with a
    private ``skorch.NeuralNetClassifier`` stored in ``net_``.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=(100,)
        Widths of the hidden Linear-ReLU layers (may be empty: a linear model).
    loss : {"cross_entropy", "label_smoothing", "maxsup"}, default="cross_entropy"
        Training criterion: ``torch.nn.CrossEntropyLoss`` (ignores
        ``label_smoothing``), :class:`LabelSmoothingLoss` or :class:`MaxSupLoss`.
    label_smoothing : float, default=0.1
        Weight of the smoothing term at the first epoch, in [0, 1]: the smoothing of
        ``loss="label_smoothing"`` (torch's ``label_smoothing``) or the weight of
        MaxSup's top-1 penalty (the paper's ``alpha``, same scale). Not an L2 penalty
        (scikit-learn's ``MLPClassifier.alpha``): this classifier has no weight decay
        except with ``optimizer="adamw"``.
    label_smoothing_end : float or None, default=None
        Weight at the last epoch; when set, :class:`AlphaSchedule` ramps it linearly
        (the MaxSup paper's recipe is 0.1 -> 0.2).
    optimizer : {"adam", "adamw", "sgd", "nanoadam"}, default="adam"
        "adam" (no weight decay), "adamw" (torch's weight decay 0.01), "sgd" (momentum
        0.9), "nanoadam" (:class:`NanoAdam` with ``update_fraction`` and ``mask_interval=100``;
        the head and the biases are dense).
    lr : float, default=1e-3
        Learning rate.
    update_fraction : float, default=0.1
        NanoAdam's fraction of each hidden weight matrix updated per step, counted over
        the weights kept by the pruning mask (used only with ``optimizer="nanoadam"``).
        Not the complement of ``sparsity``: a 90%-sparse network with
        ``update_fraction=0.1`` updates 10% of its 10% kept weights per step.
    sparsity : float, default=0.0
        Fraction of the Linear weights (head included) pruned at initialisation (the
        package's one meaning of ``sparsity``), with
        :func:`sklearn_cispa.pruning.prune_at_init` (per matrix for "random", over all
        matrices for the other scores); 0 trains a dense network.
    pruning : {"random", "magnitude", "snip", "grasp", "synflow"}, default="random"
        Pruning-at-initialisation score ("snip" and "grasp" score ``min(n, 512)``
        training rows drawn from the mask's random stream).
    sign_in : bool, default=False
        Train every Linear weight through :class:`SignIn` (all-True masks when
        ``sparsity=0``) with a :class:`SignInReset` every 10 epochs. Not combinable with
        ``optimizer="nanoadam"``.
    beta : float, default=1.0
        Sign-In's conserved ``m**2 - w**2``.
    max_epochs : int, default=50
        Training epochs.
    batch_size : int, default=64
        Mini-batch size (``min(batch_size, n_samples)`` is used).
    device : {"cpu", "cuda", "auto"} or str, default="cpu"
        Training device; "auto" picks CUDA when available. "cuda" without a GPU raises a
        ``ValueError`` at fit. Predictions are numpy arrays either way.
    random_state : int, RandomState instance or None, default=None
        Seeds, through three independent streams, the initialisation, the pruning mask
        and the mini-batch shuffling. The caller's global torch RNG is left untouched.
    verbose : int, default=0
        When > 0, skorch prints its epoch table.

    Raises
    ------
    ValueError
        From ``fit`` when training diverges (the training loss or a weight becomes NaN
        or infinite, for example with a too large ``lr``): no NaN model is returned.
        The check is :class:`sklearn_cispa.utils._torch.DivergenceCheck`. From
        ``predict_proba`` when the inputs are so large that the logits overflow.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X has string column names.
    net_ : skorch.NeuralNetClassifier
        The fitted skorch net; ``net_.module_`` is a plain (merged, possibly sparse) MLP
        with submodules ``layers`` and ``head``.
    masks_ : dict of str to torch.Tensor or None
        The pruning masks (bool, on CPU), or None when ``sparsity=0`` and not ``sign_in``.
    n_iter_ : int
        Number of epochs run.

    See Also
    --------
    sklearn.neural_network.MLPClassifier : scikit-learn's MLP (numpy, CPU only).
    MaxSupLoss, LabelSmoothingLoss, NanoAdam, SignIn : The torch parts it exposes.

    Notes
    -----
    Features are standardised inside ``fit`` (and the same transform is applied at
    prediction), so the fitted model and its predictions do not change when a feature
    is shifted (a +1000 offset) or rescaled (units from 1e-6 to 1e6), up to rounding;
    constant features are only centred. The pruning scores of "snip" and "grasp" see
    the standardised rows too.

    Results depend on the order of the training rows: the mini-batches are drawn by
    shuffling the rows in the given order with the loader's seed, and the rows scored
    by "snip" / "grasp" are chosen by position. Permuting the rows gives a different
    (equally valid) fit for the same ``random_state``.

    Initialisation and masks are computed on CPU before skorch moves the module, so CPU
    and CUDA fits with one ``random_state`` start identically. Training uses float64,
    which makes predictions independent of batch composition. With ``sparsity > 0`` and
    ``sign_in=False`` the mask is applied with ``torch.nn.utils.prune.custom_from_mask``
    and made permanent after training; with ``sign_in`` the :class:`SignIn`
    parametrizations are merged after training, so ``net_.module_`` pickles. With
    ``optimizer="nanoadam"`` and pruning, NanoAdam selects only among the kept
    entries of each pruned matrix (its parameter group carries the mask), so none of
    its update budget goes to pruned weights.

    References
    ----------
    .. [1] Zhou et al. "MaxSup: Overcoming Representation Collapse in Label Smoothing",
       NeurIPS 2025.
    .. [2] Zhou, Jacobs, Gadhikar, Burkholz. "Pay Attention to Small Weights",
       arXiv:2506.21374.
    .. [3] Gadhikar, Jacobs, Zhou, Burkholz. "Sign-In to the Lottery: Reparameterizing
       Sparse Training From Scratch", arXiv:2504.12801.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_cispa.neural import MLPNetClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MLPNetClassifier(hidden_layer_sizes=(16,), loss="maxsup", lr=1e-2,
    ...                        max_epochs=20, random_state=0).fit(X, y)
    >>> clf.score(X, y) > 0.9
    True
    """

    _parameter_constraints: dict = {
        "hidden_layer_sizes": ["array-like", Interval(numbers.Integral, 1, None, closed="left")],
        "loss": [StrOptions({"cross_entropy", "label_smoothing", "maxsup"})],
        "label_smoothing": [Interval(numbers.Real, 0, 1, closed="both")],
        "label_smoothing_end": [Interval(numbers.Real, 0, 1, closed="both"), None],
        "optimizer": [StrOptions({"adam", "adamw", "sgd", "nanoadam"})],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "update_fraction": [Interval(numbers.Real, 0, 1, closed="right")],
        "sparsity": [Interval(numbers.Real, 0, 1, closed="left")],
        "pruning": [StrOptions({"random", "magnitude", "snip", "grasp", "synflow"})],
        "sign_in": ["boolean"],
        "beta": [Interval(numbers.Real, 0, None, closed="left")],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "device": [str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        loss="cross_entropy",
        label_smoothing=0.1,
        label_smoothing_end=None,
        optimizer="adam",
        lr=1e-3,
        update_fraction=0.1,
        sparsity=0.0,
        pruning="random",
        sign_in=False,
        beta=1.0,
        max_epochs=50,
        batch_size=64,
        device="cpu",
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.loss = loss
        self.label_smoothing = label_smoothing
        self.label_smoothing_end = label_smoothing_end
        self.optimizer = optimizer
        self.lr = lr
        self.update_fraction = update_fraction
        self.sparsity = sparsity
        self.pruning = pruning
        self.sign_in = sign_in
        self.beta = beta
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _hidden(self):
        sizes = np.asarray(self.hidden_layer_sizes, dtype=object).reshape(-1)
        out = []
        for h in sizes:
            if isinstance(h, bool) or not isinstance(h, numbers.Integral) or h < 1:
                raise ValueError(
                    f"hidden_layer_sizes must hold positive ints, got {self.hidden_layer_sizes!r}."
                )
            out.append(int(h))
        return tuple(out)

    def _criterion(self):
        if self.loss == "cross_entropy":
            return nn.CrossEntropyLoss()
        cls = MaxSupLoss if self.loss == "maxsup" else LabelSmoothingLoss
        return cls(alpha=self.label_smoothing, alpha_end=self.label_smoothing_end)

    def _optimizer_kwargs(self, masks):
        if self.optimizer == "adam":
            return torch.optim.Adam, {}
        if self.optimizer == "adamw":
            return torch.optim.AdamW, {}
        if self.optimizer == "sgd":
            return torch.optim.SGD, {"optimizer__momentum": 0.9}
        groups = [("head.*", {"dense": True})]
        # a pruned hidden matrix trains through weight_orig: its group carries the mask so
        # that NanoAdam selects among the kept entries only
        for name, mask in (masks or {}).items():
            if not name.startswith("head."):
                groups.insert(0, (f"{name}_orig", {"mask": mask}))
        return NanoAdam, {
            "optimizer__update_fraction": float(self.update_fraction),
            "optimizer__mask_interval": 100,
            "optimizer__param_groups": groups,
        }

    def _build_module(self, X, y_enc, hidden):
        """Seeded module and masks on CPU (init, mask and loader streams are independent)."""
        n = X.shape[0]
        init_seed, mask_seed, loader_seed = _children_seeds(
            spawn_seeds(self.random_state, 1)[0], 3
        )
        with torch_rng_context(init_seed):
            module = _MLP(X.shape[1], hidden, len(self.classes_))

        masks = None
        if self.sparsity > 0:
            X_sub = y_sub = None
            if self.pruning in ("snip", "grasp"):
                rows = check_random_state(mask_seed).choice(
                    n, size=min(n, _SCORED_ROWS), replace=False
                )
                X_sub, y_sub = X[rows], y_enc[rows]
            masks = prune_at_init(
                module,
                method=self.pruning,
                sparsity=float(self.sparsity),
                X=X_sub,
                y=y_sub,
                random_state=mask_seed,
            )
        elif self.sign_in:
            masks = {
                name: torch.ones_like(p, dtype=torch.bool)
                for name, p in module.named_parameters()
                if name.endswith("weight")
            }
        if self.sign_in:
            apply_sign_in(module, masks, beta=float(self.beta))
        elif masks is not None:
            for name, mask in masks.items():
                owner = module.get_submodule(name.rpartition(".")[0])
                prune.custom_from_mask(owner, "weight", mask)

        return module, masks, loader_seed

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : MLPNetClassifier
            The fitted classifier.
        """
        from skorch import NeuralNetClassifier

        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        if self.classes_.shape[0] < 2:
            raise ValueError(
                "MLPNetClassifier needs at least 2 classes in y; got 1 class."
            )
        hidden = self._hidden()
        device = resolve_device(self.device)
        if self.sign_in and self.optimizer == "nanoadam":
            raise ValueError(
                "sign_in=True cannot be combined with optimizer='nanoadam': the bottom-k "
                "selection of the Sign-In factors m or w is meaningless."
            )
        y_enc = y_enc.astype(np.int64)
        n = X.shape[0]
        self._x_mean, self._x_std, self._x_peak = _standardisation(X)
        X = self._standardise(X)  # a new array: the caller's X is never modified
        module, masks, loader_seed = self._build_module(X, y_enc, hidden)

        criterion = self._criterion()
        callbacks = [("divergence_check", DivergenceCheck(type(self).__name__))]
        if self.loss != "cross_entropy" and self.label_smoothing_end is not None:
            callbacks.append(("alpha_schedule", AlphaSchedule()))
        if self.sign_in:
            callbacks.append(("sign_in_reset", SignInReset(every=10)))
        optimizer, opt_kwargs = self._optimizer_kwargs(None if self.sign_in else masks)

        net = NeuralNetClassifier(
            module=module,
            criterion=criterion,
            optimizer=optimizer,
            lr=float(self.lr),
            max_epochs=int(self.max_epochs),
            batch_size=int(min(self.batch_size, n)),
            train_split=None,
            iterator_train__shuffle=True,
            iterator_train__generator=torch_generator(loader_seed),
            predict_nonlinearity=_softmax,
            callbacks=callbacks,
            device=device,
            verbose=int(self.verbose),
            classes=np.arange(len(self.classes_)),
            **opt_kwargs,
        )
        with torch_rng_context(loader_seed, device=device):
            net.fit(X, y_enc)

        if self.sign_in:
            merge_sign_in(net.module_)
        elif masks is not None:
            for name in masks:
                owner = net.module_.get_submodule(name.rpartition(".")[0])
                prune.remove(owner, "weight")
        if masks is not None:
            # the optimizer referred to the removed factors / weight_orig: rebuild it on the
            # plain parameters so that net_ is consistent (and pickles without stale state)
            net.initialize_optimizer()
        self.net_ = net
        self.masks_ = (
            None if masks is None else {k: v.detach().cpu() for k, v in masks.items()}
        )
        self.n_iter_ = len(net.history)
        return self

    def _standardise(self, X):
        Z = X / self._x_peak - self._x_mean
        scale = np.where(self._x_std > 0, self._x_std, 1.0)
        Z /= scale
        if not np.isfinite(Z).all():
            raise ValueError(
                "X holds values so far outside the training range that standardising them "
                "overflows; check the units of X."
            )
        return Z

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Softmax of the network's logits, columns ordered as ``classes_``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        X = self._standardise(X)
        # torch's DataLoader draws a base seed from the global RNG even without shuffling:
        # fork it so that predicting leaves the caller's RNG state alone
        with torch_rng_context(0, device=str(self.net_.device)):
            proba = self.net_.predict_proba(X)
        if not np.isfinite(proba).all():
            raise ValueError(
                "MLPNetClassifier produced non-finite probabilities: the logits overflow "
                "for these inputs (values far outside the training range)."
            )
        return proba

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input data.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags
