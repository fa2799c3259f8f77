"""A report as Markdown with its plots as PNG files beside it (PURE: returns text).

Links are relative (``![…](agg_tps.png)``), so the directory can be pasted into a
worklog as it is, the way the seeds kept theirs.
"""

from __future__ import annotations

from variantctl.report.build import ReportDoc
from variantctl.report.tables import Table


def _cell(text: str) -> str:
    # a pipe ends a cell and a newline the row; both would break the table
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ") or " "


def table_md(table: Table) -> list[str]:
    lines = [f"**{table.title}**", ""]
    if not table.rows:
        return [*lines, "(none)", ""]
    lines.append("| " + " | ".join(_cell(h) for h in table.headers) + " |")
    lines.append("|" + "|".join("---" for _ in table.headers) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", f"_{table.note}_"]
    return [*lines, ""]


def render_markdown(doc: ReportDoc) -> str:
    """The document; every plot ``p`` is linked as ``p.name`` in the same directory."""
    lines = [f"# {doc.title}", "", f"_{doc.subtitle}_", ""]
    for section in doc.sections:
        lines += [f"## {section.title}", ""]
        for para in section.paragraphs:
            lines += [para, ""]
        for table in section.tables:
            lines += table_md(table)
        for plot in section.plots:
            if plot.lines:
                lines += [f"![{plot.title}]({plot.name})", ""]
            else:
                lines += [f"_{plot.title}: no data._", ""]
    return "\n".join(lines).rstrip() + "\n"
