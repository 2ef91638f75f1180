"""TransformerLanguageModel: a Hugging Face ``transformers`` causal LM as an estimator."""

import copy
import numbers
import os
import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

from sklearn_cispa.language._charlm import _as_documents
from sklearn_cispa.language._tokenizer import CharTokenizer, _pad_rows, _TokenizerAdapter
from sklearn_cispa.utils import (
    eval_mode,
    optional_import,
    resolve_device,
    spawn_seeds,
    torch_rng_context,
)
from sklearn_cispa.utils._torch import check_finite_training

__all__ = ["TransformerLanguageModel"]

_PURPOSE = "TransformerLanguageModel"


def _transformers():
    return optional_import("transformers", purpose=_PURPOSE)


def _is_pretrained_model(obj):
    try:
        import transformers
    except ImportError:  # pragma: no cover - without the extra no instance can exist
        return False
    return isinstance(obj, transformers.PreTrainedModel)


def _chunks(seq, block_size):
    """Windows of ``block_size + 1`` tokens overlapping by one: each predicts its last ones.

    Every token after the first is predicted exactly once, from the tokens before it
    in its window.
    """
    n = len(seq)
    out, start = [], 0
    while start < n - 1:
        out.append(seq[start:start + block_size + 1])
        start += block_size
    return out


class TransformerLanguageModel(BaseEstimator):
    """A ``transformers`` causal language model (GPT-2, LLaMA, ...) as an estimator.

    ``fit`` builds the model (from an architecture's config with random initialisation,
    from a local checkpoint, or from a model instance, which is trained on from its
    weights) and trains it on a list of documents with AdamW for ``max_steps`` steps of
    ``batch_size`` windows. The fitted model scores documents by their token
    log-likelihood, completes prefixes greedily, and is the substrate of the library's
    language-model methods (critical neurons, LiRA on language models, GASP). Nothing is
    downloaded: architectures are built from their configs, checkpoints and tokenizers
    are read from local directories.

    Parameters
    ----------
    model : str or transformers.PreTrainedModel, default="gpt2"
        A ``transformers`` architecture name (``model_type``, for example ``"gpt2"``,
        ``"gpt_neox"``, ``"llama"``, ``"opt"``, ``"phi"``, ``"qwen2"``), built from its
        default config updated with ``config``, with random initialisation; a local
        checkpoint directory, loaded offline; or a causal-LM model instance, copied and
        trained on from its weights (the instance itself is not modified).
    config : dict, default=None
        Config overrides (for GPT-2 for example ``n_layer=2, n_embd=64, n_head=4``). For
        a checkpoint they are passed to ``from_pretrained``; not allowed with an instance.
    tokenizer : "char", str or tokenizer, default="char"
        ``"char"``: a character vocabulary learnt from the training documents (any
        sequence of hashable symbols is a document then), with ``"<|endoftext|>"`` as
        beginning and end of every document and ``"\\ufffd"`` for unseen symbols. A local
        tokenizer directory (loaded offline with ``AutoTokenizer``), or a tokenizer
        instance (a ``transformers`` tokenizer, or the ``tokenizer_`` of another fitted
        model, to share one vocabulary across models).
    block_size : int, default=128
        Tokens of context per training and scoring window; longer documents are cut into
        windows that overlap by one token.
    max_steps : int, default=1000
        Optimiser steps.
    batch_size : int, default=32
        Windows per step.
    lr : float, default=3e-4
        AdamW's peak learning rate.
    weight_decay : float, default=0.0
        AdamW's decoupled weight decay.
    warmup_steps : int, default=0
        Steps of linear warm-up, after which the learning rate decays linearly to 0 at
        ``max_steps`` (the default schedule of ``transformers.Trainer``).
    device : str, default="cpu"
        Torch device (``"cpu"``, ``"cuda"``, ``"cuda:<i>"`` or ``"auto"``).
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation, the dropout and the order of the training windows.
    verbose : int, default=0
        Print the training loss ten times per fit when positive.

    Attributes
    ----------
    model_ : transformers.PreTrainedModel
        The trained model, in eval mode.
    tokenizer_ : CharTokenizer or transformers tokenizer
        The tokenizer used.
    n_steps_ : int
        Optimiser steps run.
    loss_curve_ : list of float
        Mean training loss (nats per token) of each step.
    training_order_ : ndarray of shape (n_documents,)
        Per training document, the 0-based step at which it was last seen in training
        (-1: never drawn).

    See Also
    --------
    CharMLPLanguageModel : A character window MLP, the small model whose exact minimal
        neuron sets can be computed.

    Notes
    -----
    The input of a document is its tokens between the tokenizer's beginning and end
    tokens (the end token is predicted too, so an empty document still has one token).
    Documents longer than ``block_size`` are scored window by window: a token at the
    start of a window sees only the token before it from the previous window. Training
    draws windows without replacement in a seeded random order, reshuffled after each
    pass. A fixed ``random_state`` reproduces the weights and ``training_order_`` bit for
    bit on the CPU. A fit whose final training loss exceeds ``log(vocabulary size)``
    warns with a ``ConvergenceWarning``; a non-finite loss raises a ``ValueError``.

    Examples
    --------
    >>> from sklearn_cispa.language import TransformerLanguageModel
    >>> docs = ["the cat sat on the mat.", "the dog sat on the log."] * 8
    >>> lm = TransformerLanguageModel(
    ...     "gpt2", config=dict(n_layer=1, n_embd=32, n_head=2), block_size=32,
    ...     max_steps=150, batch_size=8, lr=3e-3, random_state=0).fit(docs)
    >>> lm.complete("the cat sat on the ", 4)
    'mat.'
    >>> seen, unseen = lm.score_samples(["the cat sat on the mat.", "xq zv kj"])
    >>> bool(seen > unseen)
    True
    """

    _parameter_constraints = {
        "model": [str, HasMethods(["forward", "save_pretrained"])],
        "config": [dict, None],
        "tokenizer": [str, HasMethods(["encode", "decode"])],
        "block_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_steps": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "lr": [Interval(numbers.Real, 0, None, closed="neither")],
        "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
        "warmup_steps": [Interval(numbers.Integral, 0, None, closed="left")],
        "device": [str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, model="gpt2", config=None, tokenizer="char", block_size=128,
                 max_steps=1000, batch_size=32, lr=3e-4, weight_decay=0.0, warmup_steps=0,
                 device="cpu", random_state=None, verbose=0):
        self.model = model
        self.config = config
        self.tokenizer = tokenizer
        self.block_size = block_size
        self.max_steps = max_steps
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.warmup_steps = warmup_steps
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ building
    def _build_tokenizer(self, docs):
        tok = self.tokenizer
        if isinstance(tok, str):
            if tok == "char":
                return CharTokenizer.from_documents(docs)
            if not os.path.isdir(tok):
                raise ValueError(
                    f"tokenizer={tok!r} is neither 'char' nor a local tokenizer directory "
                    "(nothing is downloaded)."
                )
            transformers = _transformers()
            return transformers.AutoTokenizer.from_pretrained(tok, local_files_only=True)
        return tok

    def _build_model(self, adapter, init_seed):
        transformers = _transformers()
        overrides = dict(self.config or {})
        n_vocab = len(adapter)
        if _is_pretrained_model(self.model):
            if overrides:
                raise ValueError(
                    "config overrides cannot be applied to a model instance; pass an "
                    "architecture name or a checkpoint directory with config."
                )
            model = copy.deepcopy(self.model)
        elif isinstance(self.model, str) and os.path.isdir(self.model):
            model = transformers.AutoModelForCausalLM.from_pretrained(
                self.model, local_files_only=True, **overrides
            )
        elif isinstance(self.model, str):
            from transformers import CONFIG_MAPPING

            if self.model not in CONFIG_MAPPING:
                raise ValueError(
                    f"model={self.model!r} is neither a local checkpoint directory nor a "
                    "transformers architecture name such as 'gpt2', 'llama' or "
                    "'gpt_neox' (nothing is downloaded)."
                )
            special = {k: v for k, v in (("bos_token_id", adapter.bos),
                                          ("eos_token_id", adapter.eos),
                                          ("pad_token_id", adapter.eos)) if v is not None}
            try:
                cfg = transformers.AutoConfig.for_model(
                    self.model, **{"vocab_size": n_vocab, **special, **overrides}
                )
            except (TypeError, ValueError) as exc:
                raise ValueError(f"config {overrides!r} is invalid for {self.model!r}: {exc}"
                                 ) from exc
            with torch_rng_context(init_seed):
                try:
                    model = transformers.AutoModelForCausalLM.from_config(cfg)
                except ValueError as exc:
                    raise ValueError(
                        f"{self.model!r} has no causal language-model head in transformers: "
                        f"{exc}"
                    ) from exc
        else:  # pragma: no cover - excluded by the parameter constraints
            raise TypeError(f"model must be a str or a PreTrainedModel, got {self.model!r}.")
        if not hasattr(model, "get_input_embeddings"):
            raise TypeError(f"model must be a transformers causal LM, got {type(model)}.")
        n_embed = model.get_input_embeddings().num_embeddings
        if n_embed < n_vocab:
            with torch_rng_context(init_seed):
                model.resize_token_embeddings(n_vocab)
        cfg = model.config
        limit = getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None)
        if limit is not None and self.block_size > limit:
            raise ValueError(
                f"block_size={self.block_size} exceeds the {limit} positions of the model."
            )
        return model

    # ------------------------------------------------------------------ data
    def _documents(self, X, adapter=None):
        docs = _as_documents(X)
        adapter = adapter or self._adapter
        if not adapter.char:
            bad = [type(d).__name__ for d in docs if not isinstance(d, str)]
            if bad:
                raise TypeError(
                    f"documents must be strings for a transformers tokenizer; got {bad[0]}."
                )
        return docs

    def _windows(self, docs, adapter):
        """All windows (int64 arrays) and, per window, the index of its document."""
        windows, owner = [], []
        for i, doc in enumerate(docs):
            seq = adapter.sequence(doc)
            if len(seq) < 2:
                raise ValueError(
                    f"document {i} has no token to predict (empty, and the tokenizer has "
                    "no beginning or end token)."
                )
            for w in _chunks(seq, int(self.block_size)):
                windows.append(w)
                owner.append(i)
        return windows, np.asarray(owner, dtype=np.int64)

    @staticmethod
    def _batch(windows, device, pad_id):
        import torch

        ids, mask = _pad_rows([w[:-1] for w in windows], pad_id)
        labels, _ = _pad_rows([w[1:] for w in windows], -100)
        as_t = lambda a: torch.as_tensor(a, device=device)  # noqa: E731
        return as_t(ids), as_t(mask), as_t(labels)

    # ------------------------------------------------------------------ training
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train the language model on documents.

        Parameters
        ----------
        X : list of str
            Training documents (with ``tokenizer="char"``, sequences of symbols such as
            the rows of a 2-D array are documents too).
        y : None
            Ignored.

        Returns
        -------
        self : TransformerLanguageModel
            The fitted model.
        """
        import torch

        _transformers()
        docs = _as_documents(X)
        tokenizer = self._build_tokenizer(docs)
        adapter = _TokenizerAdapter(tokenizer)
        docs = self._documents(docs, adapter)
        init_seed, order_seed, train_seed = spawn_seeds(self.random_state, 3)
        device = resolve_device(self.device)
        model = self._build_model(adapter, init_seed).to(device)
        windows, owner = self._windows(docs, adapter)
        pad = adapter.eos if adapter.eos is not None else 0
        n_vocab = len(adapter)

        dtype = next(model.parameters()).dtype
        limit = float(torch.finfo(dtype).max) if dtype.is_floating_point else np.inf
        for name, value in (("lr", float(self.lr)),
                            ("lr * weight_decay", float(self.lr) * float(self.weight_decay))):
            if value > limit:
                raise ValueError(
                    f"{name}={value:g} is too large: the model trains in {dtype}, whose "
                    f"range ends at {limit:.3g}; such a step diverges at once. Use a "
                    "learning rate such as 1e-4 to 1e-2."
                )
        optimizer = torch.optim.AdamW(model.parameters(), lr=float(self.lr),
                                      weight_decay=float(self.weight_decay))
        total, warm = int(self.max_steps), int(self.warmup_steps)

        def schedule(step):  # linear warm-up, then linear decay to 0 (Trainer's default)
            if step < warm:
                return (step + 1) / warm
            return max(0.0, (total - step) / max(1, total - warm))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        rng = np.random.default_rng(order_seed)
        batch = min(int(self.batch_size), len(windows))
        order, pos = rng.permutation(len(windows)), 0
        training_order = np.full(len(docs), -1, dtype=np.int64)
        losses = []
        report_every = max(1, total // 10)
        model.train()
        with torch_rng_context(train_seed, device=device):
            for step in range(total):
                if pos + batch > len(order):
                    order, pos = rng.permutation(len(windows)), 0
                picked = order[pos:pos + batch]
                pos += batch
                ids, mask, labels = self._batch([windows[i] for i in picked], device, pad)
                logits = model(input_ids=ids, attention_mask=mask).logits
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                    ignore_index=-100,
                )
                check_finite_training(loss, epoch=step + 1, estimator=type(self).__name__)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                losses.append(float(loss.detach()))
                training_order[owner[picked]] = step
                if self.verbose and ((step + 1) % report_every == 0 or step + 1 == total):
                    print(f"[{type(self).__name__}] step {step + 1}/{total} "
                          f"loss {losses[-1]:.4f}")
        model.eval()
        self.model_ = model
        self.tokenizer_ = tokenizer
        self._adapter = adapter
        self.n_steps_ = total
        self.loss_curve_ = losses
        self.training_order_ = training_order
        tail = float(np.mean(losses[-max(1, total // 10):]))
        if tail > np.log(n_vocab):
            warnings.warn(
                f"{type(self).__name__} did not train: its final training loss {tail:.4g} "
                f"nats per token exceeds that of the uniform guess over the {n_vocab} "
                f"tokens ({np.log(n_vocab):.4g}). Lower lr (now {self.lr:g}) or train longer.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_adapter", None)  # rebuilt from tokenizer_ on unpickling
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "tokenizer_" in state:
            self._adapter = _TokenizerAdapter(state["tokenizer_"])

    # ------------------------------------------------------------------ scoring
    def token_log_likelihoods(self, X):
        """Log-probability of every predicted token of every document.

        Parameters
        ----------
        X : list of str
            Documents.

        Returns
        -------
        log_likelihoods : list of ndarray of shape (n_tokens_i,)
            Natural-log probability of each token (the end token included) given the
            tokens before it, per document.
        """
        import torch

        check_is_fitted(self)
        docs = self._documents(X)
        windows, owner = self._windows(docs, self._adapter)
        model = self.model_
        device = next(model.parameters()).device
        pad = self._adapter.eos if self._adapter.eos is not None else 0
        pieces = [[] for _ in docs]
        step = max(1, 4 * int(self.batch_size))
        with eval_mode(model), torch.no_grad():
            for start in range(0, len(windows), step):
                chunk = windows[start:start + step]
                ids, mask, labels = self._batch(chunk, device, pad)
                logits = model(input_ids=ids, attention_mask=mask).logits.double()
                logp = torch.log_softmax(logits, dim=-1)
                safe = labels.clamp(min=0)
                picked = logp.gather(-1, safe[..., None])[..., 0].cpu().numpy()
                for r, w in enumerate(chunk):
                    pieces[owner[start + r]].append(picked[r, :len(w) - 1])
        out = [np.concatenate(p) for p in pieces]
        if not all(np.all(np.isfinite(o)) for o in out):
            raise ValueError(
                "the model's log-likelihoods are not finite for these documents (overflow, "
                "for example under a NeuronMask with a huge scale)."
            )
        return out

    def score_samples(self, X):
        """Mean token log-likelihood of each document (higher: more likely).

        Parameters
        ----------
        X : list of str
            Documents.

        Returns
        -------
        scores : ndarray of shape (n_documents,)
            The mean natural-log probability per token of each document.
        """
        return np.array([ll.mean() for ll in self.token_log_likelihoods(X)])

    def score(self, X, y=None):
        """Mean log-likelihood per token over all documents (minus the log perplexity).

        Parameters
        ----------
        X : list of str
            Documents.
        y : None
            Ignored.

        Returns
        -------
        score : float
            The mean natural-log probability of a token, pooled over the documents.
        """
        return float(np.concatenate(self.token_log_likelihoods(X)).mean())

    def perplexity(self, X):
        """Token perplexity of documents.

        Parameters
        ----------
        X : list of str
            Documents.

        Returns
        -------
        perplexity : float
            ``exp(-score(X))``.
        """
        return float(np.exp(-self.score(X)))

    # ------------------------------------------------------------------ text
    def encode(self, text, add_special_tokens=False):
        """Token ids of a text.

        Parameters
        ----------
        text : str
            The text (with ``tokenizer="char"``, any sequence of symbols).
        add_special_tokens : bool, default=False
            Prepend the beginning token, as the model sees the start of a document (and
            as :meth:`complete` reads its prefix): the ids to give a token-level method
            such as ``CriticalNeuronLocator.localize`` for a prefix.

        Returns
        -------
        ids : ndarray of shape (n_tokens,), dtype int64
        """
        check_is_fitted(self)
        if not self._adapter.char and not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}.")
        ids = self._adapter.encode(text)
        if add_special_tokens and self._adapter.bos is not None:
            ids = np.concatenate([np.asarray([self._adapter.bos], np.int64), ids])
        return ids

    def decode(self, ids):
        """Text of token ids (special tokens dropped).

        Parameters
        ----------
        ids : array-like of int
            Token ids.

        Returns
        -------
        text : str
        """
        check_is_fitted(self)
        ids = np.asarray(ids)
        if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0
                         or ids.max() >= len(self._adapter)):
            raise ValueError(
                f"ids must be token ids in [0, {len(self._adapter)}); got {ids!r}."
            )
        return self._adapter.decode(ids.ravel())

    def complete(self, prefix, max_new_tokens):
        """Greedy continuation of a prefix.

        Active forward hooks on ``model_`` (a ``NeuronMask``) apply.

        Parameters
        ----------
        prefix : str
            The text to continue; it follows the beginning token.
        max_new_tokens : int
            Tokens to generate; generation stops early at the end token.

        Returns
        -------
        text : str
            The decoded continuation (without the prefix).
        """
        import torch

        check_is_fitted(self)
        if isinstance(max_new_tokens, bool) or not isinstance(
            max_new_tokens, numbers.Integral
        ) or max_new_tokens < 0:
            raise ValueError(
                f"max_new_tokens must be a non-negative integer; got {max_new_tokens!r}."
            )
        adapter = self._adapter
        head = [adapter.bos] if adapter.bos is not None else []
        seq = head + [int(i) for i in self.encode(prefix)]
        if not seq:
            raise ValueError("prefix is empty and the tokenizer has no beginning token.")
        model = self.model_
        device = next(model.parameters()).device
        out = []
        with eval_mode(model), torch.no_grad():
            for _ in range(int(max_new_tokens)):
                ctx = seq[-int(self.block_size):]
                ids = torch.as_tensor([ctx], device=device)
                logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
                last = logits[0, -1]
                if not bool(torch.isfinite(last).all()):
                    raise ValueError(
                        "The model's next-token logits are not finite (overflow, for "
                        "example under a NeuronMask with a huge scale)."
                    )
                nxt = int(torch.argmax(last))
                if adapter.eos is not None and nxt == adapter.eos:
                    break
                seq.append(nxt)
                out.append(nxt)
        return adapter.decode(out)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.target_tags.required = False
        tags.non_deterministic = False
        return tags
