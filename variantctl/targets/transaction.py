"""EFFECTFUL: one apply or rollback over several roots as a transaction, and its recovery.

1. lock every root (``<root>/.variantctl/lock``, sorted order) — :func:`locked`;
   the caller then repairs any interrupted transaction found there — :func:`recover`;
2. (the caller reads and plans; nothing is written before the plan is complete)
3. write the journal (intent, all files of all roots) into every root, then the
   backups (never overwriting different bytes), then each file atomically;
4. append the ledgers (the first record carrying the transaction id is the commit
   point), remove the backups a rollback restored, remove the journals — :func:`commit`.

A failure in step 3 restores the files already written and removes the new
backups (:func:`_undo`). A process killed in step 3 leaves the journals behind:
the next apply, rollback or status rolls an apply back (restores the backups,
verified by sha256) and completes a rollback, and says so. *What* to do with each
file is decided in :mod:`variantctl.patching.decide`; this module does it.
"""

from __future__ import annotations

import hashlib
import itertools
import posixpath
import stat as statmod
from collections.abc import Collection, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import datetime

from variantctl import __version__
from variantctl.errors import TargetError
from variantctl.patching.decide import RecoverStep, committed, recover_step
from variantctl.patching.model import Patchset
from variantctl.patching.outcomes import NOT_WRITTEN, WRITTEN, Action, Command, FileOutcome
from variantctl.patching.plan import backup_name, module_relpath
from variantctl.patching.records import LedgerRecord, Method
from variantctl.targets.base import Target
from variantctl.targets.guard import (
    StateConflict,
    check_regular_or_absent,
    check_under_root,
    remove_stale_temps,
)
from variantctl.targets.ledger import (
    STATE_DIR,
    Journal,
    JournalFile,
    append_ledger,
    journal_path,
    ledger_path,
    lock_path,
    read_journal,
    read_ledger,
    state_dir,
)

_TXN_COUNTER = itertools.count()


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(kw_only=True)
class Edit:
    """One file the transaction writes; ``outcome`` is replaced by what happened (the
    executor builds its report from the edits' last outcomes)."""

    outcome: FileOutcome
    before: bytes
    after: bytes
    #: for an apply: the backup of ``before``; for a rollback: the backup restored
    backup: str | None = None
    #: for an apply: ``backup`` already holds ``before`` (it is not written, nor removed)
    backup_exists: bool = False
    #: for a rollback: the backup to remove after commit (created by our apply)
    remove_after: str | None = None
    method: Method = Method.TRANSFORM


# -- locking -----------------------------------------------------------------------


def check_state_dir(target: Target, root: str) -> None:
    """``<root>/.variantctl`` is a real directory (or absent) and its files are regular
    files (or absent): a link there would put the lock, journal or ledger outside the
    root (and the pid written into the lock into the link's target)."""
    check_under_root(target, root, STATE_DIR, dirs_only=True)
    for path in (lock_path(root), journal_path(root), ledger_path(root)):
        check_regular_or_absent(target, path)


@contextmanager
def locked(target: Target, roots: Sequence[str], timeout: float) -> Iterator[None]:
    """Hold every root's lock (sorted order, so two runs never deadlock)."""
    with ExitStack() as stack:
        for root in sorted(roots):
            check_state_dir(target, root)
            target.makedirs(state_dir(root))
            check_state_dir(target, root)  # not swapped for a link while it was created
            stack.enter_context(target.lock(lock_path(root), timeout=timeout))
        yield


# -- recovery ----------------------------------------------------------------------


def _temps_removed(target: Target, paths: Sequence[str]) -> list[str]:
    return [f"{p}: removed a temp file left by an interrupted write"
            for p in remove_stale_temps(target, paths)]


def recover(target: Target, root: str) -> list[str]:
    """Repair an interrupted transaction in ``root`` (caller holds the root's lock).

    Returns one line per thing repaired (nothing when there was nothing to do). An
    uncommitted apply is rolled back from its backups, an uncommitted rollback is
    completed; every write is verified by sha256. Temp files an interrupted write
    left (of the journal, the ledger, a backup, a file) are removed.

    Raises :class:`StateConflict` (exit 3), keeping the journal, when the journal
    or a ledger cannot be read, or a file cannot be repaired (changed by someone
    else since, or its backup no longer holds the original): those are left alone
    and named, never guessed at.
    """
    notes = _temps_removed(target, [journal_path(root), ledger_path(root)])
    try:
        journal = read_journal(target, root)
    except StateConflict as exc:
        exc.done[:0] = notes
        raise
    if journal is None:
        return notes
    mine = [jf for jf in journal.files if jf.root == root]
    try:
        for jf in mine:
            check_under_root(target, root, module_relpath(jf.module))
            notes += _temps_removed(target, [jf.path] + ([jf.backup] if jf.backup else []))
        return notes + _recover_journal(target, root, journal, mine)
    except StateConflict as exc:
        exc.done[:0] = notes
        raise
    except TargetError as exc:
        raise StateConflict(f"could not repair an interrupted {journal.action} of "
                            f"{journal.patchset}: {exc.message}", host=target.name,
                            path=journal_path(root), done=notes,
                            hint="fix the cause; the journal is kept, the next apply, "
                            "rollback or status repairs it") from None


def _recover_journal(target: Target, root: str, journal: Journal, mine: list[JournalFile]
                     ) -> list[str]:
    notes: list[str] = []
    what = f"interrupted {journal.action} of {journal.patchset} (transaction {journal.txn})"
    # a ledger that cannot be read raises StateConflict: without it the answer is a guess
    if committed(itertools.chain.from_iterable(read_ledger(target, r) for r in journal.roots),
                 journal.txn):
        records = read_ledger(target, root)
        if not any(r.txn == journal.txn for r in records):
            append_ledger(target, root, [
                _record(journal, f, method=(Method.BACKUP if journal.action == Command.ROLLBACK
                                            else Method.TRANSFORM))
                for f in mine
            ])
        notes.append(f"{root}: finished the bookkeeping of a committed {journal.action} "
                     f"of {journal.patchset}")
        if journal.action == Command.ROLLBACK:
            _drop_restored_backups(target, journal, root)
        target.remove(journal_path(root))
        return notes
    left: list[str] = []
    for jf in mine:
        try:
            current = target.read_bytes(jf.path)
        except TargetError as exc:
            left.append(f"{jf.path}: cannot be read ({exc.message})")
            continue
        step = recover_step(current=sha256_of(current), restore_to=jf.recover_sha256,
                            before=jf.sha256_before, after=jf.sha256_after)
        if step == RecoverStep.LEFT:
            left.append(f"{jf.path}: changed by someone else since the {what}")
            continue
        if step == RecoverStep.RESTORE:
            data = _restore_content(target, jf)
            if data is None or sha256_of(data) != jf.recover_sha256:
                left.append(f"{jf.path}: its backup {jf.recover_from} no longer holds the "
                            f"content to restore")
                continue
            target.write_atomic(jf.path, data)
            verb = "restored from backup" if journal.action == Command.APPLY else "rolled back"
            notes.append(f"{jf.path}: {verb} ({what})")
        if journal.action == Command.APPLY and jf.backup_created and jf.backup:
            try:
                if sha256_of(target.read_bytes(jf.backup)) == jf.sha256_before:
                    target.remove(jf.backup)
                    notes.append(f"{jf.backup}: removed the backup the {what} had made")
            except TargetError:
                pass
    if left:
        # Keep the journal: it is the only record of which backup holds which original.
        raise StateConflict(
            f"an {what} could not be repaired: " + "; ".join(left) + " (left as is)",
            host=target.name, path=journal_path(root), done=notes,
            hint=f"check the files named (their originals are in the backups the journal "
            f"names), then delete {journal_path(root)}")
    if journal.action == Command.ROLLBACK:
        append_ledger(target, root, [_record(journal, f, method=Method.RECOVERY) for f in mine])
        _drop_restored_backups(target, journal, root)
    target.remove(journal_path(root))
    if notes:
        notes.insert(0, f"{root}: repaired an {what}")
    else:
        notes.append(f"{root}: cleared the journal of an {what} (no file had been changed)")
    return notes


def _restore_content(target: Target, jf: JournalFile) -> bytes | None:
    """The content recovery restores: in the journal itself, or in the backup it names
    (None when that cannot be read)."""
    if jf.content is not None:
        return jf.content.encode("utf-8")
    if jf.recover_from is None:
        return None
    try:
        return target.read_bytes(jf.recover_from)
    except TargetError:
        return None


def _drop_restored_backups(target: Target, journal: Journal, root: str) -> None:
    """After a rollback: remove the backups our apply created once the file equals them
    (as a finished rollback does); anything else is kept."""
    for jf in journal.files:
        if jf.root != root or not jf.backup_created or not jf.backup:
            continue
        try:
            if sha256_of(target.read_bytes(jf.backup)) == sha256_of(target.read_bytes(jf.path)):
                target.remove(jf.backup)
        except TargetError:
            continue


def pending(target: Target, roots: Sequence[str]) -> list[str]:
    """Dry runs repair nothing, but say when a repair is due (an unreadable journal
    raises :class:`StateConflict`)."""
    notes = []
    for root in roots:
        journal = read_journal(target, root)
        if journal is not None:
            notes.append(f"{root}: an interrupted {journal.action} of {journal.patchset} "
                         f"will be repaired by the next apply, rollback or status "
                         f"(this dry run shows the files as they are now)")
    return notes


def _record(journal: Journal, jf: JournalFile, *, method: Method) -> LedgerRecord:
    return LedgerRecord(
        txn=journal.txn,
        action=journal.action,
        patchset=journal.patchset,
        fingerprint=journal.fingerprint,
        file=jf.path,
        module=jf.module,
        sha256_before=jf.sha256_before,
        sha256_after=jf.sha256_after,
        backup=jf.backup,
        backup_created=jf.backup_created,
        time=journal.time,
        tool_version=journal.tool_version,
        host=journal.host,
        method=str(method),
    )


# -- backups -----------------------------------------------------------------------


def choose_backup(target: Target, path: str, data: bytes, *, template: str, now: datetime,
                  patchset: str, managed: Collection[str]) -> tuple[str, bool]:
    """A backup path for ``data``: the templated name, or name.1, .2 … if that one holds
    different bytes, is a link (dangling or not) or not a regular file. Returns (path,
    already holds these bytes). Never a file of the transaction (``managed``): the
    backup of a file cannot be the file itself or another copy being patched."""
    base = backup_name(template, path, now, patchset)
    if posixpath.dirname(base) != posixpath.dirname(path) or base in managed:
        # load-time validation refuses such templates; this keeps any caller honest
        raise TargetError(f"backup template {template!r} names {base}, a file this "
                          f"transaction patches", kind="other", host=target.name, path=path)
    for i in range(100):
        candidate = base if i == 0 else f"{base}.{i}"
        if candidate in managed:
            continue
        st = target.lstat(candidate)
        if st is None:
            return candidate, False
        if not statmod.S_ISREG(st.mode):
            continue  # a link there is skipped, never followed nor replaced
        if target.read_bytes(candidate) == data:
            return candidate, True
    raise TargetError("too many backups with different contents", kind="exists", path=base,
                      host=target.name)


# -- the transaction ---------------------------------------------------------------


def _journal(command: Command, patchset: Patchset, edits: list[Edit], now: datetime,
             host: str) -> Journal:
    # unique enough without importing secrets/uuid (start-up time matters here)
    salt = f"{now.isoformat()}{id(edits)}{next(_TXN_COUNTER)}{host}".encode()
    txn = now.strftime("%Y%m%dT%H%M%S") + "-" + hashlib.sha256(salt).hexdigest()[:8]
    apply = command == Command.APPLY
    return Journal(
        txn=txn, action=str(command), patchset=patchset.name,
        fingerprint=patchset.fingerprint, time=now.isoformat(timespec="seconds"),
        tool_version=__version__, host=host, roots=sorted({e.outcome.root for e in edits}),
        files=[
            JournalFile(
                root=e.outcome.root, path=e.outcome.path, module=e.outcome.module,
                sha256_before=sha256_of(e.before), sha256_after=sha256_of(e.after),
                # an apply is undone to what it read (kept in the backup); a rollback is
                # finished by writing what it meant to (the backup, or the inverse
                # transform's bytes kept in the journal itself)
                recover_sha256=sha256_of(e.before) if apply else sha256_of(e.after),
                recover_from=e.backup if (apply or e.method == Method.BACKUP) else None,
                content=(None if (apply or e.method == Method.BACKUP)
                         else e.after.decode("utf-8")),
                backup=e.backup,
                backup_created=(not e.backup_exists) if apply else e.remove_after is not None,
            )
            for e in edits
        ],
    )


def _run(target: Target, command: Command, patchset: Patchset, edits: list[Edit],
         now: datetime) -> str | None:
    """Write ``edits`` as one transaction; returns an error text after restoring, else None."""
    journal = _journal(command, patchset, edits, now, target.name)
    journals_written: list[str] = []
    backups_made: list[str] = []
    written: list[Edit] = []
    try:
        for root in journal.roots:
            target.write_atomic(journal_path(root), journal.dumps())
            journals_written.append(root)
        if command == Command.APPLY:
            for e in edits:
                if e.backup and not e.backup_exists:
                    # the backup keeps the original's permission bits (it may be restored)
                    st = target.stat(e.outcome.path)
                    target.write_new(e.backup, e.before,
                                     mode=st.mode & 0o7777 if st is not None else None)
                    backups_made.append(e.backup)
        for e in edits:
            # The lock keeps other variantctl runs out, not an editor or a `pip install`
            # writing the same file meanwhile: their bytes are never replaced by a patch
            # of the old ones. What landed is read back before the next file.
            if not _holds(target, e.outcome.path, e.before):
                raise TargetError("changed since variantctl read it (another program wrote "
                                  "it); not overwritten", kind="changed",
                                  path=e.outcome.path, host=target.name)
            target.write_atomic(e.outcome.path, e.after)
            written.append(e)
            if not _holds(target, e.outcome.path, e.after):
                raise TargetError("does not read back as written", path=e.outcome.path,
                                  host=target.name)
    except TargetError as exc:
        undo_notes = _undo(target, written, backups_made, journals_written)
        _mark_restored(written, "written, then restored because another file failed")
        return exc.message + (f" ({'; '.join(undo_notes)})" if undo_notes else "")
    # Commit point: the first ledger record carrying this transaction id. From here
    # on a recovery rolls forward (finishes the bookkeeping) instead of back.
    is_committed = False
    methods = {e.outcome.path: e.method for e in edits}
    try:
        for root in journal.roots:
            append_ledger(target, root, [_record(journal, jf, method=methods[jf.path])
                                         for jf in journal.files if jf.root == root])
            is_committed = True
        for e in edits:
            if e.remove_after:
                target.remove(e.remove_after)
        for root in journal.roots:
            target.remove(journal_path(root))
    except TargetError as exc:
        if not is_committed:
            _undo(target, written, backups_made, journals_written)
            _mark_restored(written, "written, then restored: the ledger could not be written")
            return f"ledger: {exc.message}"
        return (f"{exc.message}: the files were written; the bookkeeping is finished by the "
                f"next apply, rollback or status")
    return None


def commit(target: Target, command: Command, patchset: Patchset, edits: list[Edit],
           now: datetime) -> str | None:
    """Run the transaction. On failure returns why (the caller's report says so, exit 4)
    and no file counts as done: written ones are ``restored``, the rest ``not-…``."""
    error = _run(target, command, patchset, edits, now)
    if error:
        for e in edits:
            if e.outcome.action == WRITTEN[command]:
                e.outcome = replace(e.outcome, action=NOT_WRITTEN[command])
    return error


def _mark_restored(written: list[Edit], message: str) -> None:
    for e in written:
        e.outcome = replace(e.outcome, action=Action.RESTORED, message=message)


def _holds(target: Target, path: str, data: bytes) -> bool:
    """Does ``path`` hold exactly ``data`` now?"""
    return sha256_of(target.read_bytes(path)) == sha256_of(data)


def _undo(target: Target, written: list[Edit], backups: list[str],
          journals: list[str]) -> list[str]:
    problems: list[str] = []
    for e in reversed(written):
        try:
            target.write_atomic(e.outcome.path, e.before)
        except TargetError as exc:
            problems.append(f"could not restore {e.outcome.path}: {exc.message}; "
                            f"the journal stays so the next run repairs it")
            return problems
    for b in backups:
        with suppress(TargetError):
            target.remove(b)
    for root in journals:
        with suppress(TargetError):
            target.remove(journal_path(root))
    return problems
