"""One writer per run (issue 27 item 4, issue 32 item 2): benchmarks attached to one run
at once — from threads and from processes, in the same second — each end up stored
exactly once and listed once; a verdict written meanwhile keeps them; a failed write
leaves nothing half-written."""

from __future__ import annotations

import errno
import json
import multiprocessing
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from variantctl.errors import NotFoundError, TargetError
from variantctl.runs.run import RunRecord, RunVerdict
from variantctl.runs.store import RunStore
from variantctl.targets.base import error_from_oserror
from variantctl.targets.local import LocalTarget

WHEN = datetime(2026, 7, 14, 10, 15, tzinfo=timezone.utc)


class Doc:
    """A measured result as the store sees one (anything with ``to_json``)."""

    def __init__(self, n: int):
        self.n = n

    def to_json(self) -> dict[str, object]:
        return {"schema": "variantctl.bench/1", "writer": self.n}


def new_run(tmp_path: Path) -> tuple[RunStore, Path]:
    store = RunStore(tmp_path / "runs")
    d = store.create(key="0123456789", variant="v", when=WHEN)
    store.write(d.path, RunRecord(
        run_id=d.run_id, key=d.key, variant_name="v", created_at=WHEN.isoformat(),
        variant={"name": "v"}, host={"name": "local"}, script="", server=None, patches={},
        verdict=RunVerdict(kind="ready"), facts={}))
    return store, d.path


def attach(root: str, run_dir: str, n: int) -> None:
    """One writer: its own store, as a separate `bench` command has."""
    RunStore(Path(root)).attach_benchmark(Path(run_dir), Doc(n), WHEN)


def check_each_stored_once(store: RunStore, run_dir: Path, writers: int) -> None:
    listed = store.read(run_dir).benchmarks
    assert len(listed) == len(set(listed)) == writers  # every one listed, none twice
    on_disk = sorted(p.name for p in run_dir.glob("bench-*.json"))
    assert sorted(listed) == on_disk  # nothing stored that is not listed
    writers_seen = sorted(json.loads((run_dir / n).read_text())["writer"] for n in listed)
    assert writers_seen == list(range(writers))  # none overwritten by another


@pytest.mark.parametrize("writers", [8, 16])
def test_concurrent_threads_each_store_once(tmp_path: Path, writers: int) -> None:
    store, run_dir = new_run(tmp_path)
    start = threading.Barrier(writers)

    def one(n: int) -> None:
        start.wait()
        attach(str(store.root), str(run_dir), n)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check_each_stored_once(store, run_dir, writers)


@pytest.mark.parametrize("writers", [8, 16])
def test_concurrent_processes_each_store_once(tmp_path: Path, writers: int) -> None:
    store, run_dir = new_run(tmp_path)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=attach, args=(str(store.root), str(run_dir), n))
             for n in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * writers
    check_each_stored_once(store, run_dir, writers)


def test_a_verdict_written_meanwhile_keeps_the_benchmarks(tmp_path: Path) -> None:
    store, run_dir = new_run(tmp_path)
    stale = store.read(run_dir)  # what a watching launch read before the bench
    first = store.attach_benchmark(run_dir, Doc(0), WHEN)
    store.open_run(run_dir).record_verdict(stale)
    assert store.read(run_dir).benchmarks == (first.name,)


def test_a_full_disk_leaves_no_unlisted_file(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store, run_dir = new_run(tmp_path)
    before = sorted(p.name for p in run_dir.iterdir())

    def full(self: LocalTarget, path: str, data: bytes) -> None:
        raise error_from_oserror(OSError(errno.ENOSPC, "No space left on device"),
                                 host="local", path=path)

    monkeypatch.setattr(LocalTarget, "write_atomic", full)  # run.json cannot be replaced
    with pytest.raises(TargetError) as err:
        store.attach_benchmark(run_dir, Doc(0), WHEN)
    assert err.value.kind == "no-space"
    after = sorted(p.name for p in run_dir.iterdir())
    assert after == sorted({*before, "run.lock"})
    assert store.read(run_dir).benchmarks == ()


def test_open_run_takes_an_id_or_a_directory_of_this_store(tmp_path: Path) -> None:
    store, run_dir = new_run(tmp_path)
    assert store.open_run("0123456789-1").path == run_dir
    assert store.open_run(run_dir).run_id == "0123456789-1"
    elsewhere = tmp_path / "other" / run_dir.name
    elsewhere.mkdir(parents=True)
    with pytest.raises(NotFoundError):
        store.open_run(elsewhere)
