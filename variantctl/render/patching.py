"""Rendering of patch reports: rich tables for people (``--json`` prints to_json()).

Every function returns the blocks to show (variantctl.render.output); the command
prints them. Paths are shown relative to ``cwd`` when they are below it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.render.output import Block, rich_line, text

if TYPE_CHECKING:
    from rich.table import Table

    from variantctl.patching.model import Patchset
    from variantctl.patching.outcomes import FileOutcome, RunReport

_STATE_STYLE = {
    "pristine": "cyan",
    "applied": "green",
    "partial": "yellow",
    "drifted": "red",
    "missing": "red",
    "error": "red",
}

_ACTION_TEXT = {
    "applied": "applied",
    "rolled-back": "rolled back",
    "unchanged": "nothing to do",
    "would-apply": "would apply",
    "would-roll-back": "would roll back",
    "refused": "refused",
    "error": "error",
    "missing": "missing",
    "restored": "restored",
    "not-applied": "not applied",
    "not-rolled-back": "not rolled back",
}


def display_path(cwd: Path, path: str) -> str:
    """A path relative to the cwd when it is below it (shorter tables)."""
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path


def _where(f: FileOutcome, line: int | None) -> str:
    # the root is in its own column: show the path inside it
    p = f.path[len(f.root):].lstrip("/") if f.path.startswith(f.root) else f.path
    return f"{p}:{line}" if line else p


def _styled(state: str) -> str:
    style = _STATE_STYLE.get(state, "")
    return f"[{style}]{state}[/]" if style else state


def recovered_blocks(report: RunReport) -> list[Block]:
    """What the run repaired first (an interrupted transaction), one line each (stderr)."""
    from rich.markup import escape

    label = "note" if report.dry_run else "recovered"
    return [rich_line(f"[yellow]{label}:[/] {escape(note)}", err=True)
            for note in report.recovered]


def report_table(cwd: Path, report: RunReport) -> Table:
    """apply / rollback: one row per file."""
    from rich.markup import escape
    from rich.table import Table

    title = f"{report.action} {report.patchset}" + (" (dry run)" if report.dry_run else "")
    table = Table(title=title, title_justify="left", show_lines=False)
    for col in ("root", "module", "state", "result", "detail"):
        table.add_column(col, overflow="fold")
    for f in report.files:
        detail = f.message if f.action not in ("missing", "error", "refused") else "see below"
        if f.backup and f.action in ("applied", "would-apply"):
            detail = f"backup {f.backup.rsplit('/', 1)[-1]}"
        elif f.backup and f.action in ("rolled-back", "would-roll-back"):
            detail = f"restored {f.backup.rsplit('/', 1)[-1]}"
        table.add_row(escape(display_path(cwd, f.root)), escape(f.module), _styled(f.state),
                      _ACTION_TEXT.get(f.action, f.action), escape(detail))
    return table


def report_blocks(cwd: Path, report: RunReport) -> list[Block]:
    """apply / rollback: the table, the problems one line each, then a summary."""
    out = recovered_blocks(report)
    out.append(Block(report_table(cwd, report)))
    out += problem_blocks(report)
    if report.error:
        out.append(text(f"error: {report.error}", err=True))
    out.append(_summary(report))
    return out


def problem_lines(report: RunReport) -> list[str]:
    """One line per file that blocks the operation, naming root/path and line."""
    out: list[str] = []
    for f in report.files:
        if f.action == "missing" or f.state == "missing":
            if f.message == "root does not exist":
                out.append(f"error: {f.root}: root does not exist")
            else:
                out.append(f"error: {f.root}: {f.message} ({f.path})")
        elif f.action == "error" or f.state == "error":
            where = f"{f.path}:{f.error_line}" if f.error_line else f.path
            out.append(f"error: {where}: {f.message}")
        elif f.action == "refused" or (f.action == "status" and f.state == "drifted"):
            drift = [o for o in f.ops if o.state == "drifted"]
            if not drift:
                out.append(f"conflict: {f.path}: {f.message}")
            for o in drift:
                found = ", ".join(x.code for x in o.found)
                where = f"{f.path}:{o.line}" if o.line else f.path
                out.append(f"conflict: {where}: {o.op_id}: {o.reason}"
                           + (f" (found {found})" if found else ""))
    return out


def problem_blocks(report: RunReport) -> list[Block]:
    return [text(line, err=True) for line in problem_lines(report)]


def _summary(report: RunReport) -> Block:
    actions: list[str] = [f.action for f in report.files]
    verb = "apply" if report.action == "apply" else "roll back"
    done = "applied" if report.action == "apply" else "rolled-back"
    if report.error:
        if done in actions:
            return Block(f"{report.action} failed after writing the files (see above)",
                         err=True, highlight=False, soft_wrap=True)
        return Block(f"{report.action} failed: nothing was changed",
                     err=True, highlight=False, soft_wrap=True)
    if "missing" in actions or "error" in actions:
        return Block(f"cannot {verb}: fix the files above; nothing was changed",
                     err=True, highlight=False, soft_wrap=True)
    if "refused" in actions:
        return Block(f"refused to {verb}: nothing was changed",
                     err=True, highlight=False, soft_wrap=True)
    if report.dry_run:
        n = sum(a.startswith("would") for a in actions)
        return Block(f"dry run: {n} file(s) would change; nothing was written")
    if all(a == "unchanged" for a in actions):
        what = "already applied" if report.action == "apply" else "not applied"
        return Block(f"{report.patchset} is {what} in every root; nothing to do")
    n = actions.count(done)
    return Block(f"{report.action}: {n} file(s) written in "
                 f"{len({f.root for f in report.files if f.action == done})} root(s)")


def status_table(cwd: Path, report: RunReport) -> Table:
    """status of one patchset: per root and operation."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{report.patchset} on {report.host}", title_justify="left")
    for col in ("root", "operation", "state", "value", "where"):
        table.add_column(col, overflow="fold")
    for f in report.files:
        if f.state in ("missing", "error"):
            table.add_row(escape(display_path(cwd, f.root)), "-", _styled(f.state),
                          escape(f.message), escape(_where(f, f.error_line)))
            continue
        root = escape(display_path(cwd, f.root))  # shown once per file
        for o in f.ops:
            if o.state == "drifted":
                found = ", ".join(x.code for x in o.found if x.kind == "other") or ""
                value = o.reason + (f": {found}" if found else "")
            else:
                value = o.shown
            table.add_row(root, escape(o.op_id), _styled(o.state), escape(value),
                          escape(_where(f, o.line)))
            root = ""
        table.add_row(root, "[bold]file[/]", _styled(f.state), "", "", end_section=True)
    return table


def status_blocks(cwd: Path, reports: list[RunReport]) -> list[Block]:
    """status: a table per patchset, each followed by its problems."""
    out: list[Block] = []
    for report in reports:
        out += recovered_blocks(report)
        out.append(Block(status_table(cwd, report)))
        out += problem_blocks(report)
        if report.error:  # e.g. an unreadable journal: the repair it needs did not happen
            out.append(text(f"error: {report.error}", err=True))
    return out


def patchset_blocks(ps: Patchset) -> list[Block]:
    """patch show: the header lines and the operations table."""
    from rich.markup import escape
    from rich.table import Table

    out = [Block(f"[bold]{escape(ps.name)}[/]  {escape(ps.description)}"),
           Block(f"file: {escape(ps.source)}"),
           Block(f"modules: {escape(', '.join(ps.modules))}"),
           Block(f"backup name: {escape(ps.backup_template)}")]
    table = Table(title="operations", title_justify="left")
    for col in ("id", "op", "where", "from", "to"):
        table.add_column(col, overflow="fold")
    for op in ps.operations:
        table.add_row(escape(op.id), op.kind, escape(op.describe), escape(op.from_ or "-"),
                      escape(op.to or "-"))
    out.append(Block(table))
    return out


def diff_block(diff: str) -> Block:
    """A unified diff, coloured."""
    from rich.syntax import Syntax

    return Block(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
