"""``status --scan``: per root, the installed files that differ from pip's RECORD."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.exitcodes import ExitCode
from variantctl.render.output import Block, text
from variantctl.render.patching import display_path

if TYPE_CHECKING:
    from variantctl.targets.scan import RootScan


def scan_blocks(cwd: Path, scans: list[RootScan]) -> list[Block]:
    out: list[Block] = []
    for s in scans:
        out.append(text(f"{display_path(cwd, s.root)}: {s.distribution}"
                        + (f" ({s.checked} files checked against RECORD)" if s.dist_info
                           and not s.problem else "")))
        if s.problem:
            out.append(text(f"  {s.problem}"))
            continue
        if not s.files:
            out.append(text("  every file as installed"))
        for f in s.files:
            what = f"patched by {f.patchset}" if f.patchset else f.kind
            extra = (f" (backups: {', '.join(display_path(cwd, b) for b in f.backups)})"
                     if f.backups else "")
            out.append(text(f"  {display_path(cwd, f.path)}: {what}{extra}"))
    return out


def scan_exit(scans: list[RootScan]) -> int:
    """0: nothing but our patchsets changed; 3: hand edits or missing files; 2: a RECORD
    cannot be used."""
    if any(s.problem for s in scans):
        return ExitCode.USAGE
    if any(f.patchset is None for s in scans for f in s.files):
        return ExitCode.CONFLICT
    return ExitCode.OK
