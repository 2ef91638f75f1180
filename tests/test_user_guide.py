"""Every page of the user guide runs as written.

The Python of a page is written as ``>>>`` examples with the output they print; each
page runs as one doctest, top to bottom, in a fresh namespace (``doctest.testfile``), so
a name used before it is defined, or a printed number that the page does not show,
fails. A second check finds Python written any other way (a ``::`` literal block or a
``.. code-block:: python`` without ``>>>``): such code would not be run, so it fails too.
Shell commands go in ``.. code-block:: bash`` (or ``console``), program output in
``.. code-block:: text``.
"""

import doctest
import os
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "user_guide"
PAGES = sorted(GUIDE.glob("*.rst"))

# Pages that other branches are rewriting to run as written; they have Python blocks
# that are not doctests today (their doctest runs pass: they have no ``>>>``). The
# marks are not strict, so a page that starts passing shows as XPASS until its mark goes.
# Pages with Python blocks that are not yet ``>>>`` examples (strict: a page that is
# converted must leave this list).
_BEING_REWRITTEN = {
}
# Pages whose examples need an optional extra.
_NEEDS = {"language.rst": "transformers", "lira.rst": "transformers"}

_NOT_PYTHON = {
    "bash",
    "console",
    "shell",
    "sh",
    "text",
    "none",
    "rst",
    "ini",
    "toml",
    "json",
    "yaml",
    "csv",
    "pycon",
}
_DIRECTIVE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")


def _params(check, xfail_rewritten=True):
    out = []
    for page in PAGES:
        marks = []
        if xfail_rewritten and page.name in _BEING_REWRITTEN:
            marks.append(
                pytest.mark.xfail(
                    reason="Python blocks on this page are not yet >>> examples (issue 32)",
                    strict=True,
                )
            )
        out.append(pytest.param(page, marks=marks, id=f"{page.stem}-{check}"))
    return out


def _indented_block(lines, start, indent):
    """The lines after ``start`` indented deeper than ``indent`` (blank lines kept)."""
    block = []
    for line in lines[start:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        block.append(line)
    while block and not block[-1].strip():
        block.pop()
    return block


def literal_blocks(text):
    """``(line number, language, code)`` of every literal and code block of an rst text.

    ``language`` is the code-block's language, or ``None`` for a ``::`` literal block
    (Sphinx highlights those as Python).
    """
    lines = text.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        directive = _DIRECTIVE.match(line)
        if directive:
            language = directive.group(2).lower() or None
        elif line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            language = None
        else:
            continue
        body = _indented_block(lines, i + 1, indent)
        # options of the directive (":caption: ...") come first
        code = [b for b in body if not (directive and b.strip().startswith(":"))]
        blocks.append((i + 1, language, "\n".join(code)))
    return blocks


def _is_python(code):
    if not code.strip():
        return False
    try:
        compile(code, "<block>", "exec")
    except SyntaxError:
        return False
    return True


def untested_python(text):
    """Literal or code blocks of ``text`` that are Python but not ``>>>`` examples."""
    found = []
    for lineno, language, code in literal_blocks(text):
        if language in _NOT_PYTHON or ">>>" in code:
            continue
        code = textwrap.dedent(code)
        if language in ("python", "python3", "py") or (language is None and _is_python(code)):
            # a lone word or a literal (an output value) is not code that could run
            if language is None and re.fullmatch(r"[\w.\s,+\-()'\"]*", code.strip()):
                continue
            found.append((lineno, code.strip().splitlines()[0] if code.strip() else ""))
    return found


@pytest.mark.parametrize("page", _params("python-is-doctest"))
def test_every_python_block_is_a_doctest(page):
    found = untested_python(page.read_text(encoding="utf-8"))
    assert not found, (
        f"{page.name}: Python that the doctest run does not execute (write it as >>> "
        "examples with their output, or mark shell/output blocks as bash/text):\n"
        + "\n".join(f"  line {n}: {first}" for n, first in found)
    )


@pytest.mark.parametrize("page", _params("runs", xfail_rewritten=False))
def test_page_runs_as_written(page, monkeypatch):
    if page.name in _NEEDS:
        pytest.importorskip(_NEEDS[page.name], reason="the lm extra is not installed")
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    result = doctest.testfile(
        str(page),
        module_relative=False,
        verbose=False,
        report=True,
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
        encoding="utf-8",
    )
    assert result.failed == 0, f"{page.name}: {result.failed} of {result.attempted} failed"


def test_the_checks_can_fail():
    # a page with Python in a :: block, and a code-block that is not run, is caught
    text = (
        "Usage::\n\n    est = Estimator().fit(X, y)\n\n"
        ".. code-block:: python\n\n    x = 1\n\n"
        ".. code-block:: bash\n\n    pip install sklearn-cispa\n\n"
        "Output::\n\n    0.97\n\n"
        ".. code-block:: python\n\n    >>> 1 + 1\n    2\n"
    )
    assert [n for n, _ in untested_python(text)] == [1, 5]
    parser = doctest.DocTestParser()
    test = parser.get_doctest(">>> print(undefined_name)\n", {}, "page", "page", 0)
    runner = doctest.DocTestRunner(verbose=False)
    runner.run(test, out=lambda _: None)
    assert runner.failures == 1
