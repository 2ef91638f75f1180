"""The language-model user-guide page runs as written (its ``>>>`` examples are doctests)."""

import doctest
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the lm extra (transformers) is not installed")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "user_guide" / "language.rst"


def test_language_page_runs_as_written():
    result = doctest.testfile(
        str(PAGE), module_relative=False, verbose=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
    )
    assert result.attempted >= 10
    assert result.failed == 0
