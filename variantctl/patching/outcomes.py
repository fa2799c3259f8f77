"""Result values of apply, status and rollback: what happened to each copy, and the run.

Pure (no file input, no printing): the executor (``variantctl.targets.patchrun``)
builds these, the renderers (``variantctl.render.patching``) show them, the CLI
maps ``exit_code`` to the process's exit. ``--json`` prints :meth:`RunReport.to_json`;
the :class:`Action` and :class:`Command` values are the strings it has always printed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonObject
from variantctl.patching.states import ERROR, MISSING, OpState, combine


class Command(str, Enum):
    """Which run a report is of (``action`` in the report's JSON)."""

    APPLY = "apply"
    ROLLBACK = "rollback"
    STATUS = "status"

    def __str__(self) -> str:  # the JSON/ledger string, on every Python
        return str(self.value)


class Action(str, Enum):
    """What happened (or would happen) to one copy (``action`` in a file's JSON)."""

    APPLIED = "applied"
    ROLLED_BACK = "rolled-back"
    #: nothing to do (already applied / not applied)
    UNCHANGED = "unchanged"
    WOULD_APPLY = "would-apply"
    WOULD_ROLL_BACK = "would-roll-back"
    #: the copy cannot be patched / restored safely (exit 3)
    REFUSED = "refused"
    #: the copy cannot be read or analysed (exit 2)
    ERROR = "error"
    #: the root does not hold the module (exit 2)
    MISSING = "missing"
    #: written, then undone because another file of the transaction failed
    RESTORED = "restored"
    #: would have been written, but another copy stopped the transaction
    NOT_APPLIED = "not-applied"
    NOT_ROLLED_BACK = "not-rolled-back"
    #: a status answer (nothing is written)
    STATUS = "status"

    def __str__(self) -> str:  # the JSON/ledger string, on every Python
        return str(self.value)


#: per command: the action of a file written, of one a dry run would write, and of one
#: not written because the transaction stopped
WRITTEN = {Command.APPLY: Action.APPLIED, Command.ROLLBACK: Action.ROLLED_BACK}
WOULD_WRITE = {Command.APPLY: Action.WOULD_APPLY, Command.ROLLBACK: Action.WOULD_ROLL_BACK}
NOT_WRITTEN = {Command.APPLY: Action.NOT_APPLIED, Command.ROLLBACK: Action.NOT_ROLLED_BACK}


@dataclass(frozen=True, kw_only=True)
class FileOutcome:
    """What happened (or would happen) to one copy of a module. Frozen: when another
    file of the transaction fails, the executor replaces an ``applied`` outcome by a
    ``restored`` or ``not-applied`` one before the report is built."""

    root: str
    module: str
    path: str
    #: state found before acting: pristine/applied/partial/drifted/missing/error
    state: str
    action: Action
    message: str = ""
    backup: str | None = None
    ops: tuple[OpState, ...] = ()
    sha256_before: str | None = None
    sha256_after: str | None = None
    #: contents for diffs (not in JSON)
    before: bytes | None = None
    after: bytes | None = None
    #: line of an error in the file, when known
    error_line: int | None = None

    def to_json(self) -> JsonObject:
        return {
            "root": self.root,
            "module": self.module,
            "path": self.path,
            "state": self.state,
            "action": str(self.action),
            "message": self.message,
            "backup": self.backup,
            "sha256_before": self.sha256_before,
            "sha256_after": self.sha256_after,
            "operations": [o.to_json() for o in self.ops],
        }


@dataclass(frozen=True, kw_only=True)
class RunReport:
    """Result of apply/status/rollback over a set of roots, built once when the run is
    over (``targets/patchrun.py``)."""

    action: Command
    patchset: str
    host: str
    roots: tuple[str, ...]
    files: tuple[FileOutcome, ...] = ()
    #: what crash recovery repaired, one line each
    recovered: tuple[str, ...] = ()
    #: a transaction-level failure (everything already written was restored)
    error: str | None = None
    exit_code: int = ExitCode.OK
    dry_run: bool = False

    def to_json(self) -> JsonObject:
        return {
            "action": str(self.action),
            "patchset": self.patchset,
            "host": self.host,
            "roots": list(self.roots),
            "dry_run": self.dry_run,
            "ok": self.exit_code == ExitCode.OK,
            "exit_code": int(self.exit_code),
            "error": self.error,
            "recovered": list(self.recovered),
            "files": [f.to_json() for f in self.files],
        }


def by_root(roots: Sequence[str], files: Iterable[FileOutcome]) -> list[FileOutcome]:
    """``files`` in the order of the roots given, then by module."""
    order = {r: i for i, r in enumerate(roots)}
    return sorted(files, key=lambda f: (order.get(f.root, 0), f.module))


def roots_state(report: RunReport) -> dict[str, str]:
    """One state per root (its files combined; missing/error win)."""
    out: dict[str, str] = {}
    for root in report.roots:
        states = [f.state for f in report.files if f.root == root]
        out[root] = root_state(states)
    return out


def root_state(states: Iterable[str]) -> str:
    """A root's state from its files' states (missing, then error, win over the rest)."""
    seen = list(states)
    if MISSING in seen:
        return MISSING
    if ERROR in seen:
        return ERROR
    return combine(seen)
