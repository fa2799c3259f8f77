"""The typed run store: ids from content keys, validated records, one lookup per key."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from variantctl.errors import NotFoundError
from variantctl.runs.identity import content_key as run_key
from variantctl.runs.run import RunFileError, RunRecord, RunVerdict
from variantctl.runs.store import RunStore

WHEN = datetime(2026, 7, 14, 10, 15, tzinfo=timezone.utc)


def record(run_id: str, key: str, verdict: str = "ready") -> RunRecord:
    return RunRecord(
        run_id=run_id, key=key, variant_name="sched4 nochunk", created_at=WHEN.isoformat(),
        variant={"name": "sched4 nochunk", "args": {"max-num-seqs": 4}}, host={"name": "local"},
        script="#!/bin/sh\n", server={"pid": 1}, patches={},
        verdict=RunVerdict(kind=verdict, signature="xformers-multistep-unsupported"),
        facts={"config": {"enforce_eager": True}}, expect=(), expect_ok=True,
        timings={"time_to_ready_s": 1.5},
    )


def test_key_is_a_content_hash_of_what_decides_the_run() -> None:
    a = run_key({"args": {"x": 1}}, {"name": "h"}, {}, None)
    assert a == run_key({"args": {"x": 1}}, {"name": "h"}, {}, None)
    assert len(a) == 10
    assert a != run_key({"args": {"x": 2}}, {"name": "h"}, {}, None)
    assert a != run_key({"args": {"x": 1}}, {"name": "h2"}, {}, None)
    assert a != run_key({"args": {"x": 1}}, {"name": "h"},
                        {"p": {"roots": {"/r": "applied"}}}, None)
    assert a != run_key({"args": {"x": 1}}, {"name": "h"}, {}, {"concurrency": [1]})


def test_runs_of_one_key_are_numbered_and_found_by_one_lookup(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    a = store.create(key="0123456789", variant="sched4 nochunk", when=WHEN)
    b = store.create(key="0123456789", variant="sched4 nochunk", when=WHEN)
    c = store.create(key="abcdefabcd", variant="other", when=WHEN)
    assert (a.run_id, b.run_id, c.run_id) == ("0123456789-1", "0123456789-2", "abcdefabcd-1")
    assert a.path.name.startswith("2026-07-14-") and a.path.name.endswith("-0123456789-1")
    assert [d.run_id for d in store.of_key("0123456789")] == ["0123456789-1", "0123456789-2"]
    assert store.find("abcdefabcd-1").path == c.path
    assert store.find("abcdef").path == c.path  # a unique prefix
    with pytest.raises(NotFoundError):
        store.find("0123456789")  # two runs share that prefix
    with pytest.raises(NotFoundError):
        store.find("ffffffffff-1")


def test_record_round_trips_and_benchmarks_join_it(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    d = store.create(key="0123456789", variant="v", when=WHEN)
    rec = record(d.run_id, d.key)
    store.write(d.path, rec)
    assert store.read(d.path) == RunRecord.from_json(json.loads(
        (d.path / "run.json").read_text()), source="x")
    assert store.read(d.path).verdict.signature == "xformers-multistep-unsupported"
    from tests.unit.report.builders import level, result

    bench = result([level(1, agg=40.0, ttft_p90_ms=50.0, tps_p10=30.0, tps_p50=35.0)])
    path = store.attach_benchmark(d.path, bench, WHEN)
    again = store.attach_benchmark(d.path, bench, WHEN, death={"level": 1})
    assert path.name == "bench-20260714T101500Z.json" and again.name.endswith("-2.json")
    assert store.read(d.path).benchmarks == (path.name, again.name)
    from variantctl.bench.stored import read_benchmark

    first, second = (read_benchmark(store, d.path, n) for n in (path.name, again.name))
    assert first.result == bench and first.server_death is None
    assert second.server_death == {"level": 1}  # written by the store, in one place
    assert not [p for p in d.path.iterdir() if p.name.startswith(".")]  # no temp files left


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (None, "missing field 'verdict'"),
        ("schema", "schema 99"),
        ("verdict-type", "field 'verdict' should be an object"),
    ],
)
def test_a_damaged_run_json_is_an_error_naming_the_file(
    tmp_path: Path, damage: str | None, named: str
) -> None:
    store = RunStore(tmp_path / "runs")
    d = store.create(key="0123456789", variant="v", when=WHEN)
    good = record(d.run_id, d.key).to_json()
    if damage is None:
        del good["verdict"]
        text = json.dumps(good)
    elif damage == "schema":
        good["schema"] = 99
        text = json.dumps(good)
    elif damage == "verdict-type":
        good["verdict"] = "ready"
        text = json.dumps(good)
    else:
        text = damage
    (d.path / "run.json").write_text(text)
    with pytest.raises(RunFileError) as err:
        store.read(d.path)
    assert str(d.path / "run.json") in err.value.message and named in err.value.message
    # listing keeps going and reports the damaged one
    (listed,) = list(store.records())
    assert isinstance(listed[1], RunFileError)
