"""The LiRA user-guide page's ``>>>`` examples run as written (doctests)."""

import doctest
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the lm extra (transformers) is not installed")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "user_guide" / "lira.rst"


def test_lira_page_runs_as_written():
    result = doctest.testfile(
        str(PAGE), module_relative=False, verbose=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
    )
    assert result.attempted >= 10
    assert result.failed == 0
