"""Per-root bookkeeping on a Target: the ledger, the transaction journal and the lock.

Everything lives in ``<root>/.variantctl/``:

- ``ledger.jsonl``: one JSON record per file written (patchset, file, sha256
  before and after, backup path, time, tool version, transaction id);
- ``journal.json``: the intent of the transaction in progress (all roots' files),
  written before any file is touched and removed after the commit (the commit
  point is the first ledger record carrying the transaction id);
- ``lock``: an flock held during apply and rollback.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from variantctl.errors import TargetError
from variantctl.exitcodes import ExitCode
from variantctl.patching.records import LedgerRecord as LedgerRecord
from variantctl.patching.records import last_applied as last_applied
from variantctl.targets.base import Target
from variantctl.targets.guard import StateConflict

STATE_DIR = ".variantctl"


def state_dir(root: str) -> str:
    return posixpath.join(root, STATE_DIR)


def ledger_path(root: str) -> str:
    return posixpath.join(root, STATE_DIR, "ledger.jsonl")


def journal_path(root: str) -> str:
    return posixpath.join(root, STATE_DIR, "journal.json")


def lock_path(root: str) -> str:
    return posixpath.join(root, STATE_DIR, "lock")


def read_ledger(target: Target, root: str) -> list[LedgerRecord]:
    """All records of a root (an absent ledger is empty).

    A ledger that cannot be read or holds a line that is not a record is a
    conflict (:class:`StateConflict`, exit 3) naming the file and line: treating
    it as empty would forget what variantctl wrote, and a rollback or repair
    would then guess."""
    path = ledger_path(root)
    try:
        raw = target.read_bytes(path)
    except TargetError as exc:
        if exc.kind == "not-found":
            return []
        if exc.exit_code == ExitCode.UNREACHABLE:  # the host, not the file
            raise
        raise StateConflict(f"cannot read the ledger ({exc.message})", host=target.name,
                            path=path, hint=_LEDGER_HINT) from None
    out = []
    for lineno, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line.decode("utf-8"))
            if not isinstance(data, dict):
                raise TypeError("not a JSON object")
            rec = LedgerRecord(**data)
            if not all(isinstance(getattr(rec, k), str) for k in _LEDGER_STRINGS):
                raise TypeError("a field has the wrong type")
        except (ValueError, TypeError) as exc:
            raise StateConflict(f"line {lineno} is not a ledger record ({exc})",
                                host=target.name, path=f"{path}:{lineno}",
                                hint=_LEDGER_HINT) from None
        out.append(rec)
    return out


_LEDGER_STRINGS = ("txn", "action", "patchset", "fingerprint", "file", "module",
                   "sha256_before", "sha256_after")
_LEDGER_HINT = ("the ledger records what variantctl wrote (and which backups hold the "
                "originals); restore it from a copy or fix the line, nothing was changed")


def append_ledger(target: Target, root: str, records: Iterable[LedgerRecord]) -> None:
    """Append records (read + atomic rewrite, under the root's lock)."""
    try:
        old = target.read_bytes(ledger_path(root))
    except TargetError as exc:
        if exc.kind != "not-found":
            raise
        old = b""
    if old and not old.endswith(b"\n"):
        old += b"\n"
    new = "".join(json.dumps(r.to_json(), sort_keys=True) + "\n" for r in records)
    target.write_atomic(ledger_path(root), old + new.encode("utf-8"))


@dataclass(kw_only=True)
class JournalFile:
    root: str
    path: str
    module: str
    sha256_before: str
    sha256_after: str
    #: the content recovery restores (``sha256_before`` for an apply, ``after`` for a rollback)
    recover_sha256: str
    #: a file on the target holding that content (the backup), or None with ``content``
    recover_from: str | None
    content: str | None = None
    backup: str | None = None
    backup_created: bool = False


@dataclass(kw_only=True)
class Journal:
    txn: str
    action: str
    patchset: str
    fingerprint: str
    time: str
    tool_version: str
    host: str
    roots: list[str]
    files: list[JournalFile] = field(default_factory=list)
    #: kept for forward compatibility; the commit point is the ledger, not this field
    state: str = "intent"

    def dumps(self) -> bytes:
        return json.dumps(asdict(self), indent=1, sort_keys=True).encode("utf-8")

    @classmethod
    def loads(cls, raw: bytes) -> Journal:
        data = json.loads(raw.decode("utf-8"))
        files = [JournalFile(**f) for f in data.pop("files")]
        return cls(files=files, **data)


_JOURNAL_HINT = ("it describes an interrupted apply or rollback; inspect it (and the files "
                 "and backups it names), repair by hand, then delete it; nothing was changed")


def read_journal(target: Target, root: str) -> Journal | None:
    """The interrupted transaction of ``root``, None when there is none.

    A journal that cannot be read or parsed is a conflict (:class:`StateConflict`,
    exit 3) naming it: nothing can be repaired from it, and it is kept."""
    path = journal_path(root)
    try:
        raw = target.read_bytes(path)
    except TargetError as exc:
        if exc.kind == "not-found":
            return None
        if exc.exit_code == ExitCode.UNREACHABLE:  # the host, not the file
            raise
        raise StateConflict(f"cannot read the transaction journal ({exc.message})",
                            host=target.name, path=path, hint=_JOURNAL_HINT) from None
    try:
        journal = Journal.loads(raw)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StateConflict(f"unreadable transaction journal ({type(exc).__name__}: {exc})",
                            host=target.name, path=path, hint=_JOURNAL_HINT) from None
    check_journal(journal, root, host=target.name)
    return journal


_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def check_journal(journal: Journal, root: str, *, host: str) -> None:
    """Every file of ``root`` the journal names is the module's file in that root, and
    every backup it names lies beside that file: a journal is data a recovery writes
    from, so one naming other paths (edited by hand, or by someone else) is refused."""
    path = journal_path(root)

    def bad(why: str) -> StateConflict:
        return StateConflict(f"the transaction journal {why}; nothing was repaired",
                             host=host, path=path, hint=_JOURNAL_HINT)

    if journal.action not in ("apply", "rollback"):
        raise bad(f"has an unknown action {journal.action!r}")
    norm = posixpath.normpath(root)
    if norm not in {posixpath.normpath(r) for r in journal.roots if isinstance(r, str)}:
        raise bad("belongs to other roots")
    for jf in journal.files:
        if not isinstance(jf.root, str) or posixpath.normpath(jf.root) != norm:
            continue
        if not isinstance(jf.module, str) or not _MODULE.fullmatch(jf.module):
            raise bad(f"names a bad module {jf.module!r}")
        expected = posixpath.join(norm, *jf.module.split(".")) + ".py"
        if not isinstance(jf.path, str) or posixpath.normpath(jf.path) != expected:
            raise bad(f"names {jf.path!r}, not the file of {jf.module} in this root")
        for other in (jf.backup, jf.recover_from):
            if other is None:
                continue
            if (not isinstance(other, str)
                    or posixpath.dirname(posixpath.normpath(other)) != posixpath.dirname(expected)
                    or posixpath.normpath(other) == expected):
                raise bad(f"names a backup {other!r} that is not beside {jf.path}")
        for key in ("sha256_before", "sha256_after", "recover_sha256"):
            if not isinstance(getattr(jf, key), str):
                raise bad(f"has no {key} for {jf.path}")
        if jf.content is not None and not isinstance(jf.content, str):
            raise bad(f"has bad content for {jf.path}")
