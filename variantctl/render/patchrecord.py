"""``patch record``'s report: the operations recorded, where they travel, the adoption."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.render.output import Block, text
from variantctl.render.patching import display_path

if TYPE_CHECKING:
    from variantctl.targets.patchrecord import RecordReport


def record_blocks(cwd: Path, report: RecordReport) -> list[Block]:
    """What was recorded and verified, one line per operation and per other copy."""
    out = [text(f"recorded {report.name}: {display_path(cwd, report.file)} "
                f"({len(report.patchset.operations)} operations; applied to "
                f"{display_path(cwd, report.pristine)} it gives "
                f"{display_path(cwd, report.edited)} byte for byte)")]
    for op in report.patchset.operations:
        change = (f"{op.from_} -> {op.to}" if op.kind != "replace-function"
                  else f"{op.from_} -> {(op.to or '').splitlines()[0]} …")
        out.append(text(f"  {op.id}: {op.kind} {op.describe}: {change}"))
    for c in report.copies:
        where = display_path(cwd, c.where)
        line = f" (line {c.line})" if c.line else ""
        detail = f": {c.detail}" if c.detail else ""
        out.append(text(f"  {where}: {c.verdict}{line}{detail}"))
    if report.adopted_backup:
        out.append(text(f"adopted {display_path(cwd, report.edited)} as applied by "
                        f"{report.name} (backup {display_path(cwd, report.adopted_backup)}); "
                        f"`variantctl rollback {report.name}` restores the original"))
    return out
