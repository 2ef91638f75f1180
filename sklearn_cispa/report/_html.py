"""``report.html``: one self-contained page (inline CSS, figures as base64 data URIs)."""

import base64
import html
import math
from pathlib import Path

from sklearn_cispa.report._catalog import OUTCOMES, field_of, order_rows, outcome_of, reason_of

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
.meta { color: #555; margin-top: 0; }
table.summary { border-collapse: collapse; width: 100%; font-size: 0.92em; }
table.summary th, table.summary td { border: 1px solid #ccc; padding: 4px 6px;
       text-align: left; vertical-align: top; }
table.summary th { background: #f2f2f2; }
td.num { font-variant-numeric: tabular-nums; }
td.claim { font-size: 0.85em; max-width: 22em; }
tr.field th { background: #e8eef7; text-align: left; font-size: 1.05em; }
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

_OUTCOME_CLASS = {OUTCOMES[0]: "yes", OUTCOMES[1]: "partly", OUTCOMES[2]: "no"}


def _e(text):
    return html.escape(str(text), quote=True)


def _is_number(value):
    return isinstance(value, float | int) and not isinstance(value, bool)


def _num(value, sd=float("nan"), runs=None):
    """``0.9 ± 0.01``; empty for a value that does not apply (nan); a spread of exactly 0
    over several runs is said in words, not as ``± 0``."""
    if not _is_number(value):
        return _e(value if value is not None else "")
    if math.isnan(value):
        return ""
    text = f"{value:.4g}"
    if _is_number(sd) and not math.isnan(sd):
        if sd == 0 and isinstance(runs, int) and runs > 1:
            text += f" (the same in all {runs} runs)"
        else:
            text += f" ± {sd:.2g}"
    return text


def _data_uri(path):
    path = Path(path)
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}.get(
        path.suffix.lower(), "application/octet-stream"
    )
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


_SUMMARY_HEAD = (
    "<tr><th>method</th><th>paper's claim</th><th>target at this size</th>"
    "<th>measured</th><th>peer</th><th>verdict</th><th>runs</th><th>wall (s)</th></tr>"
)


def _measured_cell(row):
    if "error" in row:
        return ""
    value = _num(row.get("value"), row.get("value sd", float("nan")), row.get("runs"))
    return f"{_e(row.get('metric', ''))}: {value}" if value else ""


def _peer_cell(row):
    if "error" in row or not row.get("peer"):
        return ""
    value = _num(row.get("peer value"), row.get("peer sd", float("nan")), row.get("runs"))
    return f"{_e(row['peer'])}: {value}" if value else _e(row["peer"])


def _summary_table(rows):
    """One line per row, grouped by field in the user guide's order."""
    body, field = [], None
    for row in order_rows(rows):
        if field_of(row.get("name")) != field:
            field = field_of(row.get("name"))
            body.append(f'<tr class="field"><th colspan="8">{_e(field)}</th></tr>')
        outcome = outcome_of(row)
        cls = "error" if "error" in row else _OUTCOME_CLASS[outcome]
        reason = reason_of(row)
        time_s = row.get("time (s)")
        body.append(
            f'<tr data-row="{_e(row["name"])}">'
            f'<td><a href="#{_e(row["name"])}">{_e(row["method"])}</a></td>'
            f'<td class="claim">{_e(row.get("claim") or "")}</td>'
            f'<td class="claim">{_e(row.get("target") or "")}</td>'
            f'<td class="num">{_measured_cell(row)}</td>'
            f'<td class="num">{_peer_cell(row)}</td>'
            f'<td class="{cls}"><strong>{_e(outcome)}</strong>'
            + (f"<br><small>{_e(reason)}</small>" if reason else "")
            + "</td>"
            f'<td class="num">{_e(row.get("runs", "") if "error" not in row else "")}</td>'
            f'<td class="num">{f"{time_s:.1f}" if _is_number(time_s) else ""}</td></tr>'
        )
    return f'<table class="summary">{_SUMMARY_HEAD}{"".join(body)}</table>'


def _section(row):
    facts = [
        ("Paper's claim", row.get("claim") or "(none recorded)"),
        ("Target at this size", row.get("target") or ""),
        (
            "Measured",
            f"{row['metric']}: "
            f"{_num(row['value'], row.get('value sd', float('nan')), row.get('runs'))}"
            f" (over {row.get('runs', 1)} run(s))",
        ),
        (
            "Peer",
            f"{row['peer']}: "
            f"{_num(row['peer value'], row.get('peer sd', float('nan')), row.get('runs'))}",
        ),
        ("Verdict", f"{outcome_of(row)}. {row.get('verdict') or ''}".strip()),
        ("Settings", row.get("settings") or ""),
        ("Details", row.get("details") or ""),
        ("Time", f"{row['time (s)']:.1f} s wall, {row.get('cpu (s)', float('nan')):.1f} s CPU"),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts if v)
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
    sections = "".join(_section(row) for row in order_rows(rows))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style>"
        f"<script>{_SCRIPT}</script></head>"
        f'<body data-rows="{len(rows)}"><h1>{_e(title)}</h1><p class="meta">{_e(meta)}</p>'
        "<p>Each row runs one method's small experiment on bundled or generated data beside "
        "a peer on the same data. Values are means over the runs shown, ± their sample "
        "standard deviation. The verdict is one of <em>reproduced</em> (the claim, or its "
        "target at this size, is measured beyond the seed-to-seed spread), <em>reproduced "
        "within noise</em> (the measurement agrees with it, but the spread does not resolve "
        "it at this size) and <em>not reproduced</em>, with the reason; rows are grouped by "
        "field in the order of the user guide.</p>"
        f"{_summary_table(rows)}{sections}</body></html>\n"
    )
