"""``report.html``: one self-contained page (inline CSS, figures as base64 data URIs)."""

import base64
import html
import math
from pathlib import Path

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
.meta { color: #555; margin-top: 0; }
table.summary { border-collapse: collapse; width: 100%; font-size: 0.92em; }
table.summary th, table.summary td { border: 1px solid #ccc; padding: 4px 6px;
       text-align: left; vertical-align: top; }
table.summary th { background: #f2f2f2; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.yes { background: #e5f5e0; } .no { background: #fde0dd; } .partly { background: #fff7d6; }
.error { background: #fde0dd; }
section.row { border-top: 2px solid #ddd; margin-top: 2em; padding-top: 0.5em; }
section.row h2 { font-size: 1.25em; margin: 0.3em 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.3em 1em; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
"""

# counts the figures that decoded, for the headless-browser test (and a user's devtools)
_SCRIPT = """
window.addEventListener("load", function () {
  var imgs = document.querySelectorAll("figure img");
  var ok = 0;
  imgs.forEach(function (im) { if (im.complete && im.naturalWidth > 0) { ok += 1; } });
  document.body.setAttribute("data-figures-total", String(imgs.length));
  document.body.setAttribute("data-figures-loaded", String(ok));
});
"""

_VERDICT_CLASS = {True: "yes", False: "no", None: "partly"}
_VERDICT_WORD = {True: "yes", False: "no", None: "not fully"}


def _lead(verdict):
    """The verdict's opening words ("Reproduces", "Not resolvable at this size", ...)."""
    head = (verdict or "").split(":", 1)[0]
    return head if len(head) <= 60 else ""


def _e(text):
    return html.escape(str(text), quote=True)


def _num(value, sd=float("nan")):
    if not isinstance(value, float | int) or isinstance(value, bool):
        return _e(value)
    if math.isnan(value):
        return "n/a"
    text = f"{value:.4g}"
    if isinstance(sd, float | int) and not math.isnan(sd):
        text += f" ± {sd:.2g}"
    return text


def _data_uri(path):
    path = Path(path)
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}.get(
        path.suffix.lower(), "application/octet-stream"
    )
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _summary_table(rows):
    head = (
        "<tr><th>method</th><th>metric</th><th>measured</th><th>peer</th>"
        "<th>peer value</th><th>runs</th><th>claim reproduced</th><th>wall (s)</th></tr>"
    )
    body = []
    for row in rows:
        if "error" in row:
            cls, word = "error", "error"
        else:
            cls = _VERDICT_CLASS[row.get("reproduced")]
            word = _VERDICT_WORD[row.get("reproduced")]
        body.append(
            f'<tr data-row="{_e(row["name"])}">'
            f'<td><a href="#{_e(row["name"])}">{_e(row["method"])}</a></td>'
            f"<td>{_e(row['metric'])}</td>"
            f'<td class="num">{_num(row["value"], row.get("value sd", float("nan")))}</td>'
            f"<td>{_e(row['peer'])}</td>"
            f'<td class="num">{_num(row["peer value"], row.get("peer sd", float("nan")))}</td>'
            f'<td class="num">{_e(row.get("runs", ""))}</td>'
            f'<td class="{cls}">{_e(word)}<br><small>{_e(_lead(row.get("verdict")))}</small></td>'
            f'<td class="num">{row["time (s)"]:.1f}</td></tr>'
        )
    return f'<table class="summary">{head}{"".join(body)}</table>'


def _section(row):
    facts = [
        ("Paper's claim", row.get("claim") or "(none recorded)"),
        (
            "Measured",
            f"{row['metric']}: {_num(row['value'], row.get('value sd', float('nan')))}"
            f" (over {row.get('runs', 1)} run(s))",
        ),
        (
            "Peer",
            f"{row['peer']}: {_num(row['peer value'], row.get('peer sd', float('nan')))}",
        ),
        ("Verdict", row.get("verdict") or "(no verdict)"),
        ("Settings", row.get("settings") or ""),
        ("Details", row.get("details") or ""),
        ("Time", f"{row['time (s)']:.1f} s wall, {row.get('cpu (s)', float('nan')):.1f} s CPU"),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts)
    figures = []
    for path in row.get("figures", []):
        if Path(path).is_file():
            figures.append(
                f'<figure><img src="{_data_uri(path)}" alt="{_e(row["method"])}: '
                f'{_e(Path(path).name)}"><figcaption>{_e(Path(path).name)}</figcaption></figure>'
            )
    error = f"<pre>{_e(row['error'])}</pre>" if "error" in row else ""
    description = f"<p>{_e(row['description'])}</p>" if row.get("description") else ""
    return (
        f'<section class="row" id="{_e(row["name"])}">'
        f"<h2>{_e(row['method'])} <small>({_e(row['name'])})</small></h2>"
        f'{description}<dl class="facts">{dl}</dl>{"".join(figures)}{error}</section>'
    )


def render_html(rows, *, title, meta):
    """The whole page as a string.

    Parameters
    ----------
    rows : list of dict
        Report rows as produced by the runner.
    title : str
        Page title.
    meta : str
        One line under the title (version, mode, seed, total time).

    Returns
    -------
    page : str
    """
    sections = "".join(_section(row) for row in rows)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style>"
        f"<script>{_SCRIPT}</script></head>"
        f'<body data-rows="{len(rows)}"><h1>{_e(title)}</h1><p class="meta">{_e(meta)}</p>'
        "<p>Each row runs one method's small experiment on bundled or generated data beside "
        "a peer on the same data. Values are means over the runs shown, ± their sample "
        "standard deviation. <em>Claim reproduced</em> says whether the paper's claim (or the "
        "spec's re-implementation figure) is measured here beyond the seed-to-seed spread; "
        "each method's section says why in words.</p>"
        f"{_summary_table(rows)}{sections}</body></html>\n"
    )
