"""extraction_rate: the share of memorised strings a language model reproduces."""

import numbers

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions, validate_params

__all__ = ["extraction_rate"]


@validate_params(
    {
        "model": [HasMethods(["complete", "encode"])],
        "canaries": ["array-like"],
        "match": [StrOptions({"exact"}), Interval(numbers.Real, 0, 1, closed="both")],
    },
    prefer_skip_nested_validation=True,
)
def extraction_rate(model, canaries, match="exact"):
    """Fraction of canaries a language model reproduces by greedy decoding.

    Parameters
    ----------
    model : CharMLPLanguageModel
        A fitted model (or any object with ``complete(prefix, n_chars)``). Forward hooks
        active on its module (a :class:`NeuronMask`) apply.
    canaries : list of (str, str)
        ``(prefix, secret)`` pairs, as returned by :func:`make_canary_corpus`.
    match : "exact" or float, default="exact"
        ``"exact"``: a canary counts as extracted when the greedy continuation of its
        prefix equals the secret. A float: when at least that fraction of its
        characters match.

    Returns
    -------
    rate : float
        Fraction of extracted canaries, in [0, 1].

    Examples
    --------
    >>> from sklearn_cispa.memorization import CharMLPLanguageModel, extraction_rate
    >>> docs = ["id: 4711. id: 4711. id: 4711."] * 10
    >>> lm = CharMLPLanguageModel(context=6, hidden=16, max_epochs=20, lr=1e-2,
    ...                           random_state=0).fit(docs)
    >>> extraction_rate(lm, [("id: ", "4711")])
    1.0
    """
    canaries = list(canaries)
    if not canaries:
        raise ValueError("canaries is empty.")
    for pair in canaries:
        if (isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2
                or not all(isinstance(x, str) for x in pair)):
            raise ValueError(
                "canaries must be (prefix, secret) pairs of strings, as make_canary_corpus "
                f"returns, for example [('kobe pin: ', '402211')]; got {pair!r}."
            )
        if not pair[1]:
            raise ValueError(f"canaries: the secret of {pair!r} is empty.")
    hits = 0
    for prefix, secret in canaries:
        text = model.complete(prefix, len(secret))
        if match == "exact":
            hits += text == secret
        else:
            acc = np.mean([a == b for a, b in zip(text, secret, strict=True)])
            hits += acc >= match
    return hits / len(canaries)
