"""The listing index of a run store: ``runs/index.jsonl``, one summary line per run.

``variantctl runs`` shows a few fields of every run; reading every ``run.json`` (tens
of KiB each, validated whole) for them made listing a year of nightly runs take
seconds. The store keeps, per run directory, the listing's row and the identity of
the ``run.json`` it was made from (inode, size, mtime and ctime in ns — ctime cannot
be set back, so an edit in place is seen too). A listing stats each ``run.json``,
takes the rows whose identity still matches and reads only the others (new,
rewritten, damaged); a directory gone drops its row. So the index is a cache, never
the only copy of anything: deleted or damaged, it is rebuilt from the run files.

It is rewritten whole and atomically (the store's one writer) when a row changed,
under ``runs/index.lock``; a listing that finds the lock held does not wait and
leaves the rewrite to that holder (its rows are complete either way).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from variantctl.jsontypes import JsonObject
from variantctl.runs.run import RunRecord, as_object, freeze_object, thaw

INDEX_NAME = "index.jsonl"
LOCK_NAME = "index.lock"
SCHEMA = "variantctl.runs-index/1"
#: at most this much of an index is read (a row is under 1 KiB: 10,000 runs ~ 8 MiB)
MAX_INDEX = 256 << 20

#: a run.json's identity: (inode, size, mtime_ns, ctime_ns)
Stamp = tuple[int, int, int, int]


@dataclass(frozen=True)
class Entry:
    """One run's row in the index and what it was made from."""

    name: str
    stamp: Stamp
    row: JsonObject


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def parse(data: bytes) -> dict[str, Entry]:
    """The entries of an index file by directory name; an empty map when it is not one
    this version wrote whole (then every row is made again)."""
    try:
        lines = data.decode("utf-8").splitlines()
        if not lines or json.loads(lines[0]) != {"schema": SCHEMA}:
            return {}
        out: dict[str, Entry] = {}
        for line in lines[1:]:
            doc = json.loads(line)
            name, stamp, row = doc["dir"], doc["stamp"], doc["row"]
            if (not isinstance(name, str) or not isinstance(row, dict)
                    or not isinstance(stamp, list) or len(stamp) != 4
                    or not all(type(v) is int for v in stamp)):
                return {}
            out[name] = Entry(name, (stamp[0], stamp[1], stamp[2], stamp[3]), row)
        return out
    except (ValueError, KeyError, TypeError, RecursionError):
        return {}


def render(entries: Mapping[str, Entry]) -> bytes:
    """The index file of ``entries`` (the order given: the listing's)."""
    lines = [json.dumps({"schema": SCHEMA})]
    lines += [json.dumps({"dir": e.name, "stamp": list(e.stamp), "row": e.row},
                         ensure_ascii=False, separators=(",", ":"))
              for e in entries.values()]
    return ("\n".join(lines) + "\n").encode()


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
