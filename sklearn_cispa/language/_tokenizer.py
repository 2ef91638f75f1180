"""The character tokenizer learnt in ``TransformerLanguageModel.fit`` and the tokenizer adapter."""

import numpy as np

__all__ = []

EOS_TOKEN = "<|endoftext|>"
UNK_TOKEN = "\ufffd"


def _sorted_symbols(symbols):
    try:
        return sorted(symbols)
    except TypeError:  # symbols of several types: order by type, then value
        return sorted(symbols, key=lambda s: (type(s).__name__, repr(s)))


class CharTokenizer:
    """A character (symbol) vocabulary: one id per symbol, then unknown, then end-of-text.

    A document is a string (its characters are the symbols) or any sequence of hashable
    symbols. The end-of-text token ``"<|endoftext|>"`` starts and ends every document,
    as in GPT-2; unseen symbols map to the unknown token ``"\\ufffd"``.

    Parameters
    ----------
    symbols : iterable
        The symbols of the vocabulary.

    Attributes
    ----------
    vocab : list
        The sorted symbols, then ``"\ufffd"`` and ``"<|endoftext|>"``.
    unk_token_id, eos_token_id, bos_token_id, pad_token_id : int
        Ids of the special tokens (beginning, end and padding are one token).

    See Also
    --------
    TransformerLanguageModel : Learns one in ``fit`` with ``tokenizer="char"``.

    Examples
    --------
    >>> from sklearn_cispa.language import CharTokenizer
    >>> tok = CharTokenizer.from_documents(["abba", "cab"])
    >>> tok.vocab
    ['a', 'b', 'c', '\ufffd', '<|endoftext|>']
    >>> tok.encode("cabz").tolist()
    [2, 0, 1, 3]
    >>> tok.decode([2, 0, 1, 4])
    'cab'
    """

    def __init__(self, symbols):
        ordered = _sorted_symbols(set(symbols) - {UNK_TOKEN, EOS_TOKEN})
        self.vocab = [*ordered, UNK_TOKEN, EOS_TOKEN]
        self._index = {s: i for i, s in enumerate(ordered)}
        self.unk_token_id = len(ordered)
        self.eos_token_id = len(ordered) + 1
        self.bos_token_id = self.eos_token_id
        self.pad_token_id = self.eos_token_id

    @classmethod
    def from_documents(cls, docs):
        """The tokenizer of every symbol of some documents.

        Parameters
        ----------
        docs : iterable of str or sequences
            Documents.

        Returns
        -------
        tokenizer : CharTokenizer
        """
        symbols = set()
        for doc in docs:
            symbols.update(doc)
        return cls(symbols)

    def __len__(self):
        return len(self.vocab)

    @property
    def vocab_size(self):
        """Number of tokens, the special ones included."""
        return len(self.vocab)

    def encode(self, doc):
        """Ids of the symbols of a document (unseen symbols: the unknown id).

        Parameters
        ----------
        doc : str or sequence
            A document.

        Returns
        -------
        ids : ndarray of shape (len(doc),), dtype int64
        """
        unk = self.unk_token_id
        return np.fromiter((self._index.get(s, unk) for s in doc), dtype=np.int64,
                           count=len(doc))

    def decode(self, ids):
        """Text of ids, the end-of-text token dropped.

        Parameters
        ----------
        ids : iterable of int
            Token ids.

        Returns
        -------
        text : str
        """
        eos = self.eos_token_id
        return "".join(str(self.vocab[int(i)]) for i in ids if int(i) != eos)

    def __repr__(self):
        return f"CharTokenizer(vocab_size={len(self.vocab)})"


def _pad_rows(rows, pad_id):
    """Right-pad token-id rows into ``(ids, attention_mask)``, both int64 ``(n, width)``.

    ``width`` is the longest row; a row's positions past its own length hold ``pad_id``
    and a mask of 0.
    """
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
    return ids, mask


class _TokenizerAdapter:
    """One interface over the char tokenizer and a transformers tokenizer."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.char = isinstance(tokenizer, CharTokenizer)
        eos = getattr(tokenizer, "eos_token_id", None)
        bos = getattr(tokenizer, "bos_token_id", None)
        self.bos = bos if bos is not None else eos
        self.eos = eos

    def __len__(self):
        return len(self.tokenizer)

    def encode(self, doc):
        if self.char:
            return self.tokenizer.encode(doc)
        if not isinstance(doc, str):
            raise TypeError(
                "documents must be strings for a transformers tokenizer; got "
                f"{type(doc).__name__}. Use tokenizer='char' for sequences of symbols."
            )
        ids = self.tokenizer(doc, add_special_tokens=False)["input_ids"]
        return np.asarray(ids, dtype=np.int64)

    def decode(self, ids):
        ids = [int(i) for i in ids]
        if self.char:
            return self.tokenizer.decode(ids)
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def sequence(self, doc):
        """Model input of a document: bos, ids, eos (where the tokenizer has them)."""
        ids = self.encode(doc)
        head = [self.bos] if self.bos is not None else []
        tail = [self.eos] if self.eos is not None else []
        return np.concatenate([np.asarray(head, np.int64), ids, np.asarray(tail, np.int64)])
