"""A report as Markdown with its plots as PNG files beside it (PURE: returns text).

Links are relative (``![…](agg_tps.png)``), so the directory can be pasted into a
worklog as it is, the way the seeds kept theirs.
"""

from __future__ import annotations

import re

from variantctl.logs.bounded import visible_lines
from variantctl.report.build import ReportDoc
from variantctl.report.tables import Table

#: what Markdown renderers act on in text: raw HTML (``<script>``, ``<img onerror>``,
#: entities); a backslash too, so that the escapes added stay escapes
_MD_ESCAPES = str.maketrans({"\\": "\\\\", "&": "&amp;", "<": "&lt;", ">": "&gt;"})
#: the ``]`` that makes a link or an image (``[x](javascript:…)``, ``[x][ref]``,
#: ``[ref]: url``); brackets elsewhere (``levels[0]``) stay as they are
_LINK_CLOSE = re.compile(r"\](?=[(\[:])")


def md_text(text: str) -> str:
    """Text from runs, logs and files as inert Markdown: HTML and links escaped, control
    characters shown as ``\\xNN`` (the one filter, :func:`visible_lines`). The report
    is opened in viewers that render raw HTML: a log excerpt must stay text there."""
    return _LINK_CLOSE.sub(r"\\]", visible_lines(text).translate(_MD_ESCAPES))


def _cell(text: str) -> str:
    # a pipe ends a cell and a newline the row; both would break the table
    return md_text(text).replace("|", "\\|").replace("\n", " ") or " "


def _line(text: str) -> str:
    """One line of text (a title, a note): a newline in it would end the element."""
    return md_text(text).replace("\n", " ")


def table_md(table: Table) -> list[str]:
    # a table without a title of its own is the section's (one heading per section)
    lines = [f"**{_line(table.title)}**", ""] if table.title else []
    if not table.rows:
        return [*lines, "(none)", ""]
    lines.append("| " + " | ".join(_cell(h) for h in table.headers) + " |")
    lines.append("|" + "|".join("---" for _ in table.headers) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", f"_{_line(table.note)}_"]
    return [*lines, ""]


def render_markdown(doc: ReportDoc) -> str:
    """The document; every plot ``p`` is linked as ``p.name`` in the same directory.
    Every text is escaped (:func:`md_text`): the file is inert in any viewer."""
    lines = [f"# {_line(doc.title)}", "", f"_{_line(doc.subtitle)}_", ""]
    for section in doc.sections:
        lines += [f"## {_line(section.title)}", ""]
        for para in section.paragraphs:
            lines += [md_text(para), ""]
        for table in section.tables:
            lines += table_md(table)
        for plot in section.plots:
            if plot.lines:
                lines += [f"![{_line(plot.title)}]({plot.name})", ""]
            else:
                lines += [f"_{_line(plot.title)}: no data._", ""]
    return "\n".join(lines).rstrip() + "\n"
