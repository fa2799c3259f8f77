"""The apply, rollback and recovery decisions, as functions over facts.

Pure: the executor (``variantctl.targets.patchrun``, ``variantctl.targets.transaction``)
gathers the facts (ledger entries, a file's sha256, what its backup holds) and
acts on the answer; every rule about *what* to do lives here, so it is tested
with hand-made facts and no files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from enum import Enum

from variantctl.exitcodes import ExitCode
from variantctl.patching.outcomes import Action
from variantctl.patching.plan import FAIL, NOOP, REFUSE, WRITE
from variantctl.patching.records import LedgerRecord, Method
from variantctl.patching.states import APPLIED, DRIFTED, ERROR, MISSING, PARTIAL, PRISTINE

# -- apply -------------------------------------------------------------------------


def already_applied(record: LedgerRecord | None, *, fingerprint: str, sha256: str) -> bool:
    """The apply in force wrote exactly this content with this very patchset (same
    fingerprint): already applied, known without parsing the file."""
    return (record is not None and record.fingerprint == fingerprint
            and record.sha256_after == sha256)


def apply_action(plan_action: str, *, dry_run: bool) -> Action:
    """A file's action from its apply plan (``variantctl.patching.plan``)."""
    if plan_action == NOOP:
        return Action.UNCHANGED
    if plan_action == REFUSE:
        return Action.REFUSED
    if plan_action == FAIL:
        return Action.ERROR
    if plan_action == WRITE:
        return Action.WOULD_APPLY if dry_run else Action.APPLIED
    raise ValueError(f"unknown plan action {plan_action!r}")


def exit_for(actions: Iterable[Action]) -> int:
    """An apply's or rollback's exit code from its files' actions: a copy that is missing
    or cannot be read is bad input (2), a refused one a conflict (3)."""
    seen = set(actions)
    if seen & {Action.MISSING, Action.ERROR}:
        return ExitCode.USAGE
    if Action.REFUSED in seen:
        return ExitCode.CONFLICT
    return ExitCode.OK


def status_exit(states: Collection[str]) -> int:
    """``status``'s exit code from its files' states."""
    seen = set(states)
    if seen & {MISSING, ERROR}:
        return ExitCode.USAGE
    if seen & {DRIFTED, PARTIAL}:
        return ExitCode.CONFLICT
    if seen == {PRISTINE, APPLIED}:
        return ExitCode.CONFLICT  # some roots applied, others not: the copies disagree
    return ExitCode.OK


# -- rollback ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BackupFacts:
    """The backup a ledger record names, as found on the target."""

    path: str
    #: sha256 of what it holds (None when it cannot be used)
    sha256: str | None = None
    #: why it cannot be used (not beside its file, a link, unreadable), else None
    problem: str | None = None


def backup_misplaced(record: LedgerRecord) -> str | None:
    """Why the record's backup may not even be looked at: it must lie beside the file it
    backs up (a ledger is data; one edited to name another path must not make a rollback
    read or delete it)."""
    assert record.backup
    backup, path = posixpath.normpath(record.backup), posixpath.normpath(record.file)
    if posixpath.dirname(backup) != posixpath.dirname(path) or backup == path:
        return f"backup {record.backup} is not beside {record.file}"
    return None


def wants_backup(record: LedgerRecord | None, sha256: str) -> bool:
    """Is the record's backup a candidate for restoring a file whose content is
    ``sha256`` (the file still has what the apply wrote)?"""
    return record is not None and bool(record.backup) and record.sha256_after == sha256


def backup_intact(record: LedgerRecord | None, sha256: str, backup: BackupFacts | None
                  ) -> bool:
    """The ledger says we wrote exactly this content and the backup still holds the
    original: the rollback restores it without parsing the file."""
    return (record is not None and wants_backup(record, sha256) and backup is not None
            and backup.problem is None and backup.sha256 == record.sha256_before)


@dataclass(frozen=True, kw_only=True)
class RollbackFacts:
    """What is known about one copy when deciding its rollback."""

    #: sha256 of the file now
    sha256: str
    #: its state (``applied`` when it was not analysed: the fast path)
    state: str
    #: the apply record in force for the file in its root's ledger
    record: LedgerRecord | None
    #: that record's backup, looked at when :func:`wants_backup`
    backup: BackupFacts | None = None
    #: the revert plan's action and message (WRITE/"" when the file was not analysed)
    plan: str = WRITE
    plan_message: str = ""
    #: the inverse transform gives new bytes
    inverse: bool = False
    #: ``rollback --force``
    force: bool = False


@dataclass(frozen=True, kw_only=True)
class RollbackDecision:
    """A file's rollback: written (``method`` set) or not, and why."""

    #: ``rolled-back`` when the file is to be written, else unchanged/refused/error
    action: Action
    message: str
    #: how it is written: from the backup or by the inverse transform; None: not written
    method: Method | None = None
    #: the backup restored (shown, and named in the ledger)
    backup: str | None = None
    #: the backup to remove once the rollback is committed (our apply created it)
    remove_after: str | None = None


def decide_rollback(f: RollbackFacts) -> RollbackDecision:
    """Restore a file from its backup only when it still has the sha256 the ledger says
    we wrote and the backup still holds the original; otherwise refuse and explain,
    unless ``force``, which falls back to the inverse transform."""
    if f.plan == FAIL:
        return RollbackDecision(action=Action.ERROR, message=f.plan_message)
    rec = f.record
    if rec is not None and wants_backup(rec, f.sha256):
        if backup_intact(rec, f.sha256, f.backup):
            return RollbackDecision(
                action=Action.ROLLED_BACK, message=f"restore {rec.backup}",
                method=Method.BACKUP, backup=rec.backup,
                remove_after=rec.backup if rec.backup_created else None)
        why = (f.backup.problem if f.backup is not None and f.backup.problem
               else f"backup {rec.backup} no longer holds the original (sha256 differs)")
        if not f.force:
            return RollbackDecision(
                action=Action.REFUSED,
                message=f"{why}; rollback --force uses the inverse transform instead")
    elif f.state == PRISTINE:
        return RollbackDecision(action=Action.UNCHANGED, message="not applied")
    elif not f.force:
        if rec is not None:
            why = (f"file changed since variantctl applied it (sha256 {f.sha256[:12]}…"
                   f", wrote {rec.sha256_after[:12]}…)")
        else:
            why = "not applied by variantctl (no ledger entry in this root)"
        return RollbackDecision(
            action=Action.REFUSED,
            message=f"{why}; rollback --force reverts with the inverse transform")
    # --force: the inverse transform
    if f.plan == REFUSE:
        return RollbackDecision(action=Action.REFUSED, message=f.plan_message)
    if f.plan == NOOP or not f.inverse:
        return RollbackDecision(action=Action.UNCHANGED, message="not applied")
    return RollbackDecision(action=Action.ROLLED_BACK, message="inverse transform (--force)",
                            method=Method.INVERSE)


# -- recovery ----------------------------------------------------------------------


def committed(records: Iterable[LedgerRecord], txn: str) -> bool:
    """Did transaction ``txn`` reach its commit point (a ledger record with its id)?
    Records written by a recovery do not count: they finish an uncommitted rollback
    root by root. ``records`` may be lazy (the first hit stops reading)."""
    return any(r.txn == txn and r.method != Method.RECOVERY for r in records)


class RecoverStep(Enum):
    """What recovery does with one file of an uncommitted transaction."""

    #: it already holds the content to restore (not touched yet, or restored already)
    KEEP = "keep"
    #: it holds what the transaction read or wrote: restore the content
    RESTORE = "restore"
    #: someone else changed it since: left as is (and the journal kept)
    LEFT = "left"


def recover_step(*, current: str, restore_to: str, before: str, after: str) -> RecoverStep:
    """The step for a file whose content is ``current`` (all sha256), in a transaction
    that read ``before``, meant to write ``after`` and is undone to ``restore_to``."""
    if current == restore_to:
        return RecoverStep.KEEP
    if current in (before, after):
        return RecoverStep.RESTORE
    return RecoverStep.LEFT
