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
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from variantctl.errors import TargetError
from variantctl.targets.base import Target

STATE_DIR = ".variantctl"


def state_dir(root: str) -> str:
    return posixpath.join(root, STATE_DIR)


def ledger_path(root: str) -> str:
    return posixpath.join(root, STATE_DIR, "ledger.jsonl")


def journal_path(root: str) -> str:
    return posixpath.join(root, STATE_DIR, "journal.json")


def lock_path(root: str) -> str:
    return posixpath.join(root, STATE_DIR, "lock")


@dataclass(frozen=True)
class LedgerRecord:
    txn: str
    action: str  # apply | rollback
    patchset: str
    fingerprint: str
    file: str
    module: str
    sha256_before: str
    sha256_after: str
    backup: str | None
    #: True when this apply created the backup (a rollback may then remove it)
    backup_created: bool
    time: str
    tool_version: str
    host: str
    #: how a rollback restored the file: backup | inverse-transform
    method: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_ledger(target: Target, root: str) -> list[LedgerRecord]:
    """All records of a root (an absent ledger is empty; unreadable lines are skipped)."""
    try:
        raw = target.read_bytes(ledger_path(root))
    except TargetError as exc:
        if exc.kind == "not-found":
            return []
        raise
    out = []
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            data = json.loads(line)
            out.append(LedgerRecord(**data))
        except (ValueError, TypeError):
            continue
    return out


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


def last_applied(records: list[LedgerRecord], patchset: str, file: str) -> LedgerRecord | None:
    """The apply record still in force for ``file`` (None if the last action was a rollback)."""
    for rec in reversed(records):
        if rec.file != file or rec.patchset != patchset:
            continue
        return rec if rec.action == "apply" else None
    return None


@dataclass
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


@dataclass
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


def read_journal(target: Target, root: str) -> Journal | None:
    try:
        raw = target.read_bytes(journal_path(root))
    except TargetError as exc:
        if exc.kind == "not-found":
            return None
        raise
    try:
        return Journal.loads(raw)
    except (ValueError, TypeError, KeyError) as exc:
        raise TargetError(f"unreadable transaction journal ({exc})", kind="other",
                          host=target.name, path=journal_path(root),
                          hint="inspect it; delete it only if no apply was interrupted") from None
