"""load_python_docs: an offline English corpus from the standard library."""

import pytest
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_cispa.datasets import load_python_docs


def test_paragraphs_are_prose_within_the_bounds():
    docs, topics = load_python_docs(return_topics=True)
    assert len(docs) == len(topics) > 500
    assert len(set(docs)) == len(docs)
    assert all(80 <= len(d) <= 400 for d in docs)
    assert all("\n" not in d and not d.startswith(">>>") for d in docs)
    # prose: letters and spaces dominate, sentences end as sentences
    for d in docs:
        assert sum(c.isalpha() or c == " " for c in d) >= 0.85 * len(d)
        assert d.endswith((".", ":", ")"))
    # the grammar rule of help("for") is code, its first paragraph is prose
    assert not any("for_stmt ::=" in d for d in docs)
    assert any(d.startswith('The "for" statement is used to iterate') for d in docs)
    assert load_python_docs() == docs  # deterministic


def test_length_bounds():
    short = load_python_docs(min_length=20, max_length=100)
    assert all(20 <= len(d) <= 100 for d in short)
    assert len(load_python_docs(max_length=None)) > len(load_python_docs())
    with pytest.raises(ValueError, match="below min_length"):
        load_python_docs(min_length=100, max_length=50)
    with pytest.raises(InvalidParameterError):
        load_python_docs(min_length=0)
