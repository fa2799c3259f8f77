"""EFFECTFUL: apply, status and rollback of a patchset over roots, through a Target.

Written only against :class:`~variantctl.targets.base.Target`, so the same
code runs on this machine and (with an SshTarget) on a remote host.

An apply or rollback over several roots is one transaction:

1. lock every root (``<root>/.variantctl/lock``, sorted order), repair any
   interrupted transaction found there;
2. read every copy, plan (pure; identical copies analysed once), stop on
   missing/broken/drifted files before anything is written;
3. write the journal (intent, all files of all roots) into every root, then the
   backups (never overwriting different bytes), then each file atomically;
4. mark the journals committed, append the ledgers, remove the journals.

A failure in step 3 restores the files already written and removes the new
backups. A process killed in step 3 leaves the journals behind: the next apply,
rollback or status rolls an apply back (restores the backups, verified by
sha256) and completes a rollback, and says so.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from variantctl import __version__
from variantctl.config.patchsets import Patchset
from variantctl.errors import TargetError
from variantctl.exitcodes import ExitCode
from variantctl.patching.plan import (
    FAIL,
    NOOP,
    REFUSE,
    WRITE,
    SourceFile,
    backup_name,
    module_path,
)
from variantctl.patching.states import (
    APPLIED,
    DRIFTED,
    ERROR,
    MISSING,
    PARTIAL,
    PRISTINE,
    OpState,
    combine,
)
from variantctl.targets.base import Target
from variantctl.targets.ledger import (
    Journal,
    JournalFile,
    LedgerRecord,
    append_ledger,
    journal_path,
    last_applied,
    lock_path,
    read_journal,
    read_ledger,
    state_dir,
)

LOCK_TIMEOUT = 30.0
_TXN_COUNTER = itertools.count()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class FileOutcome:
    """What happened (or would happen) to one copy of a module."""

    root: str
    module: str
    path: str
    #: state found before acting: pristine/applied/partial/drifted/missing/error
    state: str
    #: applied, rolled-back, unchanged, would-apply, would-roll-back, refused, error, missing,
    #: restored (undone because another root failed), status
    action: str
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

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "module": self.module,
            "path": self.path,
            "state": self.state,
            "action": self.action,
            "message": self.message,
            "backup": self.backup,
            "sha256_before": self.sha256_before,
            "sha256_after": self.sha256_after,
            "operations": [o.to_json() for o in self.ops],
        }


@dataclass
class RunReport:
    """Result of apply/status/rollback over a set of roots."""

    action: str
    patchset: str
    host: str
    roots: list[str]
    files: list[FileOutcome] = field(default_factory=list)
    #: what crash recovery repaired, one line each
    recovered: list[str] = field(default_factory=list)
    #: a transaction-level failure (everything already written was restored)
    error: str | None = None
    exit_code: int = ExitCode.OK
    dry_run: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "patchset": self.patchset,
            "host": self.host,
            "roots": self.roots,
            "dry_run": self.dry_run,
            "ok": self.exit_code == ExitCode.OK,
            "exit_code": int(self.exit_code),
            "error": self.error,
            "recovered": self.recovered,
            "files": [f.to_json() for f in self.files],
        }


# -- reading ---------------------------------------------------------------------


def _normalise_roots(roots: Sequence[str]) -> list[str]:
    import posixpath

    out: list[str] = []
    for r in roots:
        n = posixpath.normpath(r)
        if n not in out:
            out.append(n)
    return out


def _read_sources(
    target: Target, roots: Sequence[str], patchset: Patchset
) -> tuple[list[SourceFile], list[FileOutcome]]:
    sources: list[SourceFile] = []
    problems: list[FileOutcome] = []
    for root in roots:
        st = target.stat(root)
        for module in patchset.modules:
            path = module_path(root, module)
            if st is None:
                problems.append(FileOutcome(root, module, path, MISSING, "missing",
                                            "root does not exist"))
                continue
            try:
                data = target.read_bytes(path)
            except TargetError as exc:
                if exc.kind == "not-found":
                    problems.append(FileOutcome(root, module, path, MISSING, "missing",
                                                f"module {module} not found in this root"))
                else:
                    problems.append(FileOutcome(root, module, path, ERROR, "error",
                                                exc.message))
                continue
            sources.append(SourceFile(root, module, path, data))
    return sources, problems


def _absent_roots(target: Target, roots: Sequence[str], patchset: Patchset
                  ) -> list[FileOutcome]:
    """Roots that do not exist (checked before anything, so no state dir is created)."""
    out: list[FileOutcome] = []
    for root in roots:
        if target.stat(root) is None:
            out.extend(FileOutcome(root, m, module_path(root, m), MISSING, "missing",
                                   "root does not exist") for m in patchset.modules)
    return out


@contextmanager
def _locked(target: Target, roots: Sequence[str], timeout: float) -> Iterator[None]:
    with ExitStack() as stack:
        for root in sorted(roots):
            target.makedirs(state_dir(root))
            stack.enter_context(target.lock(lock_path(root), timeout=timeout))
        yield


def _exit_for(files: Sequence[FileOutcome]) -> int:
    actions = {f.action for f in files}
    if actions & {"missing", "error"}:
        return ExitCode.USAGE
    if "refused" in actions:
        return ExitCode.CONFLICT
    return ExitCode.OK


# -- recovery --------------------------------------------------------------------


def _committed(target: Target, journal: Journal) -> bool:
    """Did the transaction reach its commit point (a ledger record with its id in any
    of its roots)? Records written by a recovery do not count: they finish an
    uncommitted rollback root by root."""
    for root in journal.roots:
        try:
            records = read_ledger(target, root)
        except TargetError:
            continue
        if any(r.txn == journal.txn and r.method != "recovery" for r in records):
            return True
    return False


def recover(target: Target, root: str) -> list[str]:
    """Repair an interrupted transaction in ``root`` (caller holds the root's lock).

    Returns one line per thing done. An uncommitted apply is rolled back from
    its backups, an uncommitted rollback is completed; every write is verified
    by sha256 and a file changed by someone else since is left alone (and said).
    """
    journal = read_journal(target, root)
    if journal is None:
        return []
    notes: list[str] = []
    what = f"interrupted {journal.action} of {journal.patchset} (transaction {journal.txn})"
    if _committed(target, journal):
        records = read_ledger(target, root)
        if not any(r.txn == journal.txn for r in records):
            append_ledger(target, root, [
                _record(journal, f, method="backup" if journal.action == "rollback" else "")
                for f in journal.files if f.root == root
            ])
        notes.append(f"{root}: finished the bookkeeping of a committed {journal.action} "
                     f"of {journal.patchset}")
        if journal.action == "rollback":
            _drop_restored_backups(target, journal, root)
        target.remove(journal_path(root))
        return notes
    for jf in journal.files:
        if jf.root != root:
            continue
        try:
            current = target.read_bytes(jf.path)
        except TargetError as exc:
            notes.append(f"{jf.path}: cannot read during recovery ({exc.message}); left as is")
            continue
        cur = _sha(current)
        if cur == jf.recover_sha256:
            pass  # the interrupted run had not touched it yet, or already restored it
        elif cur in (jf.sha256_before, jf.sha256_after):
            if jf.content is not None:
                data = jf.content.encode("utf-8")
            else:
                assert jf.recover_from is not None
                data = target.read_bytes(jf.recover_from)
            if _sha(data) != jf.recover_sha256:
                notes.append(f"{jf.path}: {jf.recover_from} no longer holds the expected "
                             f"content; file left as is")
                continue
            target.write_atomic(jf.path, data)
            verb = "restored from backup" if journal.action == "apply" else "rolled back"
            notes.append(f"{jf.path}: {verb} ({what})")
        else:
            notes.append(f"{jf.path}: changed since the {what}; left as is")
            continue
        if journal.action == "apply" and jf.backup_created and jf.backup:
            try:
                if _sha(target.read_bytes(jf.backup)) == jf.sha256_before:
                    target.remove(jf.backup)
            except TargetError:
                pass
    if journal.action == "rollback":
        append_ledger(target, root, [_record(journal, f, method="recovery")
                                     for f in journal.files if f.root == root])
        _drop_restored_backups(target, journal, root)
    notes.insert(0, f"{root}: repaired an {what}")
    target.remove(journal_path(root))
    return notes


def _drop_restored_backups(target: Target, journal: Journal, root: str) -> None:
    """After a rollback: remove the backups our apply created once the file equals them
    (as a finished rollback does); anything else is kept."""
    for jf in journal.files:
        if jf.root != root or not jf.backup_created or not jf.backup:
            continue
        try:
            if _sha(target.read_bytes(jf.backup)) == _sha(target.read_bytes(jf.path)):
                target.remove(jf.backup)
        except TargetError:
            continue


def _pending(target: Target, roots: Sequence[str]) -> list[str]:
    """Dry runs repair nothing, but say when a repair is due."""
    notes = []
    for root in roots:
        try:
            journal = read_journal(target, root)
        except TargetError as exc:
            notes.append(f"{root}: {exc.message}")
            continue
        if journal is not None:
            notes.append(f"{root}: an interrupted {journal.action} of {journal.patchset} "
                         f"will be repaired by the next apply, rollback or status "
                         f"(this dry run shows the files as they are now)")
    return notes


def _record(journal: Journal, jf: JournalFile, *, method: str = "") -> LedgerRecord:
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
        method=method,
    )


# -- the transaction -------------------------------------------------------------


@dataclass
class _Edit:
    outcome: FileOutcome
    before: bytes
    after: bytes
    backup: str | None
    backup_exists: bool
    #: for a rollback: the backup to remove after commit (created by our apply)
    remove_after: str | None = None
    method: str = ""


def _unchanged_since_apply(records: list[LedgerRecord], src: SourceFile, patchset: Patchset
                           ) -> bool:
    rec = last_applied(records, patchset.name, src.path)
    return (rec is not None and rec.fingerprint == patchset.fingerprint
            and rec.sha256_after == _sha(src.data))


def _choose_backup(target: Target, path: str, data: bytes, template: str, now: datetime,
                   patchset: str) -> tuple[str, bool]:
    """A backup path for ``data``: the templated name, or name.1, .2 … if that one holds
    different bytes. Returns (path, already holds these bytes)."""
    base = backup_name(template, path, now, patchset)
    for i in range(100):
        candidate = base if i == 0 else f"{base}.{i}"
        if target.stat(candidate) is None:
            return candidate, False
        if target.read_bytes(candidate) == data:
            return candidate, True
    raise TargetError("too many backups with different contents", kind="exists", path=base)


def _transaction(target: Target, action: str, patchset: Patchset, roots: list[str],
                 edits: list[_Edit], now: datetime) -> str | None:
    """Write ``edits`` as one transaction; returns an error text after restoring, else None."""
    # unique enough without importing secrets/uuid (start-up time matters here)
    salt = f"{now.isoformat()}{id(edits)}{next(_TXN_COUNTER)}{target.name}".encode()
    txn = now.strftime("%Y%m%dT%H%M%S") + "-" + hashlib.sha256(salt).hexdigest()[:8]
    touched_roots = sorted({e.outcome.root for e in edits})
    journal = Journal(
        txn=txn, action=action, patchset=patchset.name, fingerprint=patchset.fingerprint,
        time=now.isoformat(timespec="seconds"), tool_version=__version__, host=target.name,
        roots=touched_roots,
        files=[
            JournalFile(
                root=e.outcome.root, path=e.outcome.path, module=e.outcome.module,
                sha256_before=_sha(e.before), sha256_after=_sha(e.after),
                recover_sha256=_sha(e.before) if action == "apply" else _sha(e.after),
                recover_from=e.backup if (action == "apply" or e.method == "backup") else None,
                content=(None if (action == "apply" or e.method == "backup")
                         else e.after.decode("utf-8")),
                backup=e.backup, backup_created=not e.backup_exists if action == "apply"
                else e.remove_after is not None,
            )
            for e in edits
        ],
    )
    journals_written: list[str] = []
    backups_made: list[str] = []
    written: list[_Edit] = []
    try:
        for root in touched_roots:
            target.write_atomic(journal_path(root), journal.dumps())
            journals_written.append(root)
        if action == "apply":
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
        for e in written:
            e.outcome.action = "restored"
            e.outcome.message = "written, then restored because another file failed"
        return exc.message + (f" ({'; '.join(undo_notes)})" if undo_notes else "")
    # Commit point: the first ledger record carrying this transaction id. From here
    # on a recovery rolls forward (finishes the bookkeeping) instead of back.
    committed = False
    try:
        for root in touched_roots:
            append_ledger(target, root, [
                _record(journal, jf, method=next(e.method for e in edits
                                                 if e.outcome.path == jf.path))
                for jf in journal.files if jf.root == root
            ])
            committed = True
        for e in edits:
            if e.remove_after:
                target.remove(e.remove_after)
        for root in touched_roots:
            target.remove(journal_path(root))
    except TargetError as exc:
        if not committed:
            _undo(target, written, backups_made, journals_written)
            for e in written:
                e.outcome.action = "restored"
                e.outcome.message = "written, then restored: the ledger could not be written"
            return f"ledger: {exc.message}"
        return (f"{exc.message}: the files were written; the bookkeeping is finished by the "
                f"next apply, rollback or status")
    return None


def _commit(target: Target, action: str, patchset: Patchset, roots: list[str],
            edits: list[_Edit], now: datetime, report: RunReport) -> None:
    """Run the transaction; on failure the report says why and no file counts as done."""
    error = _transaction(target, action, patchset, roots, edits, now)
    if not error:
        return
    report.error = error
    report.exit_code = ExitCode.FAILED
    done, undone = {"apply": ("applied", "not-applied"),
                    "rollback": ("rolled-back", "not-rolled-back")}[action]
    for e in edits:
        if e.outcome.action == done:
            e.outcome.action = undone


def _holds(target: Target, path: str, data: bytes) -> bool:
    """Does ``path`` hold exactly ``data`` now?"""
    return _sha(target.read_bytes(path)) == _sha(data)


def _undo(target: Target, written: list[_Edit], backups: list[str],
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


# -- apply -----------------------------------------------------------------------


@contextmanager
def _session(target: Target, roots: Sequence[str], patchset: Patchset, report: RunReport, *,
             dry_run: bool, lock_timeout: float) -> Iterator[list[SourceFile] | None]:
    """The start apply and rollback share: every root holds the module, the roots are
    locked and an interrupted earlier run is repaired (a dry run only reports it), and
    the sources are read. Yields None when ``report`` already says why nothing can be
    done; the locks are held until the context ends."""
    absent = _absent_roots(target, roots, patchset)
    if absent:
        report.files.extend(absent)
        report.exit_code = ExitCode.USAGE
        yield None
        return
    with ExitStack() as stack:
        if not dry_run:
            try:
                stack.enter_context(_locked(target, roots, lock_timeout))
                for root in roots:
                    report.recovered.extend(recover(target, root))
            except TargetError as exc:
                report.error = exc.message
                report.exit_code = exc.exit_code
                yield None
                return
        else:
            report.recovered.extend(_pending(target, roots))
        sources, problems = _read_sources(target, roots, patchset)
        report.files.extend(problems)
        yield sources


def execute_apply(
    target: Target,
    roots: Sequence[str],
    patchset: Patchset,
    *,
    now: datetime,
    dry_run: bool = False,
    backup_template: str | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
) -> RunReport:
    """Apply ``patchset`` to the module in every root, as one transaction.

    ``dry_run`` stops after the plan (no lock, no repair, nothing written); the
    outcomes then carry ``before``/``after`` bytes for diffs.
    """
    from variantctl.patching.plan import plan_apply

    roots = _normalise_roots(roots)
    report = RunReport("apply", patchset.name, target.name, roots, dry_run=dry_run)
    template = backup_template or patchset.backup_template
    with _session(target, roots, patchset, report, dry_run=dry_run,
                  lock_timeout=lock_timeout) as sources:
        if sources is None:
            return report
        # what this patchset (same fingerprint) wrote last, unchanged since: already applied,
        # known without parsing
        ledgers = {root: read_ledger(target, root) for root in {s.root for s in sources}}
        done = {src.path for src in sources
                if _unchanged_since_apply(ledgers[src.root], src, patchset)}
        for src in sources:
            if src.path in done:
                report.files.append(FileOutcome(
                    src.root, src.module, src.path, APPLIED, "unchanged", "already applied",
                    sha256_before=_sha(src.data), before=src.data))
        todo = [src for src in sources if src.path not in done]
        plan = plan_apply(patchset, todo)
        edits: list[_Edit] = []
        for fp in plan.files:
            src, a = fp.source, fp.analysis
            out = FileOutcome(src.root, src.module, src.path, a.state, "", fp.message,
                              ops=a.ops, sha256_before=a.sha256, error_line=a.error_line,
                              before=src.data)
            report.files.append(out)
            if fp.action == NOOP:
                out.action = "unchanged"
            elif fp.action == REFUSE:
                out.action = "refused"
            elif fp.action == FAIL:
                out.action = "error"
            else:
                assert fp.action == WRITE and a.new_data is not None
                out.after = a.new_data
                out.sha256_after = a.new_sha256
                out.action = "would-apply" if dry_run else "applied"
                edits.append(_Edit(out, src.data, a.new_data, None, False))
        order = {r: i for i, r in enumerate(roots)}
        report.files.sort(key=lambda f: (order.get(f.root, 0), f.module))
        report.exit_code = _exit_for(report.files)
        if report.exit_code != ExitCode.OK or dry_run or not edits:
            if report.exit_code != ExitCode.OK:
                for e in edits:
                    e.outcome.action = "not-applied"
                    e.outcome.message = "not applied: another copy cannot be patched"
            return report
        try:
            for e in edits:
                e.backup, e.backup_exists = _choose_backup(
                    target, e.outcome.path, e.before, template, now, patchset.name)
                e.outcome.backup = e.backup
        except TargetError as exc:
            report.error = exc.message
            report.exit_code = ExitCode.FAILED
            return report
        _commit(target, "apply", patchset, roots, edits, now, report)
    return report


# -- rollback --------------------------------------------------------------------


def execute_rollback(
    target: Target,
    roots: Sequence[str],
    patchset: Patchset,
    *,
    now: datetime,
    force: bool = False,
    dry_run: bool = False,
    lock_timeout: float = LOCK_TIMEOUT,
) -> RunReport:
    """Undo ``patchset`` in every root, as one transaction.

    A file is restored from its backup only if it still has the sha256 the
    ledger says we wrote (and the backup still has the original's); otherwise
    the rollback refuses and explains, unless ``force``, which falls back to the
    inverse transform.
    """
    from variantctl.patching.plan import plan_revert

    roots = _normalise_roots(roots)
    report = RunReport("rollback", patchset.name, target.name, roots, dry_run=dry_run)
    with _session(target, roots, patchset, report, dry_run=dry_run,
                  lock_timeout=lock_timeout) as sources:
        if sources is None:
            return report
        ledgers = {root: read_ledger(target, root) for root in roots}
        # A file that still has the sha256 we wrote, with an intact backup, needs no
        # parsing: its state is what the apply left (so rollback does not import libcst).
        records = {src.path: last_applied(ledgers[src.root], patchset.name, src.path)
                   for src in sources}
        slow = [src for src in sources if not _backup_ok(target, records[src.path], src.data)]
        plans = {fp.source.path: fp for fp in plan_revert(patchset, slow).files} if slow else {}
        edits: list[_Edit] = []
        for src in sources:
            fp = plans.get(src.path)
            if fp is None:
                out = FileOutcome(src.root, src.module, src.path, APPLIED, "", "",
                                  sha256_before=_sha(src.data), before=src.data)
                action, message, inverse = WRITE, "", None
            else:
                a = fp.analysis
                out = FileOutcome(src.root, src.module, src.path, a.state, "", "", ops=a.ops,
                                  sha256_before=a.sha256, before=src.data,
                                  error_line=a.error_line)
                action, message, inverse = fp.action, fp.message, a.new_data
            report.files.append(out)
            edit = _rollback_edit(target, out, records[src.path], action, message, inverse,
                                  force)
            if edit is not None:
                out.after = edit.after
                out.sha256_after = _sha(edit.after)
                out.action = "would-roll-back" if dry_run else "rolled-back"
                edits.append(edit)
        report.exit_code = _exit_for(report.files)
        if report.exit_code != ExitCode.OK or dry_run or not edits:
            if report.exit_code != ExitCode.OK:
                for e in edits:
                    e.outcome.action = "not-rolled-back"
                    e.outcome.message = "not rolled back: another copy cannot be"
            return report
        _commit(target, "rollback", patchset, roots, edits, now, report)
    return report


def _backup_ok(target: Target, rec: LedgerRecord | None, data: bytes) -> bool:
    """The ledger says we wrote exactly ``data`` and the backup still holds the original."""
    if rec is None or not rec.backup or rec.sha256_after != _sha(data):
        return False
    try:
        return _sha(target.read_bytes(rec.backup)) == rec.sha256_before
    except TargetError:
        return False


def _rollback_edit(target: Target, out: FileOutcome, rec: LedgerRecord | None, action: str,
                   message: str, inverse: bytes | None, force: bool) -> _Edit | None:
    """Decide one file's rollback; sets ``out.action``/``message`` unless it returns an edit."""
    cur = out.sha256_before
    assert out.before is not None
    if action == FAIL:
        out.action, out.message = "error", message
        return None
    if rec is not None and rec.sha256_after == cur and rec.backup:
        try:
            backup = target.read_bytes(rec.backup)
        except TargetError as exc:
            backup, why = None, f"backup {rec.backup}: {exc.message}"
        else:
            why = f"backup {rec.backup} no longer holds the original (sha256 differs)"
        if backup is not None and _sha(backup) == rec.sha256_before:
            out.message = f"restore {rec.backup}"
            out.backup = rec.backup
            remove = rec.backup if rec.backup_created else None
            return _Edit(out, out.before, backup, rec.backup, True, remove, "backup")
        if not force:
            out.action, out.message = "refused", f"{why}; rollback --force uses the inverse " \
                "transform instead"
            return None
    elif out.state == PRISTINE:
        out.action, out.message = "unchanged", "not applied"
        return None
    elif not force:
        if rec is not None:
            why = (f"file changed since variantctl applied it (sha256 {cur[:12] if cur else '?'}…"
                   f", wrote {rec.sha256_after[:12]}…)")
        else:
            why = "not applied by variantctl (no ledger entry in this root)"
        out.action = "refused"
        out.message = f"{why}; rollback --force reverts with the inverse transform"
        return None
    # --force: the inverse transform
    if action == REFUSE:
        out.action, out.message = "refused", message
        return None
    if action == NOOP or inverse is None:
        out.action, out.message = "unchanged", "not applied"
        return None
    out.message = "inverse transform (--force)"
    return _Edit(out, out.before, inverse, None, False, None, "inverse-transform")


# -- status ----------------------------------------------------------------------


class StateCache:
    """Maps (content sha256, patchset fingerprint, module) to a state answer.

    The default keeps nothing; ``variantctl.targets.statecache`` persists it.
    """

    def get(self, key: str) -> dict[str, Any] | None:
        return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        return None


def execute_status(
    target: Target,
    roots: Sequence[str],
    patchset: Patchset,
    *,
    cache: StateCache | None = None,
    repair: bool = True,
) -> RunReport:
    """Per root and operation state. Files whose content hash is cached are not parsed.

    With ``repair`` an interrupted transaction is repaired first (if its root's
    lock is free).
    """
    roots = _normalise_roots(roots)
    cache = cache or StateCache()
    report = RunReport("status", patchset.name, target.name, roots)
    if repair:
        for root in roots:
            try:
                if read_journal(target, root) is None:
                    continue
                with target.lock(lock_path(root), timeout=0.0):
                    report.recovered.extend(recover(target, root))
            except TargetError as exc:
                report.recovered.append(f"{root}: a transaction is in progress or was "
                                        f"interrupted; not repaired now ({exc.message})")
    sources, problems = _read_sources(target, roots, patchset)
    report.files.extend(problems)
    answers: dict[str, dict[str, Any]] = {}
    todo: list[SourceFile] = []
    keys: list[str] = []
    for src in sources:
        key = f"{_sha(src.data)}:{patchset.fingerprint}:{src.module}"
        keys.append(key)
        hit = answers.get(key) or cache.get(key)
        if hit is not None:
            answers[key] = hit
        else:
            todo.append(src)
    if todo:
        from variantctl.patching.plan import analyze_all

        analyses = analyze_all(patchset, todo, with_lines=True)
        for src in todo:
            key = f"{_sha(src.data)}:{patchset.fingerprint}:{src.module}"
            a = analyses[(src.module, _sha(src.data))]
            value = {"state": a.state, "error": a.error, "error_line": a.error_line,
                     "ops": [o.to_json() for o in a.ops]}
            answers[key] = value
            cache.put(key, value)
    for src, key in zip(sources, keys, strict=True):
        v = answers[key]
        ops = tuple(OpState.from_json(o) for o in v["ops"])
        report.files.append(FileOutcome(
            src.root, src.module, src.path, v["state"], "status", v["error"] or "",
            ops=ops, sha256_before=_sha(src.data), error_line=v.get("error_line")))
    order = {r: i for i, r in enumerate(roots)}
    report.files.sort(key=lambda f: (order.get(f.root, 0), f.module))
    states = {f.state for f in report.files}
    if states & {MISSING, ERROR}:
        report.exit_code = ExitCode.USAGE
    elif states & {DRIFTED, PARTIAL}:
        report.exit_code = ExitCode.CONFLICT
    elif states == {PRISTINE, APPLIED}:
        # some roots applied, others not: the copies disagree
        report.exit_code = ExitCode.CONFLICT
    return report


def roots_state(report: RunReport) -> dict[str, str]:
    """One state per root (its files combined; missing/error win)."""
    out: dict[str, str] = {}
    for root in report.roots:
        states = [f.state for f in report.files if f.root == root]
        if MISSING in states:
            out[root] = MISSING
        elif ERROR in states:
            out[root] = ERROR
        else:
            out[root] = combine(states)
    return out
