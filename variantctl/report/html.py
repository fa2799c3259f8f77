"""A report as one self-contained HTML file: inline CSS, plots as base64 PNGs (PURE).

No scripts and no external resources, so the file opens anywhere (mail, an
archive, a browser without network) exactly as written.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from html import escape

from variantctl.report.build import ReportDoc
from variantctl.report.tables import Table

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
h1 { margin-bottom: 0.1em; } .sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f2f2f2; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: bold; padding-bottom: 0.3em; }
.note { color: #555; font-size: 0.85em; margin-top: -1em; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; border: 1px solid #eee; }
"""


def _numeric(text: str) -> bool:
    if text == "–":  # no figure: aligned with the figures of its column
        return True
    head = text.split(" ", 1)[0].replace(".", "", 1).replace("-", "", 1).replace("/", "", 1)
    return head.isdigit()


def table_html(table: Table) -> str:
    if not table.rows:
        return f"<p><b>{escape(table.title)}</b>: (none)</p>" if table.title else "<p>(none)</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{escape(c)}</td>' if _numeric(c)
                         else f"<td>{escape(c)}</td>" for c in row) + "</tr>"
        for row in table.rows)
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    caption = f"<caption>{escape(table.title)}</caption>" if table.title else ""
    return (f"<table>{caption}<thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{note}")


def render_html(doc: ReportDoc, images: Mapping[str, bytes]) -> str:
    """The document with every plot of ``doc`` embedded from ``images`` (name → PNG)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(doc.title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{escape(doc.title)}</h1>", f'<p class="sub">{escape(doc.subtitle)}</p>']
    for section in doc.sections:
        parts.append(f"<h2>{escape(section.title)}</h2>")
        parts += [f"<p>{escape(p)}</p>" for p in section.paragraphs]
        parts += [table_html(t) for t in section.tables]
        for plot in section.plots:
            png = images.get(plot.name)
            if not plot.lines or png is None:
                parts.append(f"<p><i>{escape(plot.title)}: no data.</i></p>")
                continue
            data = base64.b64encode(png).decode("ascii")
            parts.append(f'<img alt="{escape(plot.title)}" '
                         f'src="data:image/png;base64,{data}">')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
