"""MaxSup and label-smoothing criteria with a linear ramp of their weight, and the skorch
callback that drives the ramp."""


import numbers

import torch
from sklearn.utils._param_validation import Interval, validate_parameter_constraints
from skorch.callbacks import Callback
from torch import nn
from torch.nn import functional as F

__all__ = ["AlphaSchedule", "LabelSmoothingLoss", "MaxSupLoss"]


def _ramp(alpha, alpha_end, epoch, n_epochs):
    """alpha + (alpha_end - alpha) * min(1, e / max(1, E - 1)); constant when alpha_end is None."""
    if alpha_end is None:
        return alpha
    frac = min(1.0, max(0, epoch) / max(1, n_epochs - 1))
    return alpha + (alpha_end - alpha) * frac


class _RampedLoss(nn.Module):
    """Shared parts: the alpha ramp, target validation, lazily computed diagnostics.

    The diagnostics (``last_ce``, ``last_penalty``, ``last_misclassified``) are computed
    from the last batch only when read, so that training pays nothing for them.
    """

    _alpha_upper = None

    def __init__(self, alpha=0.1, alpha_end=None):
        super().__init__()
        bound = Interval(numbers.Real, 0, self._alpha_upper, closed="both" if self._alpha_upper
                         else "left")
        validate_parameter_constraints(
            {"alpha": [bound], "alpha_end": [bound, None]},
            {"alpha": alpha, "alpha_end": alpha_end},
            caller_name=type(self).__name__,
        )
        self.alpha = float(alpha)
        self.alpha_end = None if alpha_end is None else float(alpha_end)
        self.current_alpha = self.alpha
        self._last = None

    def extra_repr(self):
        return f"alpha={self.alpha}, alpha_end={self.alpha_end}"

    def set_progress(self, epoch, n_epochs):
        """Set ``current_alpha`` for the 0-based ``epoch`` of ``n_epochs`` (the linear ramp).

        Parameters
        ----------
        epoch : int
            0-based epoch index.
        n_epochs : int
            Total number of epochs (>= 1).

        Returns
        -------
        current_alpha : float
        """
        if int(n_epochs) < 1:
            raise ValueError(f"n_epochs must be >= 1, got {n_epochs}.")
        self.current_alpha = float(_ramp(self.alpha, self.alpha_end, int(epoch), int(n_epochs)))
        return self.current_alpha

    @staticmethod
    def _check(logits, target):
        """Validate shapes like torch's cross-entropy; return True for soft targets."""
        if not isinstance(logits, torch.Tensor) or not isinstance(target, torch.Tensor):
            raise TypeError("logits and target must be torch tensors.")
        if logits.ndim < 2:
            raise ValueError(
                f"logits must have shape (n_samples, n_classes, ...), got {tuple(logits.shape)}."
            )
        if logits.shape[1] < 2:
            raise ValueError(f"logits need at least 2 classes, got {logits.shape[1]}.")
        if target.is_floating_point():
            if target.shape != logits.shape:
                raise ValueError(
                    f"soft targets must have the logits' shape {tuple(logits.shape)}, "
                    f"got {tuple(target.shape)}."
                )
            return True
        expected = (logits.shape[0], *logits.shape[2:])
        if tuple(target.shape) != expected:
            raise ValueError(
                f"integer targets must have shape {expected}, got {tuple(target.shape)}."
            )
        return False

    def forward(self, logits, target):
        """Return the batch mean of CE + current_alpha * penalty (see the class docstring)."""
        a = self.current_alpha
        if (
            type(logits) is torch.Tensor and type(target) is torch.Tensor
            and logits.ndim == 2 and target.ndim == 1 and not target.is_floating_point()
            and logits.shape[0] == target.shape[0] and logits.shape[1] >= 2
        ):  # the common case, on a fast path (no Module.__setattr__, no shape juggling)
            if target.dtype != torch.int64:
                target = target.long()
            # the diagnostics detach on access; the logits' graph is freed by backward
            self.__dict__["_last"] = (logits, target, False)
            if a == 0:
                return F.cross_entropy(logits, target)
            # CE + a (z_sel - zbar) = -sum_k t_k log softmax(z)_k for a constant target t
            # (see _fast_weights): one log-softmax and one dot product, the same two
            # autograd nodes as torch's fused cross-entropy (issue 16). The rows of the
            # weights are looked up in a table of every (label, argmax) pair (issue 33):
            # one gather instead of building and scattering into a fresh matrix
            n, k = logits.shape
            key = (n, k, a, logits.dtype, logits.device)
            table = self._tables.get(key)
            if table is None:
                table = self._weight_table(key)
            idx = self._row_index(logits, target, k)
            w = table.index_select(0, idx)
            return torch.dot(torch.log_softmax(logits, dim=1).view(-1), w.view(-1))
        soft = self._check(logits, target)
        target = target.to(logits.dtype) if soft else target.long()
        self.__dict__["_last"] = (logits.detach(), target.detach(), soft)
        if a == 0:
            return F.cross_entropy(logits, target)
        # General path (soft targets, (N, K, d1, ...) logits): the penalty is linear in
        # the logits up to a piecewise-constant choice (argmax or label), so
        # alpha * mean(penalty) = sum(logits * c) with c built without gradient.
        scale = a * logits.shape[1] / logits.numel()
        c = self._penalty_weights(logits.detach(), target, soft, scale)
        return F.cross_entropy(logits, target) + torch.dot(logits.reshape(-1), c.reshape(-1))

    _MAX_TABLES = 8  # weight tables kept per criterion (batch sizes and alphas seen last)

    @property
    def _tables(self):
        tables = self.__dict__.get("_weight_tables")
        if tables is None:
            tables = self.__dict__["_weight_tables"] = {}
        return tables

    def _weight_table(self, key):
        """The rows of :meth:`_fast_weights` of a batch of ``n`` rows and ``k`` classes
        for every pair of :meth:`_table_pairs` (label, argmax), built by
        :meth:`_fast_weights` itself, so that they are the same floats."""
        n, k, a, dtype, device = key
        labels, sel = self._table_pairs(k, device)
        z = torch.full((len(labels), k), -1e30, dtype=dtype, device=device)
        z.scatter_(1, sel[:, None], 0.0)  # a batch whose argmax is ``sel``
        table = self._fast_weights(z, labels, a, n).contiguous()
        tables = self._tables
        if len(tables) >= self._MAX_TABLES:
            tables.pop(next(iter(tables)))
        tables[key] = table
        return table

    # -- diagnostics, computed from the last batch on access ----------------------------
    def _flat_last(self):
        logits, target, soft = self._last
        logits, target = logits.detach(), target.detach()
        k = logits.shape[1]
        z = logits.movedim(1, -1).reshape(-1, k)
        t = target.movedim(1, -1).reshape(-1, k) if soft else target.reshape(-1)
        return z, t, soft

    @property
    def last_ce(self):
        """Mean cross-entropy of the last batch (NaN before the first forward pass)."""
        if self._last is None:
            return float("nan")
        z, t, soft = self._flat_last()
        return float(F.cross_entropy(z, t.to(z.dtype) if soft else t))

    @property
    def last_penalty(self):
        """Mean penalty of the last batch (NaN before the first forward pass)."""
        if self._last is None:
            return float("nan")
        z, t, soft = self._flat_last()
        return float(self._penalty(z, t, soft).mean())

    @property
    def last_misclassified(self):
        """Fraction of the last batch's rows whose argmax is not the label."""
        if self._last is None:
            return float("nan")
        z, t, soft = self._flat_last()
        label = t.argmax(dim=1) if soft else t
        return float((z.argmax(dim=1) != label).double().mean())

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_last"] = None  # the last batch is not part of the criterion
        state.pop("_weight_tables", None)  # a cache
        return state


class MaxSupLoss(_RampedLoss):
    r"""Max suppression: cross-entropy plus a penalty on the top-1 logit.

    For logits :math:`z \in \mathbb{R}^K` the loss of one row is
    :math:`\mathrm{CE}(z, y) + \alpha_t (z_{\max} - \bar z)` with
    :math:`\bar z = \frac{1}{K}\sum_k z_k`; the batch mean is returned. Label smoothing
    penalises :math:`z_y - \bar z` instead, so the two coincide on correctly classified
    rows while MaxSup drops label smoothing's push of a misclassified true logit further
    below the top one.

    Parameters
    ----------
    alpha : float, default=0.1
        Weight of the penalty at epoch 0 (>= 0).
    alpha_end : float or None, default=None
        Weight at the last epoch (>= 0); None keeps ``alpha`` constant. The paper's
        recipe ramps 0.1 -> 0.2. The ramp is
        :math:`\alpha_t = \alpha + (\alpha_{end} - \alpha)\min(1, e / \max(1, E - 1))`
        for the 0-based epoch ``e`` of ``E``, set through :meth:`set_progress` (the
        :class:`AlphaSchedule` callback does it in skorch).

    Attributes
    ----------
    current_alpha : float
        Penalty weight used by the next forward pass.
    last_ce, last_penalty, last_misclassified : float
        Batch means of the cross-entropy, of the penalty :math:`z_{\max} - \bar z`, and
        the fraction of rows whose argmax is not the label, from the last forward pass.

    See Also
    --------
    LabelSmoothingLoss : The baseline it replaces, with the same ramp.
    AlphaSchedule : skorch callback that ramps ``alpha``.

    Notes
    -----
    ``target`` is either int64 class indices of shape ``(N,)`` or float soft targets of
    shape ``(N, K)`` (rows summing to 1, e.g. Mixup); the penalty needs no label. As in
    torch's cross-entropy, logits of shape ``(N, K, d1, ...)`` (e.g. per-pixel) are
    accepted with targets ``(N, d1, ...)`` or ``(N, K, d1, ...)``; the mean is over all
    positions. Ties in
    the maximum go to the first index (``torch.max``), which receives the whole gradient.
    One row's penalty gradient is :math:`\alpha_t (1 - 1/K)` on the argmax logit and
    :math:`-\alpha_t / K` elsewhere. The reference code writes the ramp three ways (one
    divides by zero for one epoch); this class uses one clamped ramp.

    References
    ----------
    .. [1] Zhou et al. "MaxSup: Overcoming Representation Collapse in Label Smoothing",
       NeurIPS 2025, arXiv:2502.15798.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.neural import MaxSupLoss
    >>> loss = MaxSupLoss(alpha=0.1)
    >>> logits = torch.tensor([[2.0, 0.0, 1.0]])
    >>> ce = torch.nn.functional.cross_entropy(logits, torch.tensor([0]))
    >>> bool(torch.isclose(loss(logits, torch.tensor([0])), ce + 0.1 * (2.0 - 1.0)))
    True
    """

    _use_max = True

    @staticmethod
    def _fast_weights(z, y, a, n=None):
        """w = -t / N with t = onehot(y) - a onehot(argmax z) + a / K: loss = <log p, w>.

        (-sum_k t_k log p_k = CE + a (z_max - zbar) because sum_k t_k = 1.) ``n`` is
        the N of the mean (default: the rows of ``z``).
        """
        k = z.shape[1]
        n = z.shape[0] if n is None else n
        w = torch.full_like(z, -a / (k * n))
        w.scatter_(1, z.argmax(dim=1, keepdim=True), a / n - a / (k * n))
        w.scatter_add_(1, y.unsqueeze(1), torch.full_like(w[:, :1], -1.0 / n))
        return w

    @staticmethod
    def _table_pairs(k, device):
        """(label, argmax) of the weight table's rows: every pair, row ``label * k + argmax``."""
        return (torch.arange(k, device=device).repeat_interleave(k),
                torch.arange(k, device=device).repeat(k))

    @staticmethod
    def _row_index(z, y, k):
        """Row of the weight table of every sample: ``label * k + argmax`` (ties: the
        first index, as ``torch.argmax``)."""
        return torch.add(z.argmax(dim=1), y, alpha=k)

    @staticmethod
    def _penalty_weights(logits, target, soft, scale=1.0):
        """c with sum_k c_k z_k = scale * (z_max - zbar) per position (ties: first index)."""
        k = logits.shape[1]
        c = torch.full_like(logits, -scale / k)
        c.scatter_(1, logits.argmax(dim=1, keepdim=True), scale * (1.0 - 1.0 / k))
        return c

    @staticmethod
    def _penalty(z, t, soft):
        return z.max(dim=1).values - z.mean(dim=1)


class LabelSmoothingLoss(_RampedLoss):
    r"""Label-smoothed cross-entropy (torch's convention) with a ramped smoothing weight.

    The target is smoothed to :math:`(1 - \alpha_t)\,t + \alpha_t / K` over all ``K``
    classes, as ``torch.nn.CrossEntropyLoss(label_smoothing=alpha)`` does; per row this
    equals :math:`\mathrm{CE} + \alpha_t (z_y - \bar z)` for a hard label ``y``. This is
    the fair baseline for :class:`MaxSupLoss`: same ramp, same diagnostics.

    Parameters
    ----------
    alpha : float, default=0.1
        Smoothing at epoch 0, in [0, 1].
    alpha_end : float or None, default=None
        Smoothing at the last epoch, in [0, 1]; None keeps ``alpha`` constant.

    Attributes
    ----------
    current_alpha : float
        Smoothing used by the next forward pass.
    last_ce, last_penalty, last_misclassified : float
        Batch means of the cross-entropy, of the penalty :math:`z_y - \bar z` (soft
        targets: :math:`\sum_k t_k z_k - \bar z`), and the misclassified fraction.

    See Also
    --------
    MaxSupLoss : Penalises the top-1 logit instead of the true-class logit.
    AlphaSchedule : skorch callback that ramps ``alpha``.

    Notes
    -----
    The long-tail baseline of the MaxSup reference code spreads the smoothing mass over
    the wrong classes only; this class follows torch (and timm's
    ``LabelSmoothingCrossEntropy``), which spreads ``alpha / K`` over all classes.

    References
    ----------
    .. [1] Szegedy et al. "Rethinking the Inception Architecture for Computer Vision",
       CVPR 2016.
    .. [2] Zhou et al. "MaxSup: Overcoming Representation Collapse in Label Smoothing",
       NeurIPS 2025, arXiv:2502.15798.

    Examples
    --------
    >>> import torch
    >>> from sklearn_cispa.neural import LabelSmoothingLoss
    >>> logits, y = torch.tensor([[2.0, 0.0, 1.0]]), torch.tensor([1])
    >>> ref = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(logits, y)
    >>> bool(torch.isclose(LabelSmoothingLoss(0.1)(logits, y), ref))
    True
    """

    _alpha_upper = 1.0
    _use_max = False

    @staticmethod
    def _fast_weights(z, y, a, n=None):
        """w = -t / N with t = (1 - a) onehot(y) + a / K (torch's smoothing); ``n`` is
        the N of the mean (default: the rows of ``z``)."""
        k = z.shape[1]
        n = z.shape[0] if n is None else n
        w = torch.full_like(z, -a / (k * n))
        w.scatter_(1, y.unsqueeze(1), -(1.0 - a + a / k) / n)
        return w

    @staticmethod
    def _table_pairs(k, device):
        """(label, argmax) of the weight table's rows: the weights ignore the argmax, so
        one row per label."""
        return torch.arange(k, device=device), torch.zeros(k, dtype=torch.int64, device=device)

    @staticmethod
    def _row_index(z, y, k):
        """Row of the weight table of every sample: its label."""
        return y

    @staticmethod
    def _penalty_weights(logits, target, soft, scale=1.0):
        """c with sum_k c_k z_k = scale * (z_y - zbar) (soft: sum_k t_k z_k - zbar)."""
        k = logits.shape[1]
        if soft:
            return (target.detach() - 1.0 / k).mul_(scale)
        c = torch.full_like(logits, -scale / k)
        c.scatter_(1, target.unsqueeze(1), scale * (1.0 - 1.0 / k))
        return c

    @staticmethod
    def _penalty(z, t, soft):
        zy = (t.to(z.dtype) * z).sum(dim=1) if soft else z.gather(1, t.unsqueeze(1)).squeeze(1)
        return zy - z.mean(dim=1)


class AlphaSchedule(Callback):
    """skorch callback that ramps the criterion's ``alpha`` linearly over the epochs.

    At the start of every epoch it calls
    ``net.criterion_.set_progress(len(net.history) - 1, net.max_epochs)`` (skorch has
    already appended the epoch's history row) and records the weight in the history
    under ``"alpha"``.

    Attributes
    ----------
    None

    See Also
    --------
    MaxSupLoss, LabelSmoothingLoss : The criteria it drives.

    Notes
    -----
    Raises a ``TypeError`` at the start of training when the criterion has no
    ``set_progress`` method (for example ``torch.nn.CrossEntropyLoss``).

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from skorch import NeuralNetClassifier
    >>> from sklearn_cispa.neural import AlphaSchedule, MaxSupLoss
    >>> X = np.random.RandomState(0).randn(40, 4).astype("float32")
    >>> y = (X[:, 0] > 0).astype("int64")
    >>> net = NeuralNetClassifier(torch.nn.Linear(4, 2), criterion=MaxSupLoss(0.1, 0.2),
    ...                           max_epochs=3, train_split=None, verbose=0,
    ...                           callbacks=[AlphaSchedule()])
    >>> [round(a, 3) for a in net.fit(X, y).history[:, "alpha"]]
    [0.1, 0.15, 0.2]
    """

    def on_train_begin(self, net, **kwargs):
        if not callable(getattr(net.criterion_, "set_progress", None)):
            raise TypeError(
                "AlphaSchedule needs a criterion with a set_progress(epoch, n_epochs) method "
                f"(MaxSupLoss or LabelSmoothingLoss), got {type(net.criterion_).__name__}."
            )

    def on_epoch_begin(self, net, **kwargs):
        self.on_train_begin(net)
        alpha = net.criterion_.set_progress(len(net.history) - 1, net.max_epochs)
        net.history.record("alpha", float(alpha))
