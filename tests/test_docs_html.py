"""The built HTML documentation works offline and renders its math.

Runs on ``docs/_build/html`` (or the folder in ``SKLEARN_CISPA_DOCS_HTML``) after
``sphinx-build -b html docs docs/_build/html``; CI runs it right after the docs build.
It fails when a page loads a script or a stylesheet from another machine, when a page
with formulas does not load a MathJax that exists in the build, or when TeX delimiters
or commands stand in the page's text outside the math elements MathJax typesets.
"""

import functools
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("SKLEARN_CISPA_DOCS_HTML", ROOT / "docs" / "_build" / "html"))

needs_build = pytest.mark.skipif(
    not (HTML / "index.html").exists(),
    reason=f"no built documentation in {HTML}: run "
    "`sphinx-build -D plot_gallery=0 -b html docs docs/_build/html` first",
)

# What MathJax would typeset, or what a reader sees as raw TeX: \( \) \[ \] $$ and
# backslash commands of the formulas the docs write.
_TEX = re.compile(
    r"\\\(|\\\)|\\\[|\\\]|\$\$|\\(?:frac|mathrm|mathbb|mathcal|sum|int|sqrt|left|right|"
    r"underline|overline|alpha|beta|gamma|sigma|lambda|theta|epsilon|log|exp|max|min|"
    r"arg|cdot|leq|geq|mid|hat|bar|tilde|operatorname|begin|end)\b"
)
_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "param",
    "source",
    "track",
    "wbr",
}
# text inside these is not prose shown as text: code, or what MathJax typesets
_SKIP_TAGS = {"script", "style", "pre", "code", "tt", "kbd", "samp", "textarea", "title"}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.assets = []  # (tag, url) of scripts and stylesheets
        self.n_math = 0
        self.text = []
        self._stack = []  # one bool per open element: skip its text

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script" and attrs.get("src"):
            self.assets.append(("script", attrs["src"]))
        if tag == "link" and "stylesheet" in (attrs.get("rel") or "").split():
            self.assets.append(("stylesheet", attrs.get("href") or ""))
        classes = (attrs.get("class") or "").split()
        is_math = "math" in classes
        self.n_math += is_math
        if tag in _VOID:
            return
        skip = tag in _SKIP_TAGS or is_math or "highlight" in " ".join(classes)
        self._stack.append(skip or (bool(self._stack) and self._stack[-1]))

    def handle_endtag(self, tag):
        if tag not in _VOID and self._stack:
            self._stack.pop()

    def handle_data(self, data):
        if not (self._stack and self._stack[-1]):
            self.text.append(data)


def _pages():
    return sorted(p for p in HTML.rglob("*.html") if "_sources" not in p.parts)


@functools.cache
def _parse(path):
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def _is_remote(url):
    parts = urlsplit(url)
    return bool(parts.scheme and parts.scheme != "file") or url.startswith("//")


@needs_build
def test_no_page_loads_a_script_or_stylesheet_from_another_machine():
    offenders = []
    for path in _pages():
        for tag, url in _parse(path).assets:
            if _is_remote(url):
                offenders.append(f"{path.relative_to(HTML)}: {tag} {url}")
                continue
            local = (path.parent / unquote(urlsplit(url).path)).resolve()
            if not local.is_file():
                offenders.append(f"{path.relative_to(HTML)}: {tag} {url} (missing)")
    assert not offenders, "\n".join(offenders[:20])


@needs_build
def test_pages_with_formulas_load_the_local_mathjax():
    with_math = 0
    for path in _pages():
        page = _parse(path)
        if not page.n_math:
            continue
        with_math += 1
        mathjax = [url for tag, url in page.assets if "mathjax" in url.lower()]
        assert mathjax, f"{path.relative_to(HTML)} has formulas and loads no MathJax"
        for url in mathjax:
            assert not _is_remote(url), f"{path.relative_to(HTML)}: MathJax from {url}"
            local = (path.parent / unquote(urlsplit(url).path)).resolve()
            assert local.is_file() and local.stat().st_size > 100_000, (
                f"{path.relative_to(HTML)}: MathJax file {local} missing or truncated"
            )
    # the user guide (MMI, augmented IV, RCP) and the API write formulas with :math:
    assert with_math >= 5, f"only {with_math} pages have formulas: is math still rendered?"


@needs_build
def test_no_tex_is_shown_as_text():
    offenders = []
    for path in _pages():
        text = " ".join(_parse(path).text)
        for match in _TEX.finditer(text):
            context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
            offenders.append(f"{path.relative_to(HTML)}: ...{context}...")
            break
    assert not offenders, "TeX shown as text (not inside a math element):\n" + "\n".join(
        offenders[:20]
    )


def test_the_parser_sees_tex_outside_math_and_remote_assets():
    # the checks above can fail: a page with raw TeX and a CDN script is caught
    page = _Page()
    page.feed(
        '<html><head><script src="https://cdn.example.org/mathjax.js"></script></head>'
        '<body><p>loss \\(\\alpha z\\)</p><span class="math">\\(x\\)</span>'
        "<pre>\\frac{a}{b}</pre></body></html>"
    )
    assert [_is_remote(url) for _, url in page.assets] == [True]
    text = " ".join(page.text)
    assert _TEX.search(text) and "\\(x\\)" not in text and "frac" not in text
    assert page.n_math == 1
