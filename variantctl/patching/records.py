"""What variantctl wrote, as values: a ledger record and how a rollback restored a file.

Pure (no file input): ``variantctl.targets.ledger`` reads and appends these on a
target; ``variantctl.patching.decide`` decides from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import Enum

from variantctl.jsontypes import JsonObject


class Method(str, Enum):
    """How a ledger record's file was written (``method`` in ``ledger.jsonl``)."""

    #: an apply: the transform
    TRANSFORM = ""
    #: a rollback that restored the backup the apply made
    BACKUP = "backup"
    #: ``rollback --force``: the inverse transform
    INVERSE = "inverse-transform"
    #: a rollback finished by crash recovery, root by root (not a commit point)
    RECOVERY = "recovery"

    def __str__(self) -> str:  # the JSON/ledger string, on every Python
        return str(self.value)


@dataclass(frozen=True, kw_only=True)
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
    #: how a rollback restored the file (a :class:`Method` value; "" for an apply)
    method: str = ""

    def to_json(self) -> JsonObject:
        return asdict(self)  # every field is a str, bool or None


def last_applied(records: Sequence[LedgerRecord], patchset: str, file: str
                 ) -> LedgerRecord | None:
    """The apply record still in force for ``file`` (None if the last action was a rollback)."""
    for rec in reversed(records):
        if rec.file != file or rec.patchset != patchset:
            continue
        return rec if rec.action == "apply" else None
    return None
