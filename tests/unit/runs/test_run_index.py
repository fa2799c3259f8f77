"""The listing index (runs/index.jsonl): the same rows as reading every run.json, made
again for a run.json changed in any way, rebuilt when missing or damaged, never the
only copy of anything (issue 27 item 8)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from variantctl.jsontypes import JsonObject
from variantctl.runs.index import INDEX_NAME, summary_row
from variantctl.runs.run import RunRecord, RunVerdict
from variantctl.runs.store import RunStore

WHEN = datetime(2026, 7, 14, 10, 15, tzinfo=timezone.utc)


def store_of(tmp_path: Path, n: int) -> RunStore:
    store = RunStore(tmp_path / "runs")
    for i in range(n):
        d = store.create(key=f"{i:010x}", variant=f"v{i}", when=WHEN)
        store.write(d.path, RunRecord(
            run_id=d.run_id, key=d.key, variant_name=f"v{i}",
            created_at=f"2026-07-14T10:{i:02d}:00+00:00", variant={"name": f"v{i}"},
            host={"name": "local"}, script="", server=None, patches={},
            verdict=RunVerdict(kind="ready"), facts={"vllm_version": "0.32.0",
                                                       "config": {"enforce_eager": True}},
            timings={"time_to_ready_s": 1.5}))
    return store


def rows(store: RunStore) -> list[JsonObject]:
    return [row for _, row in RunStore(store.root).summaries()]  # a new command's store


def from_run_files(store: RunStore) -> list[JsonObject]:
    out: list[JsonObject] = []
    for d, rec in store.records():
        if isinstance(rec, RunRecord):
            row = summary_row(rec)
            out.append({"run_id": row["run_id"], "key": row["key"], "dir": str(d.path), **row})
        else:
            out.append({"run_id": d.run_id, "dir": str(d.path), "variant": d.variant,
                        "error": rec.to_json()})
    return out


def test_the_index_gives_the_rows_of_the_run_files(tmp_path: Path) -> None:
    store = store_of(tmp_path, 5)
    first = rows(store)
    assert (store.root / INDEX_NAME).is_file()
    assert first == rows(store) == from_run_files(store)
    assert first[0]["facts"] == {"vllm_version": "0.32.0", "enforce_eager": True}
    assert [r["variant"] for r in first] == [f"v{i}" for i in range(5)]


def test_a_changed_run_json_is_read_again(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    rows(store)
    d = store.dirs()[1].path
    doc = json.loads((d / "run.json").read_text())
    doc["verdict"]["verdict"] = "failed"
    with open(d / "run.json", "r+") as f:  # edited in place: same inode, same size class
        f.write(json.dumps(doc, indent=2))
        f.truncate()
    assert [r["verdict"] for r in rows(store)] == ["ready", "failed", "ready"]
    (d / "run.json").write_text("{")  # damaged: named, as the run files say
    listed = rows(store)
    assert listed == from_run_files(store) and "error" in listed[-1]


def test_missing_damaged_or_foreign_index_is_rebuilt(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    expected = from_run_files(store)
    for damage in ("", "not json\n", '{"schema": "other"}\n',
                   json.dumps({"schema": "variantctl.runs-index/1"}) + '\n{"dir": 1}\n'):
        (store.root / INDEX_NAME).write_text(damage)
        assert rows(store) == expected
    (store.root / INDEX_NAME).unlink()
    assert rows(store) == expected


def test_a_removed_run_leaves_the_listing(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    rows(store)
    gone = store.dirs()[0].path
    for p in gone.iterdir():
        p.unlink()
    gone.rmdir()
    assert [r["variant"] for r in rows(store)] == ["v1", "v2"]
    assert gone.name not in (store.root / INDEX_NAME).read_text()
