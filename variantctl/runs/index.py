"""The listing index of a run store: ``runs/index.jsonl``, one summary line per run.

``variantctl runs`` shows a few fields of every run; reading every ``run.json`` (tens
of KiB each, validated whole) for them made listing a year of nightly runs take
seconds. The store keeps, per run directory, the listing's row and the identity of
the ``run.json`` it was made from (inode, size, mtime and ctime in ns — ctime cannot
be set back, so an edit in place is seen too). A listing stats each ``run.json``,
takes the rows whose identity still matches and reads only the others (new,
rewritten, damaged); a directory gone drops its row. So the index is a cache, never
the only copy of anything: deleted or damaged, it is rebuilt from the run files.

A listing never holds the rows: its memory would otherwise grow with the store (65 MB
for 10,000 runs). The index keeps its rows in the listing's order, so a listing reads
it twice, line by line: once to check each row against its run.json (keeping, per
run, only its directory's name and the offset of its row), once to hand the rows on.
Rows made again go to a temporary file as they are made; only their sort keys are
held, and they are merged into the index's rows in order. An index in another order
(as an older variantctl wrote it) is still used: the sort keys of its rows are sorted
instead, and the rewritten index is in order.

It is rewritten whole and atomically (the store's one writer, fed line by line) when a
row changed, under ``runs/index.lock``; a listing that finds the lock held does not
wait and leaves the rewrite to that holder (its rows are complete either way).
"""

from __future__ import annotations

import heapq
import io
import json
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Protocol

from variantctl.jsonfields import StoredFileError
from variantctl.jsontypes import JsonObject
from variantctl.runs.run import RunRecord, as_object, freeze_object, thaw

INDEX_NAME = "index.jsonl"
LOCK_NAME = "index.lock"
SCHEMA = "variantctl.runs-index/1"
#: an index larger than this is not read (a row is under 1 KiB: 10,000 runs ~ 8 MiB)
MAX_INDEX = 256 << 20
#: a longer line is damage, never held whole (a row holds a few fields of one run.json,
#: which is at most 16 MiB: store.MAX_RUN_JSON)
MAX_LINE = 32 << 20

#: a run.json's identity: (inode, size, mtime_ns, ctime_ns)
Stamp = tuple[int, int, int, int]
#: a row's place in the listing: damaged runs last, then by creation time and sequence
#: number, then as the store orders its directories (date, key) and by name, so no two
#: runs tie
Key = tuple[bool, str, int, str, str, str]


class Damaged(ValueError):
    """An index (or one line of it) that this version did not write."""


@dataclass(frozen=True)
class Entry:
    """One run's listing row: its directory's name, the identity of the run.json it was
    made from (None: not indexed) and whether it is the error of a damaged run (then the
    row is the listing's whole row)."""

    name: str
    stamp: Stamp | None
    row: JsonObject
    damaged: bool = False


class ListedStore(Protocol):
    """What a listing needs of the run store (``runs/store.py``, which reads and writes
    the files; this module only says what they mean)."""

    root: Path

    def run_names(self) -> dict[str, int]: ...
    def run_json_stamp(self, name: str) -> Stamp | None: ...
    def listing_entry(self, name: str) -> Entry: ...
    def open_index(self) -> IO[bytes] | None: ...
    def write_index(self, lines: Iterable[bytes]) -> None: ...


def sort_key(entry: Entry) -> Key:
    """Where ``entry`` goes in the listing (:meth:`RunStore.records`' order)."""
    # a listed name matched the store's <date>-<variant>-<key>-<seq>: neither the key
    # (hex) nor the sequence number holds a '-'
    _, key, seq = entry.name.rsplit("-", 2)
    row = entry.row
    return ("error" in row, str(row.get("created_at") or ""), int(seq), entry.name[:10], key,
            entry.name)


def header() -> bytes:
    return (json.dumps({"schema": SCHEMA}) + "\n").encode()


def line_of(entry: Entry, *, spill: bool = False) -> bytes:
    """One line of the index (``spill``: of a listing's temporary file of rows made
    again, which also holds the damaged runs' rows, never indexed)."""
    doc: JsonObject = {"dir": entry.name,
                       "stamp": None if entry.stamp is None else list(entry.stamp),
                       "row": entry.row}
    if spill and entry.damaged:
        doc["damaged"] = True
    return (json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _entry(line: bytes, *, spill: bool = False) -> Entry:
    """The entry of one line (``spill``: a line of the listing's own temporary file,
    where a row without a stamp is allowed)."""
    if not line.endswith(b"\n"):  # cut short, or longer than any row
        raise Damaged("a line without its end")
    try:
        doc = json.loads(line.decode("utf-8"))
        name, stamp, row = doc["dir"], doc["stamp"], doc["row"]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise Damaged(str(exc)) from None
    if spill and stamp is None:
        return Entry(name, None, row, doc.get("damaged") is True)
    if (not isinstance(name, str) or not isinstance(row, dict)
            or not isinstance(stamp, list) or len(stamp) != 4
            or not all(type(v) is int for v in stamp)):
        raise Damaged("not an index row")
    return Entry(name, (stamp[0], stamp[1], stamp[2], stamp[3]), row)


def entries(fh: IO[bytes]) -> Iterator[tuple[int, Entry]]:
    """The rows of an index file, each with its line's offset; :class:`Damaged` at
    the first line this version would not have written (then none of it is used)."""
    fh.seek(0)
    try:
        first = json.loads(fh.readline(MAX_LINE).decode("utf-8"))
    except (ValueError, RecursionError):
        first = None
    if first != {"schema": SCHEMA}:
        raise Damaged("not an index of this version")
    while True:
        at = fh.tell()
        line = fh.readline(MAX_LINE + 1)
        if not line:
            return
        yield at, _entry(line)


def entry_at(fh: IO[bytes], at: int, *, spill: bool = False) -> Entry:
    fh.seek(at)
    return _entry(fh.readline(MAX_LINE + 1), spill=spill)


def listing(store: ListedStore) -> Iterator[Entry]:
    """Every run of ``store`` as the listing shows it, in its order (see the module's
    docstring); the index is rewritten when a row changed."""
    names = store.run_names()  # directory name -> offset of its kept row (0: none)
    with ExitStack() as stack:
        old = store.open_index()
        if old is not None:
            stack.enter_context(old)
        in_order, dropped = True, False
        if old is not None:
            try:
                in_order, dropped = _keep(store, old, names)
            except Damaged:
                for name in names:
                    names[name] = 0
                old = None
        # the rows of the runs not kept, made again: on disk, their keys held
        spill: IO[bytes] = io.BytesIO()
        made: list[tuple[Key, int]] = []
        indexed = False
        for name, at in names.items():
            if at == 0:
                if not made:
                    spill = stack.enter_context(_spill_file())
                entry = store.listing_entry(name)
                made.append((sort_key(entry), spill.tell()))
                spill.write(line_of(entry, spill=True))
                indexed = indexed or entry.stamp is not None
        made.sort()
        spill.flush()

        def merged() -> Iterator[Entry]:
            kept = () if old is None else _kept(store, old, names, in_order)
            again = (entry_at(spill, at, spill=True) for _, at in made)
            return heapq.merge(kept, again, key=sort_key)

        if dropped or indexed or not in_order:
            store.write_index(chain([header()], (line_of(e) for e in merged()
                                                 if e.stamp is not None)))
        yield from merged()


def _spill_file() -> IO[bytes]:
    try:
        return tempfile.TemporaryFile()
    except OSError:  # no room for temporary files: the rows are held, as they once were
        return io.BytesIO()


def _keep(store: ListedStore, old: IO[bytes], names: dict[str, int]) -> tuple[bool, bool]:
    """Mark in ``names`` the offset of each index row that is still its run's (the first
    one, its run.json unchanged); whether the kept rows are in the listing's order, and
    whether any row was not kept."""
    in_order, dropped = True, False
    last: Key | None = None
    for at, entry in entries(old):
        if names.get(entry.name) != 0 or store.run_json_stamp(entry.name) != entry.stamp:
            dropped = True  # a run gone or changed, or a second row of one
            continue
        key = sort_key(entry)
        if last is not None and key < last:
            in_order = False
        last = key
        names[entry.name] = at
    return in_order, dropped


def _kept(store: ListedStore, old: IO[bytes], names: dict[str, int], in_order: bool
          ) -> Iterable[Entry]:
    """The rows :func:`_keep` marked, in the listing's order."""
    try:
        if in_order:
            for at, entry in entries(old):
                if names.get(entry.name) == at:
                    yield entry
            return
        keys = sorted((sort_key(e), at) for at, e in entries(old) if names.get(e.name) == at)
        for _, at in keys:
            yield entry_at(old, at)
    except Damaged:  # rewritten in place (it is replaced, never written so) while listed
        raise StoredFileError(f"{store.root / INDEX_NAME}: changed while it was read",
                              hint="list again") from None


#: facts shown in the listing (the full set is in ``runs show`` and the JSON)
FACTS = ("vllm_version", "engine", "attention_backend", "kv_cache_tokens")


def summary_row(record: RunRecord) -> JsonObject:
    """The listing's row of a run (``runs --json``; the directory is added by the store,
    which knows where the run is now)."""
    facts = {k: record.facts[k] for k in FACTS if record.facts.get(k) is not None}
    config = as_object(record.facts.get("config"))
    for key in ("enforce_eager", "max_seq_len"):
        if key in config:
            facts[key] = config[key]
    return {
        "run_id": record.run_id,
        "key": record.key,
        "variant": record.variant_name,
        "host": record.host.get("name"),
        "created_at": record.created_at,
        "verdict": record.verdict.kind,
        "signature": record.verdict.signature,
        "expect_ok": record.expect_ok,
        "time_to_ready_s": record.timings.get("time_to_ready_s"),
        "facts": thaw(freeze_object(facts)),
        "benchmarks": list(record.benchmarks),
    }
