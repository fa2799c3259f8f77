"""EFFECTFUL: apply, status and rollback of a patchset over roots, through a Target.

Written only against :class:`~variantctl.targets.base.Target`, so the same
code runs on this machine and (with an SshTarget) on a remote host. The jobs
are split so each can be read (and tested) alone:

- this module gathers the facts (reads every copy, the ledgers, the backups)
  and builds the report;
- :mod:`variantctl.patching.decide` (pure) decides what to do with each copy;
- :mod:`variantctl.patching.outcomes` (pure) holds the report values;
- :mod:`variantctl.targets.transaction` writes the decisions as one transaction
  over all roots (journal, commit, undo) and repairs an interrupted one.
"""

from __future__ import annotations

import stat as statmod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from variantctl.errors import TargetError
from variantctl.exitcodes import ExitCode
from variantctl.patching.decide import (
    BackupFacts,
    RollbackFacts,
    already_applied,
    apply_action,
    backup_intact,
    backup_misplaced,
    decide_rollback,
    exit_for,
    status_exit,
    wants_backup,
)
from variantctl.patching.model import Patchset
from variantctl.patching.outcomes import NOT_WRITTEN, WOULD_WRITE, WRITTEN, Action, Command, by_root
from variantctl.patching.outcomes import FileOutcome as FileOutcome
from variantctl.patching.outcomes import RunReport as RunReport
from variantctl.patching.outcomes import roots_state as roots_state
from variantctl.patching.plan import WRITE, SourceFile, module_path, module_relpath
from variantctl.patching.records import LedgerRecord, Method, last_applied
from variantctl.patching.states import APPLIED, ERROR, MISSING
from variantctl.targets.base import Target
from variantctl.targets.guard import LinkRefused, StateConflict, check_under_root
from variantctl.targets.ledger import lock_path, read_journal, read_ledger
from variantctl.targets.transaction import (
    Edit,
    check_state_dir,
    choose_backup,
    commit,
    locked,
    pending,
    recover,
    sha256_of,
)

if TYPE_CHECKING:
    from variantctl.targets.statecache import StateCache

LOCK_TIMEOUT = 30.0

#: why a file that could be written was not, when another copy stops the transaction
_STOPPED = {Command.APPLY: "not applied: another copy cannot be patched",
            Command.ROLLBACK: "not rolled back: another copy cannot be"}


# -- reading -----------------------------------------------------------------------


@dataclass
class _Draft:
    """What a run has found so far; its :class:`RunReport` is built once, at the end
    (:meth:`report`), from these files with each edit's last outcome in its place."""

    action: Command
    patchset: str
    host: str
    roots: list[str]
    dry_run: bool = False
    files: list[FileOutcome] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    error: str | None = None
    exit_code: int = ExitCode.OK
    #: the files the transaction writes (their outcomes replace those in ``files``)
    edits: list[Edit] = field(default_factory=list)

    def sort_by_root(self) -> None:
        self.files = by_root(self.roots, self.files)

    def report(self) -> RunReport:
        final = {e.outcome.path: e.outcome for e in self.edits}
        return RunReport(action=self.action, patchset=self.patchset, host=self.host,
                         roots=tuple(self.roots), dry_run=self.dry_run,
                         files=tuple(final.get(f.path, f) for f in self.files),
                         recovered=tuple(self.recovered), error=self.error,
                         exit_code=self.exit_code)


def _normalise_roots(roots: Sequence[str]) -> list[str]:
    import posixpath

    out: list[str] = []
    for r in roots:
        n = posixpath.normpath(r)
        if n not in out:
            out.append(n)
    return out


def _problem(root: str, module: str, action: Action, message: str) -> FileOutcome:
    """A copy that cannot be acted on (its state is the action: missing or error)."""
    return FileOutcome(root=root, module=module, path=module_path(root, module),
                       state=MISSING if action == Action.MISSING else ERROR, action=action,
                       message=message)


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
                problems.append(_problem(root, module, Action.MISSING, "root does not exist"))
                continue
            try:
                # a link on the way (vllm -> /elsewhere, arg_utils.py -> …) is refused
                # here, so status, apply and rollback agree and nothing outside the root
                # is read as if it were the copy in it
                check_under_root(target, root, module_relpath(module))
            except LinkRefused as exc:
                problems.append(_problem(root, module, Action.ERROR, _link_message(exc, path)))
                continue
            try:
                data = target.read_bytes(path)
            except TargetError as exc:
                if exc.kind == "not-found":
                    problems.append(_problem(root, module, Action.MISSING,
                                             f"module {module} not found in this root"))
                else:
                    problems.append(_problem(root, module, Action.ERROR, exc.message))
                continue
            sources.append(SourceFile(root, module, path, data))
    return sources, problems


def _absent_roots(target: Target, roots: Sequence[str], patchset: Patchset
                  ) -> list[FileOutcome]:
    """Roots that do not exist (checked before anything, so no state dir is created)."""
    out: list[FileOutcome] = []
    for root in roots:
        if target.stat(root) is None:
            out.extend(_problem(root, m, Action.MISSING, "root does not exist")
                       for m in patchset.modules)
    return out


def _link_message(exc: LinkRefused, path: str) -> str:
    """The refusal as a file's message (the outcome names ``path`` already)."""
    where = "" if exc.path == path else f"{exc.path} "
    return f"{where}{exc.reason}"


@contextmanager
def _session(target: Target, roots: Sequence[str], patchset: Patchset, report: _Draft, *,
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
        try:
            if not dry_run:
                stack.enter_context(locked(target, roots, lock_timeout))
                for root in roots:
                    report.recovered.extend(recover(target, root))
            else:
                report.recovered.extend(pending(target, roots))
        except TargetError as exc:
            if isinstance(exc, StateConflict):
                report.recovered.extend(exc.done)  # what was repaired before it stopped
            _fail(report, exc)
            yield None
            return
        sources, problems = _read_sources(target, roots, patchset)
        report.files.extend(problems)
        yield sources


def _fail(report: _Draft, exc: TargetError) -> None:
    report.error = exc.message
    if isinstance(exc, StateConflict | LinkRefused) and exc.hint:
        report.error += f"\nhint: {exc.hint}"  # what to do is the point of these two
    report.exit_code = exc.exit_code


def _ledgers(target: Target, roots: Iterable[str], report: _Draft
             ) -> dict[str, list[LedgerRecord]] | None:
    """Every root's ledger; None (the report says why, exit 3) if one cannot be read."""
    try:
        return {root: read_ledger(target, root) for root in roots}
    except TargetError as exc:
        _fail(report, exc)
        return None


def _nothing_to_write(command: Command, edits: list[Edit], report: _Draft, *,
                      dry_run: bool) -> bool:
    """Sets the exit code from the files' actions. True when nothing is to be written: a
    copy cannot be acted on (then the others are not written either: one transaction),
    a dry run, or no file needs a change."""
    report.exit_code = exit_for(f.action for f in report.files)
    if report.exit_code != ExitCode.OK:
        for e in edits:
            e.outcome = replace(e.outcome, action=NOT_WRITTEN[command],
                                message=_STOPPED[command])
        return True
    return dry_run or not edits


def _commit(target: Target, command: Command, patchset: Patchset, edits: list[Edit],
            now: datetime, report: _Draft) -> None:
    error = commit(target, command, patchset, edits, now)
    if error:
        report.error = error
        report.exit_code = ExitCode.FAILED


# -- apply -------------------------------------------------------------------------


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
    report = _Draft(action=Command.APPLY, patchset=patchset.name, host=target.name,
                    roots=roots, dry_run=dry_run)
    template = backup_template or patchset.backup_template
    with _session(target, roots, patchset, report, dry_run=dry_run,
                  lock_timeout=lock_timeout) as sources:
        if sources is None:
            return report.report()
        ledgers = _ledgers(target, sorted({s.root for s in sources}), report)
        if ledgers is None:
            return report.report()
        # what this patchset (same fingerprint) wrote last, unchanged since: already
        # applied, known without parsing
        done = {src.path for src in sources
                if already_applied(last_applied(ledgers[src.root], patchset.name, src.path),
                                   fingerprint=patchset.fingerprint,
                                   sha256=sha256_of(src.data))}
        report.files.extend(
            FileOutcome(root=src.root, module=src.module, path=src.path, state=APPLIED,
                        action=Action.UNCHANGED, message="already applied",
                        sha256_before=sha256_of(src.data), before=src.data)
            for src in sources if src.path in done)
        plan = plan_apply(patchset, [src for src in sources if src.path not in done])
        edits = report.edits
        for fp in plan.files:
            src, a = fp.source, fp.analysis
            writes = fp.action == WRITE
            assert a.new_data is not None or not writes
            out = FileOutcome(root=src.root, module=src.module, path=src.path, state=a.state,
                              action=apply_action(fp.action, dry_run=dry_run),
                              message=fp.message, ops=a.ops, sha256_before=a.sha256,
                              error_line=a.error_line, before=src.data,
                              after=a.new_data if writes else None,
                              sha256_after=a.new_sha256 if writes else None)
            report.files.append(out)
            if writes and a.new_data is not None:
                edits.append(Edit(outcome=out, before=src.data, after=a.new_data))
        report.sort_by_root()
        if _nothing_to_write(Command.APPLY, edits, report, dry_run=dry_run):
            return report.report()
        managed = {f.path for f in report.files}
        try:
            for e in edits:
                e.backup, e.backup_exists = choose_backup(
                    target, e.outcome.path, e.before, template=template, now=now,
                    patchset=patchset.name, managed=managed)
                e.outcome = replace(e.outcome, backup=e.backup)
        except TargetError as exc:
            report.error = exc.message
            report.exit_code = ExitCode.FAILED
            return report.report()
        _commit(target, Command.APPLY, patchset, edits, now, report)
    return report.report()


# -- rollback ----------------------------------------------------------------------


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
    inverse transform (:func:`variantctl.patching.decide.decide_rollback`).
    """
    from variantctl.patching.plan import plan_revert

    roots = _normalise_roots(roots)
    report = _Draft(action=Command.ROLLBACK, patchset=patchset.name, host=target.name,
                    roots=roots, dry_run=dry_run)
    with _session(target, roots, patchset, report, dry_run=dry_run,
                  lock_timeout=lock_timeout) as sources:
        if sources is None:
            return report.report()
        ledgers = _ledgers(target, roots, report)
        if ledgers is None:
            return report.report()
        records = {src.path: last_applied(ledgers[src.root], patchset.name, src.path)
                   for src in sources}
        backups: dict[str, tuple[BackupFacts, bytes | None]] = {}
        for src in sources:
            rec = records[src.path]
            if rec is not None and wants_backup(rec, sha256_of(src.data)):
                backups[src.path] = _look_at_backup(target, rec)
        # A file that still has the sha256 we wrote, with an intact backup, needs no
        # parsing: its state is what the apply left (so rollback does not import libcst).
        slow = [src for src in sources
                if not backup_intact(records[src.path], sha256_of(src.data),
                                     _facts_of(backups.get(src.path)))]
        plans = {fp.source.path: fp for fp in plan_revert(patchset, slow).files} if slow else {}
        edits = report.edits
        for src in sources:
            sha = sha256_of(src.data)
            backup = backups.get(src.path)
            fp = plans.get(src.path)
            # not analysed (fp None): the fast path, the file is as the apply left it
            a = fp.analysis if fp is not None else None
            facts = RollbackFacts(
                sha256=sha, state=a.state if a else APPLIED, record=records[src.path],
                backup=_facts_of(backup), plan=fp.action if fp else WRITE,
                plan_message=fp.message if fp else "",
                inverse=a is not None and a.new_data is not None, force=force)
            d = decide_rollback(facts)
            out = FileOutcome(root=src.root, module=src.module, path=src.path,
                              state=facts.state, action=d.action, message=d.message,
                              ops=a.ops if a else (), sha256_before=sha, before=src.data,
                              error_line=a.error_line if a else None)
            if d.method is None:
                report.files.append(out)
                continue
            after = backup[1] if d.method == Method.BACKUP and backup else (
                a.new_data if a else None)
            assert after is not None
            out = replace(out, after=after, sha256_after=sha256_of(after), backup=d.backup,
                          action=(WOULD_WRITE if dry_run else WRITTEN)[Command.ROLLBACK])
            report.files.append(out)
            edits.append(Edit(outcome=out, before=src.data, after=after, backup=d.backup,
                              backup_exists=d.backup is not None, remove_after=d.remove_after,
                              method=d.method))
        if not _nothing_to_write(Command.ROLLBACK, edits, report, dry_run=dry_run):
            _commit(target, Command.ROLLBACK, patchset, edits, now, report)
    return report.report()


def _facts_of(backup: tuple[BackupFacts, bytes | None] | None) -> BackupFacts | None:
    return backup[0] if backup is not None else None


def _look_at_backup(target: Target, rec: LedgerRecord) -> tuple[BackupFacts, bytes | None]:
    """The ledger's backup as found (and its bytes): it must be a regular file beside
    the file it backs up; a link or another path is not read (nor later removed)."""
    assert rec.backup
    problem = backup_misplaced(rec)
    if problem is None:
        try:
            st = target.lstat(rec.backup)
        except TargetError as exc:
            problem = f"backup {rec.backup}: {exc.message}"
        else:
            if st is not None and not statmod.S_ISREG(st.mode):
                problem = f"backup {rec.backup} is a link or not a regular file"
    if problem is not None:
        return BackupFacts(path=rec.backup, problem=problem), None
    try:
        data = target.read_bytes(rec.backup)
    except TargetError as exc:
        return BackupFacts(path=rec.backup, problem=f"backup {rec.backup}: {exc.message}"), None
    return BackupFacts(path=rec.backup, sha256=sha256_of(data)), data


# -- status ------------------------------------------------------------------------


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
    # only status caches states: apply and rollback never load the cache's module
    from variantctl.targets.statecache import CachedState, StateCache

    roots = _normalise_roots(roots)
    cache = cache or StateCache()
    report = _Draft(action=Command.STATUS, patchset=patchset.name, host=target.name,
                    roots=roots)
    failure: TargetError | None = None
    if repair:
        for root in roots:
            try:
                if read_journal(target, root) is None:
                    continue
                check_state_dir(target, root)
                with target.lock(lock_path(root), timeout=0.0):
                    report.recovered.extend(recover(target, root))
            except TargetError as exc:
                if isinstance(exc, StateConflict):
                    report.recovered.extend(exc.done)
                elif exc.kind == "busy":
                    # not a repair: said as a conflict (the files are mid-transaction)
                    exc = StateConflict(f"{root}: an apply or rollback is in progress (the "
                                        f"root is locked); the files are shown as they are "
                                        f"now", host=target.name)
                if failure is None or failure.exit_code != ExitCode.USAGE:
                    failure = exc
    sources, problems = _read_sources(target, roots, patchset)
    report.files.extend(problems)
    answers: dict[str, CachedState] = {}
    todo: list[SourceFile] = []
    keys: list[str] = []
    for src in sources:
        key = f"{sha256_of(src.data)}:{patchset.fingerprint}:{src.module}"
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
            key = f"{sha256_of(src.data)}:{patchset.fingerprint}:{src.module}"
            a = analyses[(src.module, sha256_of(src.data))]
            value = CachedState(a.state, a.error, a.error_line, a.ops)
            answers[key] = value
            cache.put(key, value)
    for src, key in zip(sources, keys, strict=True):
        v = answers[key]
        report.files.append(FileOutcome(
            root=src.root, module=src.module, path=src.path, state=v.state,
            action=Action.STATUS, message=v.error or "", ops=v.ops,
            sha256_before=sha256_of(src.data), error_line=v.error_line))
    report.sort_by_root()
    report.exit_code = status_exit([f.state for f in report.files])
    if failure is not None:
        code = report.exit_code
        _fail(report, failure)
        if code == ExitCode.USAGE:
            report.exit_code = code  # a missing copy outranks the conflict
    return report.report()
