"""A real English text corpus that is available offline: CPython's own documentation."""

import numbers
import re

from sklearn.utils._param_validation import Interval, validate_params

__all__ = ["load_python_docs"]

# first words of the blocks whose later lines hang indented (bullets, notes)
_HANGING = ("* ", "Note:", "Changed in", "Added in", "Deprecated")


def _topics():
    try:
        from pydoc_data.topics import topics
    except ImportError as exc:  # pragma: no cover - stripped Python builds only
        raise ImportError(
            "load_python_docs reads the standard library's pydoc_data.topics (the text of "
            "help('TOPIC')), which this Python build does not ship."
        ) from exc
    return topics


@validate_params(
    {
        "min_length": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_length": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "return_topics": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_python_docs(*, min_length=80, max_length=400, return_topics=False):
    """Paragraphs of English prose from the Python language reference, offline.

    The text comes from the standard library's ``pydoc_data.topics`` (what
    ``help("FOR")`` and the other keyword and topic pages print: sections of the Python
    Language Reference, written by people), so it is on every machine with Python and
    nothing is downloaded. Each prose paragraph is one document: a blank-line separated
    block with one indentation (or a bullet with its hanging indent), ending in ".",
    ":" or ")", at least 85% letters and spaces and not a ``>>>`` session (so code
    examples, grammar rules and tables are left out), line breaks joined by spaces,
    duplicates dropped, in the order of the sorted topic names. The corpus depends on
    the Python version (Python 3.11: 79 topics, 772 paragraphs of 80-400 characters).

    Parameters
    ----------
    min_length : int, default=80
        Shortest paragraph kept, in characters.
    max_length : int or None, default=400
        Longest paragraph kept, in characters (None: no limit).
    return_topics : bool, default=False
        Also return the topic name of each paragraph.

    Returns
    -------
    documents : list of str
        The paragraphs.
    topics : list of str
        Topic of each paragraph (only with ``return_topics=True``).

    Examples
    --------
    >>> from sklearn_cispa.datasets import load_python_docs
    >>> docs = load_python_docs()
    >>> len(docs) > 500, all(80 <= len(d) <= 400 for d in docs)
    (True, True)
    """
    if max_length is not None and max_length < min_length:
        raise ValueError(
            f"max_length={max_length} is below min_length={min_length}: no paragraph fits."
        )
    documents, names, seen = [], [], set()
    topics = _topics()
    for name in sorted(topics):
        for block in re.split(r"\n[ \t]*\n", topics[name]):
            lines = [line for line in block.split("\n") if line.strip()]
            if not lines:
                continue
            indents = {len(line) - len(line.lstrip()) for line in lines}
            if len(indents) > 1 and not lines[0].lstrip().startswith(_HANGING):
                continue
            text = " ".join(line.strip() for line in lines)
            if text.startswith(">>>") or not text.endswith((".", ":", ")")):
                continue
            if sum(c.isalpha() or c == " " for c in text) < 0.85 * len(text):
                continue
            if len(text) < min_length or (max_length is not None and len(text) > max_length):
                continue
            if text in seen:
                continue
            seen.add(text)
            documents.append(text)
            names.append(name)
    if return_topics:
        return documents, names
    return documents
