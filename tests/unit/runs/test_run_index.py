"""The listing index (runs/index.jsonl): the same rows as reading every run.json, made
again for a run.json changed in any way, rebuilt when missing or damaged, never the
only copy of anything (issue 27 item 8)."""

from __future__ import annotations

import json
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import pytest

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


def index_dirs(store: RunStore) -> list[str]:
    lines = (store.root / INDEX_NAME).read_text().splitlines()
    return [json.loads(line)["dir"] for line in lines[1:]]


def listed_dirs(store: RunStore) -> list[str]:
    return [Path(row["dir"]).name for row in from_run_files(store)]


def test_the_index_is_kept_in_the_listing_order(tmp_path: Path) -> None:
    store = store_of(tmp_path, 4)
    d = store.create(key="f" * 10, variant="early", when=WHEN)  # created before the rest
    store.write(d.path, RunRecord(
        run_id=d.run_id, key=d.key, variant_name="early",
        created_at="2026-07-14T09:00:00+00:00", variant={"name": "early"},
        host={"name": "local"}, script="", server=None, patches={},
        verdict=RunVerdict(kind="ready"), facts={}))
    assert rows(store) == from_run_files(store)
    assert rows(store)[0]["variant"] == "early"
    assert index_dirs(store) == listed_dirs(store)


def test_an_index_in_another_order_is_used_then_put_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = store_of(tmp_path, 5)
    expected = rows(store)
    lines = (store.root / INDEX_NAME).read_text().splitlines(keepends=True)
    (store.root / INDEX_NAME).write_text(lines[0] + "".join(reversed(lines[1:])))

    def no_read(self: RunStore, run_dir: Path) -> RunRecord:
        raise AssertionError(f"{run_dir}: read though its index row is current")

    monkeypatch.setattr(RunStore, "read", no_read)
    assert rows(store) == expected
    assert index_dirs(store) == [Path(str(r["dir"])).name for r in expected]


def test_a_second_row_of_a_run_is_dropped(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    expected = rows(store)
    lines = (store.root / INDEX_NAME).read_text().splitlines(keepends=True)
    doc = json.loads(lines[2])
    doc["row"]["variant"] = "not the run's"
    (store.root / INDEX_NAME).write_text("".join(lines) + json.dumps(doc) + "\n")
    assert rows(store) == expected
    assert index_dirs(store) == listed_dirs(store)


def test_damaged_runs_are_listed_last_and_never_indexed(tmp_path: Path) -> None:
    store = store_of(tmp_path, 3)
    rows(store)
    damaged = store.dirs()[0].path
    (damaged / "run.json").write_text("{")
    listed = rows(store)
    assert listed == from_run_files(store)
    assert [r["variant"] for r in listed] == ["v1", "v2", "v0"] and "error" in listed[-1]
    assert index_dirs(store) == listed_dirs(store)[:2]


def grown(tmp_path: Path, n: int) -> RunStore:
    """A store of ``n`` runs, written directly (quicker than ``n`` launches' records)."""
    store = store_of(tmp_path, 1)
    doc = json.loads((store.dirs()[0].path / "run.json").read_text())
    for i in range(1, n):
        key = f"{i:010x}"
        d = store.root / f"2026-07-14-v-{key}-1"
        d.mkdir()
        (d / "run.json").write_text(json.dumps(
            {**doc, "run_id": f"{key}-1", "key": key,
             "created_at": f"2026-07-14T{i // 60 % 24:02d}:{i % 60:02d}:00+00:00"}))
    return RunStore(store.root)


def listing_peak(store: RunStore) -> int:
    """The most memory one listing of ``store`` allocated at once, its rows taken one by
    one and let go (as ``runs --json`` writes them)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in RunStore(store.root).listed():
            pass
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_listing_memory_grows_by_far_less_than_a_row_per_run(tmp_path: Path) -> None:
    listing_peak(store_of(tmp_path / "warm-up", 2))  # the imports a first listing makes
    small, large = grown(tmp_path / "small", 100), grown(tmp_path / "large", 1000)
    cold = [listing_peak(small), listing_peak(large)]  # every row made, the index written
    warm = [listing_peak(small), listing_peak(large)]  # every row from the index
    assert rows(large) == from_run_files(large)
    # a row held costs about 3 KB (its dicts, strings and index entry); a listing holds
    # per run a directory name and an offset (~150 B), and rows made again a sort key
    assert (warm[1] - warm[0]) / 900 < 500, warm
    assert (cold[1] - cold[0]) / 900 < 1500, cold
