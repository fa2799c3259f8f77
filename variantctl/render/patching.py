"""Rendering of patch reports: rich tables for people (``--json`` prints to_json())."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.config.patchsets import Patchset
    from variantctl.targets.patchrun import FileOutcome, RunReport

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


def display_path(env: Environment, path: str) -> str:
    """A path relative to the cwd when it is below it (shorter tables)."""
    try:
        return str(Path(path).relative_to(env.cwd))
    except ValueError:
        return path


def _where(env: Environment, f: FileOutcome, line: int | None) -> str:
    # the root is in its own column: show the path inside it
    p = f.path[len(f.root):].lstrip("/") if f.path.startswith(f.root) else f.path
    return f"{p}:{line}" if line else p


def _styled(state: str) -> str:
    style = _STATE_STYLE.get(state, "")
    return f"[{style}]{state}[/]" if style else state


def print_recovered(env: Environment, report: RunReport) -> None:
    from rich.markup import escape

    label = "note" if report.dry_run else "recovered"
    for note in report.recovered:
        env.stderr.print(f"[yellow]{label}:[/] {escape(note)}", highlight=False, soft_wrap=True)


def print_report(env: Environment, report: RunReport) -> None:
    """apply / rollback: one row per file, the problems one line each, then a summary."""
    from rich.markup import escape
    from rich.table import Table

    print_recovered(env, report)
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
        table.add_row(escape(display_path(env, f.root)), escape(f.module), _styled(f.state),
                      _ACTION_TEXT.get(f.action, f.action), escape(detail))
    env.stdout.print(table)
    print_problems(env, report)
    if report.error:
        env.stderr.print(f"error: {report.error}", markup=False, highlight=False, soft_wrap=True)
    _summary(env, report)


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


def print_problems(env: Environment, report: RunReport) -> None:
    for line in problem_lines(report):
        env.stderr.print(line, markup=False, highlight=False, soft_wrap=True)


def _summary(env: Environment, report: RunReport) -> None:
    actions = [f.action for f in report.files]
    verb = "apply" if report.action == "apply" else "roll back"
    done = "applied" if report.action == "apply" else "rolled-back"
    if report.error:
        if done in actions:
            env.stderr.print(f"{report.action} failed after writing the files (see above)",
                             highlight=False, soft_wrap=True)
        else:
            env.stderr.print(f"{report.action} failed: nothing was changed",
                             highlight=False, soft_wrap=True)
    elif "missing" in actions or "error" in actions:
        env.stderr.print(f"cannot {verb}: fix the files above; nothing was changed",
                         highlight=False, soft_wrap=True)
    elif "refused" in actions:
        env.stderr.print(f"refused to {verb}: nothing was changed", highlight=False, soft_wrap=True)
    elif report.dry_run:
        n = sum(a.startswith("would") for a in actions)
        env.stdout.print(f"dry run: {n} file(s) would change; nothing was written")
    elif all(a == "unchanged" for a in actions):
        what = "already applied" if report.action == "apply" else "not applied"
        env.stdout.print(f"{report.patchset} is {what} in every root; nothing to do")
    else:
        n = actions.count(done)
        env.stdout.print(f"{report.action}: {n} file(s) written in "
                         f"{len({f.root for f in report.files if f.action == done})} root(s)")


def print_status(env: Environment, reports: list[RunReport]) -> None:
    """status: per root and operation."""
    from rich.markup import escape
    from rich.table import Table

    for report in reports:
        print_recovered(env, report)
        table = Table(title=f"{report.patchset} on {report.host}", title_justify="left")
        for col in ("root", "operation", "state", "value", "where"):
            table.add_column(col, overflow="fold")
        for f in report.files:
            if f.state in ("missing", "error"):
                where = _where(env, f, f.error_line)
                table.add_row(escape(display_path(env, f.root)), "-", _styled(f.state),
                              escape(f.message), escape(where))
                continue
            root = escape(display_path(env, f.root))  # shown once per file
            for o in f.ops:
                if o.state == "drifted":
                    found = ", ".join(x.code for x in o.found if x.kind == "other") or ""
                    value = o.reason + (f": {found}" if found else "")
                else:
                    value = o.shown
                table.add_row(root, escape(o.op_id), _styled(o.state), escape(value),
                              escape(_where(env, f, o.line)))
                root = ""
            table.add_row(root, "[bold]file[/]", _styled(f.state), "", "", end_section=True)
        env.stdout.print(table)
        print_problems(env, report)


def print_patchset(env: Environment, ps: Patchset) -> None:
    from rich.markup import escape
    from rich.table import Table

    env.stdout.print(f"[bold]{escape(ps.name)}[/]  {escape(ps.description)}")
    env.stdout.print(f"file: {escape(ps.source)}")
    env.stdout.print(f"modules: {escape(', '.join(ps.modules))}")
    env.stdout.print(f"backup name: {escape(ps.backup_template)}")
    table = Table(title="operations", title_justify="left")
    for col in ("id", "op", "where", "from", "to"):
        table.add_column(col, overflow="fold")
    for op in ps.operations:
        table.add_row(escape(op.id), op.kind, escape(op.describe), escape(op.from_ or "-"),
                      escape(op.to or "-"))
    env.stdout.print(table)


def print_diff(env: Environment, text: str) -> None:
    from rich.syntax import Syntax

    env.stdout.print(Syntax(text, "diff", theme="ansi_dark", background_color="default"))
