"""Stored files are untrusted (issue 19, items 5 and 6): every run.json, bench file,
profile file and sweep state is validated on read — a damaged one is one `error:` line
naming the file and the field, exit 2, for a command that reads that entry; `runs`
names a damaged entry and goes on — a name in a record never leaves the run
directory, and a FIFO, a device, a link or a huge file is refused, never read whole
and never waited on."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import WHEN, level, record, result, store_run
from variantctl.jsonfields import StoredFileError
from variantctl.runs.store import MAX_RUN_JSON, RunStore
from variantctl.sweeps.state import read_state

Cli = Callable[..., CliResult]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")
    for run_id, name in (("aaaaaaaaaa-1", "base"), ("bbbbbbbbbb-1", "other")):
        store_run(store, record(run_id, name), [result([
            level(1, agg=40.0, ttft_p90_ms=50.0, tps_p10=30.0, tps_p50=35.0)])])
    return p


def run_dir(project: Path, run_id: str = "aaaaaaaaaa-1") -> Path:
    return RunStore(project / "runs").find(run_id).path


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def bench_file(project: Path) -> Path:
    (path,) = run_dir(project).glob("bench-*.json")
    return path


def one_error_line(res: CliResult, *parts: str) -> None:
    assert res.code == 2, res.output
    assert "Traceback" not in res.output and "internal error" not in res.output
    assert res.stderr.startswith("error: ")
    first = " ".join(res.stderr.split("\nhint: ")[0].split())  # the message, unwrapped
    for part in parts:
        assert part in first, (part, first)


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()``'s value; fails (instead of hanging the suite) when it takes longer."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert out, f"still running after {seconds} s (a read that waits on a FIFO?)"
    return out[0]


def _row(table: str, run_id: str) -> str:
    """The table row of ``run_id`` with the lines its cells fold into (a long path in
    the note column folds), joined."""
    lines = table.splitlines()
    (i,) = [n for n, line in enumerate(lines) if line.startswith(run_id)]
    row = [lines[i]]
    for line in lines[i + 1:]:
        if not line.startswith(" "):
            break
        row.append(line)
    return " ".join(" ".join(row).split())


def test_a_run_json_with_a_null_verdict(run_cli: Cli, project: Path) -> None:
    path = run_dir(project) / "run.json"
    edit(path, lambda d: d.update(verdict=None))
    for args in (["runs", "show", "aaaaaaaaaa-1"], ["report", "aaaaaaaaaa-1"],
                 ["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1"]):
        one_error_line(run_cli(args, project=project), str(path),
                       "field 'verdict' should be an object, got null")
    # listing: the damaged entry is named, the others are listed, exit 0
    res = run_cli(["runs"], project=project)
    assert res.code == 0 and "Traceback" not in res.output, res.output
    bad = _row(res.stdout, "aaaaaaaaaa-1")
    assert "unreadable" in bad and "field 'verdict'" in bad
    assert any(line.startswith("bbbbbbbbbb-1") and "ready" in line
               for line in res.stdout.splitlines())
    res = run_cli(["runs", "--json"], project=project)
    assert res.code == 0, res.output
    rows = {r["run_id"]: r for r in json.loads(res.stdout)["runs"]}
    assert rows["bbbbbbbbbb-1"]["verdict"] == "ready"
    assert rows["aaaaaaaaaa-1"]["error"]["kind"] == "usage"
    assert "field 'verdict' should be an object" in rows["aaaaaaaaaa-1"]["error"]["message"]


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d["levels"][0].update(metrics=None), "levels[0].metrics"),
    (lambda d: d["levels"][0]["metrics"]["ttft_ms"].update(p90="fast"),
     "levels[0].metrics.ttft_ms.p90"),
    (lambda d: d["levels"][0].update(requests=[None]), "levels[0].requests[0]"),
    (lambda d: d["levels"][0]["gpu"].update(available="yes"), "levels[0].gpu.available"),
    (lambda d: d.update(levels={"c": 1}), "levels"),
    (lambda d: d["params"].update(concurrency=[0]), "params"),
])
def test_a_damaged_bench_file(run_cli: Cli, project: Path, change: Any, field: str) -> None:
    path = bench_file(project)
    edit(path, change)
    res = run_cli(["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1"], project=project)
    one_error_line(res, str(path), f"field '{field}'")
    # a report names it (file and field) and goes on, as docs/report.md says
    res = run_cli(["report", "aaaaaaaaaa-1", "bbbbbbbbbb-1", "--out", str(project / "r")],
                  project=project)
    assert res.code == 0, res.output
    md = (project / "r" / "report.md").read_text()
    assert f"Benchmark of aaaaaaaaaa-1 not used: {path}: field '{field}'" in md


def test_a_damaged_profile_file(run_cli: Cli, project: Path) -> None:
    store = RunStore(project / "runs")
    bad = store.attach_profile(run_dir(project), {"levels": [1]}, WHEN)
    one_error_line(run_cli(["profile", "aaaaaaaaaa-1"], project=project), str(bad),
                   "field 'levels[0]' should be an object, got a number")
    edit(bad, lambda d: d.update(levels=[{"label": "c1", "events": [["x", 1]]}]))
    one_error_line(run_cli(["profile", "aaaaaaaaaa-1"], project=project), str(bad),
                   "field 'levels[0].events[0]'")
    edit(bad, lambda d: d.update(levels=[{"label": "c1", "breakdown": {"points": [
        {"name": "step", "calls": "many"}]}}]))
    one_error_line(run_cli(["profile", "aaaaaaaaaa-1"], project=project), str(bad),
                   "field 'levels[0].breakdown.points[0].calls' should be an integer")
    res = run_cli(["report", "aaaaaaaaaa-1", "--out", str(project / "r")], project=project)
    assert res.code == 0, res.output  # the report leaves the breakdown out


@pytest.mark.parametrize(("points", "field"), [
    ([1, "x", None], "points[0]' should be an object, got a number"),
    ([{"name": "p", "status": "measured", "run_id": 7}], "points[0].run_id"),
    ([{"name": "p", "status": "measured", "timings": {"bench_s": "slow"}}],
     "points[0].timings.bench_s"),
    ([{"name": "p", "benchmarks": ["../../etc/passwd"]}], "points[0].benchmarks[0]"),
    ("all", "points' should be a list"),
])
def test_a_damaged_sweep_state(run_cli: Cli, project: Path, points: Any, field: str) -> None:
    path = project / "runs" / "sweeps" / "s.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schema": "variantctl.sweep/1", "sweep": "s",
                                "points": points}))
    one_error_line(run_cli(["report", "s", "--out", str(project / "r")], project=project),
                   str(path), field)
    with pytest.raises(StoredFileError) as err:  # what `sweep s` / `--resume` read
        read_state(RunStore(project / "runs"), path)
    assert str(path) in err.value.message and err.value.exit_code == 2
    assert err.value.hint == "delete it to start the sweep afresh"


@pytest.mark.parametrize("name", ["/etc/passwd", "../../secret.json", "a/b.json", ".."])
def test_a_record_never_names_a_file_outside_its_run_directory(
        run_cli: Cli, project: Path, name: str) -> None:
    secret = project / "secret.json"
    secret.write_text(json.dumps(result([level(1, agg=1.0, ttft_p90_ms=1.0, tps_p10=1.0,
                                                tps_p50=1.0)]).to_json()))
    path = run_dir(project) / "run.json"
    edit(path, lambda d: d.update(benchmarks=[name]))
    for args in (["runs", "show", "aaaaaaaaaa-1"], ["report", "aaaaaaaaaa-1"],
                 ["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1"]):
        one_error_line(run_cli(args, project=project), str(path), "field 'benchmarks[0]'",
                       "is not a file name in the run directory")
    edit(path, lambda d: d.update(benchmarks=[], profiles=[name]))
    one_error_line(run_cli(["profile", "aaaaaaaaaa-1"], project=project), str(path),
                   "field 'profiles[0]'")


def test_a_listed_file_that_is_a_link_out_of_the_run_directory(run_cli: Cli,
                                                               project: Path) -> None:
    path = bench_file(project)
    outside = project / "elsewhere.json"
    outside.write_text(path.read_text())
    path.unlink()
    path.symlink_to(outside)
    res = run_cli(["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1"], project=project)
    one_error_line(res, str(path), "is a symbolic link")
    path.unlink()
    path.symlink_to("/dev/zero")  # a device behind the link: never opened
    res = within(30, lambda: run_cli(["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1"],
                                     project=project))
    one_error_line(res, str(path), "is a symbolic link")


def test_a_fifo_in_place_of_stored_files_is_refused_not_waited_on(run_cli: Cli,
                                                                  project: Path) -> None:
    bench = bench_file(project)
    bench.unlink()
    os.mkfifo(bench)
    res = within(30, lambda: run_cli(["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1"],
                                     project=project))
    one_error_line(res, str(bench), "is a FIFO, not a regular file")
    run_json = run_dir(project, "bbbbbbbbbb-1") / "run.json"
    run_json.unlink()
    os.mkfifo(run_json)
    res = within(30, lambda: run_cli(["runs", "show", "bbbbbbbbbb-1"], project=project))
    one_error_line(res, str(run_json), "is a FIFO")
    res = within(30, lambda: run_cli(["runs", "--json"], project=project))
    assert res.code == 0, res.output
    (row,) = [r for r in json.loads(res.stdout)["runs"] if r["run_id"] == "bbbbbbbbbb-1"]
    assert "is a FIFO" in row["error"]["message"]
    state = project / "runs" / "sweeps" / "s.json"
    state.parent.mkdir()
    os.mkfifo(state)
    res = within(30, lambda: run_cli(["report", "s"], project=project))
    one_error_line(res, str(state), "is a FIFO")


def test_a_device_named_as_a_state_file_is_refused(run_cli: Cli, project: Path) -> None:
    # a path the user names may be a link; what it leads to must still be a regular file
    link = project / "state.json"
    link.symlink_to("/dev/zero")
    res = within(30, lambda: run_cli(["report", str(link)], project=project))
    one_error_line(res, str(link), "is a device, not a regular file")


def test_a_huge_stored_file_is_refused_without_being_read(run_cli: Cli,
                                                          project: Path) -> None:
    path = run_dir(project) / "run.json"
    with path.open("r+b") as f:
        f.truncate(MAX_RUN_JSON + 1)  # sparse: costs no disk
    res = run_cli(["runs", "show", "aaaaaaaaaa-1"], project=project)
    one_error_line(res, str(path), f"{MAX_RUN_JSON + 1} bytes, more than")
    res = run_cli(["runs"], project=project)
    assert res.code == 0 and "more than" in res.stdout, res.output


def test_preflight_findings_are_typed_values_that_round_trip(run_cli: Cli, project: Path
                                                            ) -> None:
    """run.json's ``preflight`` reads as Finding values (issue 18.5): written back
    byte for byte the same; an entry of the wrong shape names its field (exit 2)."""
    from variantctl.runs.run import RunRecord
    from variantctl.variants.rules import Finding

    path = run_dir(project) / "run.json"
    finding = {"severity": "warning", "rule": "r", "variant": "base", "signature": None,
               "message": "m"}
    edit(path, lambda d: d.update(preflight=[finding]))
    doc = json.loads(path.read_text())
    rec = RunRecord.from_json(doc, source=str(path))
    assert rec.preflight == (Finding("warning", "r", "base", None, "m"),)
    assert rec.to_json() == doc
    edit(path, lambda d: d.update(preflight=[{**finding, "severity": 2}]))
    one_error_line(run_cli(["runs", "show", "aaaaaaaaaa-1"], project=project), str(path),
                   "field 'preflight[0].severity' should be a string")


def test_expect_mismatches_are_typed_values(run_cli: Cli, project: Path) -> None:
    """run.json's ``expect`` reads as Mismatch values (issue 18.5): the same JSON written
    back, the same ``runs show`` line; a key of the wrong type names its field."""
    from variantctl.logs.expect import Mismatch
    from variantctl.runs.run import RunRecord

    path = run_dir(project) / "run.json"
    entry = {"key": "enforce_eager", "expected": [True], "actual": False,
             "source": "expect.enforce_eager", "reason": "differs"}
    edit(path, lambda d: d.update(expect=[entry], expect_ok=False))
    doc = json.loads(path.read_text())
    rec = RunRecord.from_json(doc, source=str(path))
    assert rec.expect == (Mismatch("enforce_eager", (True,), False, "expect.enforce_eager"),)
    assert rec.to_json() == doc
    shown = run_cli(["runs", "show", "aaaaaaaaaa-1"], project=project)
    assert shown.code == 0, shown.output
    assert ("expect FAIL enforce_eager: expected (True,) (expect.enforce_eager), "
            "log says False") in " ".join(shown.stdout.split())
    edit(path, lambda d: d.update(expect=[{**entry, "key": 7}]))
    one_error_line(run_cli(["runs", "show", "aaaaaaaaaa-1"], project=project), str(path),
                   "field 'expect[0].key' should be a string")


def test_record_patches_and_timings_are_typed_and_round_trip(run_cli: Cli, project: Path
                                                             ) -> None:
    """run.json's ``patches`` (name -> state object) and ``timings`` (times, numbers,
    null) read as typed values (issue 18.5): a record that lacks a patch key is written
    back without it, byte for byte; an entry of the wrong shape names its field."""
    from variantctl.runs.identity import PatchState
    from variantctl.runs.run import RunRecord

    path = run_dir(project) / "run.json"
    patch = {"roots": {"/srv/vllm": "applied"}, "files": [{"path": "a.py"}],
             "required": False}  # an older record: no fingerprint, no error
    timings = {"started_at": "2026-07-14T10:15:00+00:00", "seconds_to_verdict": 4.5,
               "reconnects": 0, "time_to_ready_s": None}
    edit(path, lambda d: d.update(patches={"fast": patch}, timings=timings))
    doc = json.loads(path.read_text())
    rec = RunRecord.from_json(doc, source=str(path))
    assert rec.to_json() == doc
    assert dict(rec.timings) == timings
    state = PatchState.from_json("fast", rec.patches["fast"])
    assert (dict(state.roots), state.fingerprint, state.error) == (
        {"/srv/vllm": "applied"}, None, None)
    assert state.to_json() == patch  # no key an older record lacked is filled in
    shown = run_cli(["runs", "show", "aaaaaaaaaa-1"], project=project)
    assert shown.code == 0 and "patch fast: /srv/vllm: applied" in shown.stdout, shown.output
    for change, field in ((lambda d: d.update(patches={"fast": "applied"}), "patches.fast"),
                          (lambda d: d.update(patches={}, timings={"reconnects": [1]}),
                           "timings.reconnects")):
        edit(path, change)
        one_error_line(run_cli(["runs", "show", "aaaaaaaaaa-1"], project=project),
                       str(path), f"field '{field}' should be")
