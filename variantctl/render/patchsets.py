"""``patch list``, ``patch show --json`` and ``patch diff`` output (returns, never
prints)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.render.output import Block

if TYPE_CHECKING:
    from rich.table import Table

    from variantctl.errors import ConfigError
    from variantctl.patching.model import Patchset
    from variantctl.patching.outcomes import RunReport


def patchsets_table(good: Sequence[Patchset], where: Path) -> Table:
    """``patch list``: one row per patchset that loads."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"patchsets in {where}", title_justify="left")
    for col in ("name", "modules", "ops", "description"):
        table.add_column(col, overflow="fold")
    for p in good:
        table.add_row(escape(p.name), escape(", ".join(p.modules)), str(len(p.operations)),
                      escape(p.description))
    return table


def list_json(good: Sequence[Patchset], bad: Sequence[ConfigError]) -> JsonObject:
    """``patch list --json``: every patchset, and every file that does not load."""
    return {
        "patchsets": [{"name": p.name, "description": p.description,
                       "modules": list(p.modules), "operations": len(p.operations),
                       "file": p.source} for p in good],
        "errors": [{"file": e.source, "error": e.to_json()} for e in bad],
    }


def list_blocks(good: Sequence[Patchset], bad: Sequence[ConfigError], where: Path
                ) -> list[Block]:
    """``patch list``: the table, then each broken file's error (stderr, file:line)."""
    return [Block(patchsets_table(good, where))] + [
        Block(f"error: {e.message}", err=True, markup=False, highlight=False, soft_wrap=True)
        for e in bad]


def patchset_json(ps: Patchset) -> JsonObject:
    """``patch show --json``."""
    return {
        "name": ps.name, "description": ps.description, "file": ps.source,
        "modules": list(ps.modules), "backup": ps.backup_template,
        "fingerprint": ps.fingerprint,
        "operations": [{"id": o.id, "op": o.kind, "module": o.module, "where": o.describe,
                        "from": o.from_, "to": o.to, "defined_at": o.where}
                       for o in ps.operations],
    }


def _diffs(cwd: Path, report: RunReport) -> dict[str, str]:
    from variantctl.patching.plan import unified_diff
    from variantctl.render.patching import display_path

    return {
        f.path: unified_diff(f.before, f.after, display_path(cwd, f.path))
        for f in report.files
        if f.before is not None and f.after is not None
    }


def diff_json(cwd: Path, report: RunReport) -> JsonObject:
    """``patch diff --json``: the report, each file with its diff."""
    diffs = _diffs(cwd, report)
    data = report.to_json()
    data["files"] = [{**f.to_json(), "diff": diffs.get(f.path, "")} for f in report.files]
    return data


def diff_blocks(cwd: Path, report: RunReport) -> list[Block]:
    """``patch diff``: each file's unified diff, or why there is none."""
    from rich.markup import escape

    from variantctl.render.patching import diff_block, recovered_blocks, report_blocks

    diffs = _diffs(cwd, report)
    out: list[Block] = []
    if not report.exit_code:
        out += recovered_blocks(report)  # report_blocks shows them otherwise
    for f in report.files:
        if f.path in diffs:
            out.append(Block(f"[bold]# {escape(f.root)}[/]", highlight=False))
            out.append(diff_block(diffs[f.path]))
        elif f.action == "unchanged":
            out.append(Block(f"# {f.root}: {f.module} already applied, no change",
                             highlight=False, markup=False))
    if report.exit_code:
        out += report_blocks(cwd, report)
    return out
