"""CharMLPLanguageModel: a character-level window MLP language model trained through skorch."""

import numbers
import warnings

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted
from torch import nn

from sklearn_cispa.utils import (
    eval_mode,
    resolve_device,
    spawn_seeds,
    torch_generator,
    torch_rng_context,
)
from sklearn_cispa.utils._torch import DivergenceCheck

__all__ = ["CharMLPLanguageModel"]

_UNK = "\ufffd"  # the unknown symbol, last entry of vocab_
_EVAL_BATCH = 4096
_LOG_FLOAT_MAX = float(np.log(np.finfo(np.float64).max))  # exp() of more overflows


class _WindowLM(nn.Module):
    """Token ids (batch, length) -> next-token logits (batch, n_vocab).

    The last ``context`` ids are one-hot encoded (id -1 is padding: a zero vector), then
    Linear, ReLU, Linear. Shorter inputs are left-padded, longer ones are cut to their last
    ``context`` ids, so the module maps any token sequence to its next-token logits.
    """

    def __init__(self, context, n_vocab, hidden):
        super().__init__()
        self.context = int(context)
        self.n_vocab = int(n_vocab)
        self.hidden = nn.Linear(self.context * self.n_vocab, int(hidden))
        self.act = nn.ReLU()
        self.out = nn.Linear(int(hidden), self.n_vocab)
        # scikit-learn's MLP initialisation (Glorot uniform, factor 6 for ReLU, biases too)
        with torch.no_grad():
            for layer in (self.hidden, self.out):
                bound = float(np.sqrt(6.0 / (layer.in_features + layer.out_features)))
                layer.weight.uniform_(-bound, bound)
                layer.bias.uniform_(-bound, bound)

    def forward(self, ids):
        ids = torch.as_tensor(ids).long()
        if ids.numel() and (int(ids.min()) < -1 or int(ids.max()) >= self.n_vocab):
            raise ValueError(
                f"token ids must lie in [0, {self.n_vocab}) (the model's vocabulary; -1 "
                f"is padding); got ids from {int(ids.min())} to {int(ids.max())}."
            )
        if ids.ndim == 1:
            ids = ids[None, :]
        length = ids.shape[1]
        if length >= self.context:
            ids = ids[:, length - self.context:]
        else:
            pad = ids.new_full((ids.shape[0], self.context - length), -1)
            ids = torch.cat([pad, ids], dim=1)
        onehot = nn.functional.one_hot(ids + 1, self.n_vocab + 1)[..., 1:]
        x = onehot.reshape(ids.shape[0], -1).to(self.hidden.weight.dtype)
        return self.out(self.act(self.hidden(x)))


def _softmax(logits):
    """Module-level predict nonlinearity (a lambda would not pickle)."""
    return torch.softmax(logits, dim=-1)


def _as_document(doc, name):
    """One document: a str (bytes are decoded) or a tuple of the symbols of a sequence."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, bytes):
        return doc.decode("utf-8", errors="replace")
    # a scalar (None, a number) is not a document: np.asarray would make it a
    # one-symbol sequence and train or score on it without notice
    if doc is None or not hasattr(doc, "__len__") or np.ndim(doc) == 0:
        raise TypeError(
            f"{name} must be a str or a sequence of symbols (a list, tuple or array row); "
            f"got {type(doc).__name__} {doc!r}."
        )
    try:
        return tuple(np.asarray(doc).ravel().tolist())
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be a str or a flat sequence of symbols; got {doc!r}."
        ) from exc


def _as_documents(docs):
    """A list of documents, each a str or a sequence of hashable symbols."""
    if sp.issparse(docs):
        raise TypeError(
            "Sparse data was passed, but dense data is required: documents are sequences "
            "of symbols (strings or dense rows)."
        )
    if isinstance(docs, str):
        raise ValueError(
            "docs must be a list of documents (strings), not a single string; wrap it in "
            "a list."
        )
    if hasattr(docs, "ndim") and getattr(docs, "ndim", 1) == 1 and not isinstance(
        docs[0] if len(docs) else "", str
    ):
        raise ValueError(
            "docs must be a list of documents; got a 1-D array of non-strings. Pass a list "
            "of strings, or a 2-D array whose rows are symbol sequences."
        )
    if hasattr(docs, "dtype"):
        if np.asarray(docs).dtype.kind == "c":
            raise ValueError("Complex data not supported: documents hold real symbols.")
        shape = np.shape(docs)
        if len(shape) == 2 and shape[1] == 0:
            raise ValueError(
                f"Found array with 0 feature(s) (shape={shape}) while a minimum of 1 is "
                "required: every document is empty."
            )
    if docs is None or not hasattr(docs, "__iter__"):
        raise TypeError(
            f"docs must be a list of documents (strings); got {type(docs).__name__}."
        )
    out = [_as_document(doc, f"docs[{i}]") for i, doc in enumerate(docs)]
    if len(out) == 0:
        raise ValueError("docs is empty: at least one document is needed.")
    return out


class CharMLPLanguageModel(BaseEstimator):
    """A character-level next-character MLP language model, trained through skorch.

    The input is the one-hot encoding of the last ``context`` characters (left-padded at
    the start of a document), followed by one hidden ReLU layer and a softmax over the
    vocabulary: the model of scikit-learn's ``MLPClassifier(hidden)`` on one-hot
    windows, trained by a private ``skorch.NeuralNetClassifier``. It is the small model
    of the planted-canary benchmark of :class:`CriticalNeuronLocator`: trained on a
    corpus with repeated secrets, it reproduces them verbatim.

    Parameters
    ----------
    context : int, default=16
        Number of preceding characters the model sees.
    hidden : int, default=256
        Number of hidden ReLU units.
    alpha : float, default=1e-4
        L2 penalty on the weight matrices, in scikit-learn's ``MLPClassifier``
        convention: the loss of a mini-batch of ``b`` windows gets
        ``(alpha / 2) * ||W||^2 / b`` added (implemented as Adam weight decay
        ``alpha / b`` on the weights, not the biases).
    max_epochs : int, default=20
        Passes over the training windows.
    lr : float, default=1e-3
        Adam's learning rate.
    batch_size : int, default=200
        Windows per mini-batch.
    device : str, default="cpu"
        Torch device (``"cpu"``, ``"cuda"``, ``"cuda:<i>"`` or ``"auto"``).
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation and the shuffling.

    Attributes
    ----------
    vocab_ : list
        The sorted symbols of the training documents, then the unknown symbol ``"\\ufffd"``.
    module_ : torch.nn.Module
        The trained network: token ids ``(batch, length)`` to next-token logits
        ``(batch, len(vocab_))``; its hidden ReLU is ``module_.act``.
    net_ : skorch.NeuralNetClassifier
        The private skorch net that trained ``module_``.
    n_iter_ : int
        Epochs run.

    See Also
    --------
    CriticalNeuronLocator : Finds the units that carry a memorised string.
    make_canary_corpus : The planted-canary training text.

    Notes
    -----
    A document is a string (a sequence of characters) or any sequence of hashable
    symbols, for example a row of a 2-D array; each document contributes one training
    window per symbol, the first ones left-padded. Training uses float32 throughout
    (the module's weights, inputs and activations), for speed. Results depend on the
    order of the documents only through the shuffled mini-batches. A fit whose final
    training loss exceeds ``log(len(vocab_))`` (the uniform guess) raises a
    ``ConvergenceWarning``: the optimisation diverged or stalled; a fit whose training
    loss is not finite, or so large that its perplexity overflows (above about 709
    nats per character), raises a ``ValueError`` saying that it diverged. Token ids outside the
    vocabulary raise a ``ValueError`` in ``module_``.

    Examples
    --------
    >>> from sklearn_cispa.language import CharMLPLanguageModel
    >>> docs = ["abcabcabcabc abc", "abc abcabc abcabcabc"] * 5
    >>> lm = CharMLPLanguageModel(context=4, hidden=16, max_epochs=20, lr=1e-2,
    ...                           random_state=0).fit(docs)
    >>> lm.complete("abcab", 4)
    'cabc'
    >>> lm.perplexity(docs) < 2.0
    True
    """

    _parameter_constraints = {
        "context": [Interval(numbers.Integral, 1, None, closed="left")],
        "hidden": [Interval(numbers.Integral, 1, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "device": [str],
        "random_state": ["random_state"],
    }

    def __init__(self, context=16, hidden=256, alpha=1e-4, max_epochs=20, lr=1e-3,
                 batch_size=200, device="cpu", random_state=None):
        self.context = context
        self.hidden = hidden
        self.alpha = alpha
        self.max_epochs = max_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ encoding
    def encode(self, text):
        """Token ids of a text.

        Parameters
        ----------
        text : str or sequence
            A document (characters, or symbols of the training vocabulary). Unknown
            symbols map to the unknown id ``len(vocab_) - 1``.

        Returns
        -------
        ids : ndarray of shape (len(text),), dtype int64
            Indices into ``vocab_``.
        """
        check_is_fitted(self)
        text = _as_document(text, "text")
        unk = len(self.vocab_) - 1
        return np.fromiter((self._index.get(s, unk) for s in text), dtype=np.int64,
                           count=len(text))

    def _windows(self, docs):
        """(windows, next ids): every position of every document, left-padded windows."""
        ctx = int(self.context)
        rows, targets = [], []
        for doc in docs:
            ids = self.encode(doc)
            if len(ids) == 0:
                continue
            padded = np.concatenate([np.full(ctx, -1, dtype=np.int64), ids])
            win = np.lib.stride_tricks.sliding_window_view(padded[:-1], ctx)
            rows.append(win)
            targets.append(ids)
        if not rows:
            raise ValueError("every document is empty: there is nothing to model.")
        return np.ascontiguousarray(np.concatenate(rows)), np.concatenate(targets)

    # ------------------------------------------------------------------ training
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train the model on a list of documents.

        Parameters
        ----------
        X : list of str
            Training documents (or sequences of symbols, for example the rows of a 2-D
            array).
        y : None
            Ignored.

        Returns
        -------
        self : CharMLPLanguageModel
            The fitted model.
        """
        from skorch import NeuralNetClassifier

        docs = _as_documents(X)
        symbols = set()
        for doc in docs:
            symbols.update(doc)
        try:
            ordered = sorted(symbols)
        except TypeError:  # symbols of several types: order by type, then value
            ordered = sorted(symbols, key=lambda s: (type(s).__name__, repr(s)))
        self.vocab_ = [*ordered, _UNK]
        self._index = {s: i for i, s in enumerate(ordered)}
        windows, nxt = self._windows(docs)
        n_vocab = len(self.vocab_)
        device = resolve_device(self.device)
        init_seed, loader_seed = spawn_seeds(self.random_state, 2)
        with torch_rng_context(init_seed):
            module = _WindowLM(self.context, n_vocab, self.hidden)
        batch = int(min(self.batch_size, len(windows)))
        weight_decay = float(self.alpha) / batch
        if weight_decay > float(np.finfo(np.float32).max):
            del self.vocab_, self._index
            raise ValueError(
                f"alpha={self.alpha:g} is too large: training runs in float32 and the "
                f"weight decay alpha / batch = {weight_decay:.3g} exceeds float32's range "
                f"({float(np.finfo(np.float32).max):.3g}). Use alpha <= "
                f"{float(np.finfo(np.float32).max) * batch:.3g} (any alpha far above 1 "
                "already pins the weights at zero)."
            )
        if float(self.lr) > float(np.finfo(np.float32).max):
            del self.vocab_, self._index
            raise ValueError(
                f"lr={self.lr:g} is too large: training runs in float32, whose range ends "
                f"at {float(np.finfo(np.float32).max):.3g}; such a step diverges at once. "
                "Use a learning rate of order 1e-3..1e-1."
            )
        net = NeuralNetClassifier(
            module=module,
            criterion=nn.CrossEntropyLoss,
            optimizer=torch.optim.Adam,
            optimizer__param_groups=[
                ("*.weight", {"weight_decay": weight_decay}),
                ("*.bias", {"weight_decay": 0.0}),
            ],
            lr=float(self.lr),
            max_epochs=int(self.max_epochs),
            batch_size=batch,
            train_split=None,
            iterator_train__shuffle=True,
            iterator_train__generator=torch_generator(loader_seed),
            predict_nonlinearity=_softmax,
            callbacks=[("divergence_check", DivergenceCheck(type(self).__name__))],
            device=device,
            verbose=0,
            classes=np.arange(n_vocab),
        )
        try:
            with torch_rng_context(loader_seed, device=device):
                net.fit(windows, nxt)
        except ValueError:
            del self.vocab_, self._index  # a diverged fit leaves no fitted model behind
            raise
        # a finite loss can still be a diverged fit: worse than the uniform guess over the
        # vocabulary (log V nats per character), which any training should beat
        final = float(net.history[-1, "train_loss"])
        if final > _LOG_FLOAT_MAX:
            # its perplexity exp(loss) is not even representable: diverged, not stalled
            del self.vocab_, self._index
            raise ValueError(
                f"{type(self).__name__} diverged: its final training loss {final:.4g} nats "
                f"per character is beyond any model that learnt (the uniform guess has "
                f"{np.log(n_vocab):.4g}; its perplexity would overflow to inf). Lower the "
                f"learning rate lr (now {self.lr:g}); no model was kept."
            )
        self.net_ = net
        self.module_ = net.module_
        self.module_.eval()
        self.n_iter_ = len(net.history)
        if final > np.log(n_vocab):
            warnings.warn(
                f"{type(self).__name__} did not train: its final training loss "
                f"{final:.4g} nats per character exceeds that of the uniform guess over "
                f"the {n_vocab} symbols ({np.log(n_vocab):.4g}); the optimisation "
                f"diverged or stalled. Lower lr (now {self.lr:g}) or train longer.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    # ------------------------------------------------------------------ evaluation
    def _mean_nll(self, X):
        check_is_fitted(self)
        docs = _as_documents(X)
        windows, nxt = self._windows(docs)
        module = self.module_
        dev = next(module.parameters()).device
        total = 0.0
        with eval_mode(module), torch.no_grad():
            for start in range(0, len(windows), _EVAL_BATCH):
                w = torch.as_tensor(windows[start:start + _EVAL_BATCH], device=dev)
                t = torch.as_tensor(nxt[start:start + _EVAL_BATCH], device=dev)
                logits = module(w).double()
                total += float(nn.functional.cross_entropy(logits, t, reduction="sum"))
        value = total / len(windows)
        if not np.isfinite(value):
            raise ValueError(
                "CharMLPLanguageModel: the log-likelihood is not finite for these documents."
            )
        return value

    def score(self, X, y=None):
        """Minus the log perplexity: the mean log-probability per character.

        Parameters
        ----------
        X : list of str
            Documents to score.
        y : None
            Ignored.

        Returns
        -------
        score : float
            ``-log(perplexity)``, the mean natural-log probability of each character
            given its window (higher is better).
        """
        return -self._mean_nll(X)

    def perplexity(self, X):
        """Character perplexity of documents.

        Parameters
        ----------
        X : list of str
            Documents.

        Returns
        -------
        perplexity : float
            ``exp`` of the mean negative log-likelihood per character.
        """
        return float(np.exp(self._mean_nll(X)))

    def complete(self, prefix, n_chars):
        """Greedy continuation of a prefix.

        Active forward hooks (a :class:`NeuronMask`) apply, so this also shows what an
        intervened model writes.

        Parameters
        ----------
        prefix : str
            The text to continue.
        n_chars : int
            Number of characters to generate.

        Returns
        -------
        text : str
            The ``n_chars`` most likely next characters, chosen one at a time.
        """
        check_is_fitted(self)
        if isinstance(n_chars, bool) or not isinstance(n_chars, numbers.Integral) or (
            n_chars < 0
        ):
            raise ValueError(f"n_chars must be a non-negative integer; got {n_chars!r}.")
        ids = [int(i) for i in self.encode(_as_document(prefix, "prefix"))]
        module = self.module_
        dev = next(module.parameters()).device
        out = []
        with eval_mode(module), torch.no_grad():
            for _ in range(int(n_chars)):
                logits = module(torch.as_tensor([ids], device=dev))
                if not bool(torch.isfinite(logits).all()):
                    raise ValueError(
                        "The model's next-character logits are not finite (overflow, "
                        "for example under a NeuronMask with a huge scale)."
                    )
                nxt = int(torch.argmax(logits[0]))
                ids.append(nxt)
                out.append(self.vocab_[nxt])
        return "".join(str(s) for s in out)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.target_tags.required = False
        return tags
