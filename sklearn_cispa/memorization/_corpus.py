"""make_canary_corpus: seeded pseudo-text with planted canary secrets, fully offline."""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_cispa.utils import check_random_generator, spawn_seeds

__all__ = ["make_canary_corpus"]

_ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
           "ch", "sh", "st", "tr", "br")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "", "", "n", "r", "s", "l", "m")
# short names for the canaries; none of them can be a pseudo-word (names use letters
# and patterns that the syllable inventory never produces: y, z, x, q, j, c+vowel)
_NAMES = ("kobe", "zara", "milo", "yuki", "ravi", "jude", "xena", "quin", "yara", "zeno",
          "cleo", "jaxo", "ziva", "yoel", "juno", "qira", "xavi", "cyra", "zola", "jiro")
_N_WORDS = 300


def _lexicon(rng):
    """About 300 distinct pseudo-words built from the fixed syllable inventory."""
    words = []
    seen = set()
    while len(words) < _N_WORDS:
        n_syll = rng.choice([1, 2, 2, 3, 3, 4], p=[0.15, 0.3, 0.2, 0.15, 0.1, 0.1])
        word = "".join(
            str(rng.choice(_ONSETS)) + str(rng.choice(_VOWELS)) + str(rng.choice(_CODAS))
            for _ in range(n_syll)
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    ranks = np.arange(1, _N_WORDS + 1, dtype=float)
    freq = 1.0 / ranks  # Zipf's law with exponent 1
    return words, freq / freq.sum()


def _sentences(rng, words, proba, n_chars):
    """Sentences of 5-15 words until about ``n_chars`` characters are written."""
    out, total = [], 0
    while total < n_chars:
        n = int(rng.integers(5, 16))
        toks = [words[i] for i in rng.choice(len(words), size=n, p=proba)]
        toks[0] = toks[0].capitalize()
        if n > 7 and rng.random() < 0.3:  # a comma in longer sentences
            cut = int(rng.integers(2, n - 2))
            toks[cut] += ","
        end = rng.choice([".", ".", ".", "?", "!"])
        sentence = " ".join(toks) + str(end)
        out.append(sentence)
        total += len(sentence) + 1
    return out


def _paragraphs(rng, sentences):
    """Group sentences into paragraphs of 3-8 sentences."""
    docs, i = [], 0
    while i < len(sentences):
        k = int(rng.integers(3, 9))
        docs.append(" ".join(sentences[i:i + k]))
        i += k
    return docs


def _secrets(rng, n, length):
    """Distinct digit strings, pairwise differing in at least half of the positions."""
    out = []
    min_diff = max(1, length // 2)
    for _ in range(10000):
        s = "".join(str(d) for d in rng.integers(0, 10, size=length))
        if all(sum(a != b for a, b in zip(s, t, strict=True)) >= min_diff for t in out):
            out.append(s)
            if len(out) == n:
                return out
    raise ValueError(  # pragma: no cover - only for absurd n_canaries / secret_length
        f"could not draw {n} distinct secrets of {length} digits; lower n_canaries."
    )


@validate_params(
    {
        "n_chars": [Interval(numbers.Integral, 1000, None, closed="left")],
        "n_canaries": [Interval(numbers.Integral, 1, len(_NAMES), closed="both")],
        "n_copies": [Interval(numbers.Integral, 1, None, closed="left")],
        "secret_length": [Interval(numbers.Integral, 1, 32, closed="both")],
        "heldout_chars": [Interval(numbers.Integral, 1000, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_canary_corpus(n_chars=60000, n_canaries=5, n_copies=40, secret_length=6,
                       heldout_chars=20000, random_state=None):
    """Generate pseudo-text documents with planted canary secrets, and held-out text.

    The text comes from a seeded generator: a fixed syllable inventory makes about 300
    pseudo-words with Zipf frequencies, sentences have 5-15 words and end with
    punctuation, paragraphs (the documents) have 3-8 sentences. Each canary is the
    sentence ``"<name> pin: <digits>."`` with a distinct short name and a distinct
    random secret; it is inserted ``n_copies`` times at random sentence boundaries of the
    training text. The held-out documents come from an independent seed and contain no
    canary and no digit, so side effects of an intervention can be measured on them.

    Parameters
    ----------
    n_chars : int, default=60000
        Approximate number of characters of ordinary training text (the canary copies
        come on top).
    n_canaries : int, default=5
        Number of canaries (at most 20 distinct names).
    n_copies : int, default=40
        Copies of each canary in the training text.
    secret_length : int, default=6
        Number of digits of each secret. Secrets differ pairwise in at least half of
        their digits, so that no two canaries are near-duplicates.
    heldout_chars : int, default=20000
        Approximate number of characters of held-out text.
    random_state : int, RandomState instance or None, default=None
        Seed of the generator.

    Returns
    -------
    train_docs : list of str
        Training documents (paragraphs) with the canary copies.
    heldout_docs : list of str
        Held-out documents, from the same generator with another seed, without canaries.
    canaries : list of (str, str)
        ``(prefix, secret)`` pairs, for example ``("kobe pin: ", "123456")``.

    Examples
    --------
    >>> from sklearn_cispa.memorization import make_canary_corpus
    >>> train, heldout, canaries = make_canary_corpus(n_chars=2000, n_canaries=2,
    ...                                               n_copies=3, heldout_chars=1000,
    ...                                               random_state=0)
    >>> prefix, secret = canaries[0]
    >>> sum(doc.count(prefix + secret + ".") for doc in train)
    3
    >>> any(prefix in doc for doc in heldout)
    False
    """
    lex_seed, train_seed, held_seed, canary_seed = spawn_seeds(random_state, 4)
    # the lexicon is shared by the training and the held-out text
    words, proba = _lexicon(check_random_generator(lex_seed))
    rng = check_random_generator(canary_seed)
    names = [str(n) for n in rng.choice(_NAMES, size=n_canaries, replace=False)]
    secrets = _secrets(rng, n_canaries, secret_length)
    canaries = [(f"{name} pin: ", secret) for name, secret in zip(names, secrets, strict=True)]

    train_rng = check_random_generator(train_seed)
    sentences = _sentences(train_rng, words, proba, n_chars)
    planted = [p + s + "." for p, s in canaries for _ in range(n_copies)]
    # random sentence boundaries: insert the copies at uniformly drawn positions
    slots = train_rng.integers(0, len(sentences) + 1, size=len(planted))
    order = np.argsort(slots, kind="stable")
    merged, j = [], 0
    for i in range(len(sentences) + 1):
        while j < len(order) and slots[order[j]] == i:
            merged.append(planted[order[j]])
            j += 1
        if i < len(sentences):
            merged.append(sentences[i])
    train_docs = _paragraphs(train_rng, merged)

    held_rng = check_random_generator(held_seed)
    heldout_docs = _paragraphs(held_rng, _sentences(held_rng, words, proba, heldout_chars))
    return train_docs, heldout_docs, canaries
