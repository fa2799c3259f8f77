"""Old stores keep reading: ``tests/fixtures/store-v2`` was written by the release before
the store listed its profile files (run.json schema 2, ``profile-<stamp>.json`` without
the ``Z``, a bench file with ``server_death``, a sweep state) — see its README. `runs`,
`runs show`, `profile`, `compare`, `report` and a sweep's ``--resume`` read it as they
did, and the first write to an old record brings it to the current schema."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult
from tests.unit.report.builders import WHEN, level, result
from variantctl.bench.stored import read_benchmark
from variantctl.runs.run import RUN_SCHEMA
from variantctl.runs.store import RunStore
from variantctl.sweeps.state import read_state

Cli = Callable[..., CliResult]
FIXTURE = REPO / "tests" / "fixtures" / "store-v2"
LEGACY_PROFILE = "profile-20260714T101500.json"
BENCHES = ["bench-20260714T101500Z.json", "bench-20260714T101500Z-2.json"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    shutil.copytree(FIXTURE, p, ignore=shutil.ignore_patterns("README.md"))
    (p / "variants").mkdir()
    return p


def test_runs_and_runs_show_read_an_old_store(run_cli: Cli, project: Path) -> None:
    res = run_cli(["runs", "--json"], project=project)
    assert res.code == 0, res.output
    rows = [(r["run_id"], r["verdict"], r["benchmarks"]) for r in json.loads(res.stdout)["runs"]]
    assert rows == [("aaaaaaaaaa-1", "ready", BENCHES), ("bbbbbbbbbb-1", "failed", [])]
    res = run_cli(["runs", "show", "aaaaaaaaaa-1", "--json"], project=project)
    assert res.code == 0, res.output
    run = json.loads(res.stdout)["run"]
    assert run["schema"] == 2 and run["benchmarks"] == BENCHES
    assert run["profiles"] == [LEGACY_PROFILE]  # listed for it by the store


def test_profile_compare_and_report_read_an_old_store(run_cli: Cli, project: Path) -> None:
    res = run_cli(["profile", "aaaaaaaaaa-1", "--json"], project=project)
    assert res.code == 0, res.output
    (lv,) = json.loads(res.stdout)["levels"]
    assert (lv["file"], lv["level"], lv["step"], lv["events"]) == (LEGACY_PROFILE, "c1",
                                                                   "step", 16)
    res = run_cli(["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1", "--json"], project=project)
    assert res.code == 0, res.output
    assert json.loads(res.stdout)["compare"]["a"]["benchmarks"] == BENCHES
    res = run_cli(["report", "t", "--out", str(project / "r")], project=project)
    assert res.code == 0, res.output
    md = (project / "r" / "report.md").read_text()
    assert "2 run(s), 2 benchmark(s), 1 failed start(s), 1 skipped point(s)." in md
    assert ("cpu-eager@t-01: a stop rule ended the ladder at c=2 (random): "
            "success 50 % &lt; 100 %") in md  # report.md escapes HTML
    assert "## Code-level profile" in md and "| cpu-eager@t-03 | pending |" in md
    assert "not used" not in md  # every old file read


def test_an_old_sweep_state_reads_as_the_typed_state(project: Path) -> None:
    doc = read_state(RunStore(project / "runs"), project / "runs" / "sweeps" / "t.json")
    assert doc is not None and doc.sweep == "t" and doc.status == "interrupted"
    assert [(p.name, p.status, p.run_id) for p in doc.points] == [
        ("cpu-eager@t-01", "measured", "aaaaaaaaaa-1"),
        ("cpu-eager@t-02", "failed", "bbbbbbbbbb-1"), ("cpu-eager@t-03", "pending", None)]
    first = doc.points[0]
    assert first.benchmarks == tuple(sorted(BENCHES)) and first.profiles == (LEGACY_PROFILE,)
    assert first.timings["bench_s"] == 20.0 and first.stopped_early is not None
    assert first.to_json()["point_key"] == "08188afa2c"  # carried over as stored


def test_an_old_record_is_brought_to_the_current_schema_by_the_next_write(
        project: Path) -> None:
    store = RunStore(project / "runs")
    d = store.find("aaaaaaaaaa-1")
    died = read_benchmark(store, d.path, BENCHES[1])
    assert died.server_death == {"level": 1, "signature": None,
                                 "message": "the server exited"}
    added = store.attach_benchmark(d.path, result([level(4, agg=1.0, ttft_p90_ms=1.0,
                                                         tps_p10=1.0, tps_p50=1.0)]), WHEN)
    doc = json.loads((d.path / "run.json").read_text())
    assert doc["schema"] == RUN_SCHEMA
    assert doc["benchmarks"] == [*BENCHES, added.name] and added.name.endswith("-3.json")
    assert doc["profiles"] == [LEGACY_PROFILE]
    assert store.read(d.path).profiles == (LEGACY_PROFILE,)
