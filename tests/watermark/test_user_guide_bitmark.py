"""The BitMark user-guide page runs as written (its ``>>>`` examples are doctests)."""

import doctest
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "user_guide" / "bitmark.rst"


def test_bitmark_page_runs_as_written():
    result = doctest.testfile(
        str(PAGE), module_relative=False, verbose=False,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
    )
    assert result.attempted >= 15
    assert result.failed == 0
