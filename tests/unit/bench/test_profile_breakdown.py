"""Profile events → breakdown and Chrome trace; the per-level Collector on a real directory;
the launch-script check that decides whether a relaunch is needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from variantctl.bench.profile import Collector, server_profile_dir
from variantctl.bench.profiledata import Event, breakdown, chrome_trace, parse_lines
from variantctl.render.profile import breakdown_table
from variantctl.runs.record import ServerRecord
from variantctl.targets.local import LocalTarget

MS = 1_000_000


def ev(name: str, start_ms: float, dur_ms: float, parent: str | None = None, pid: int = 1,
       tid: int = 1) -> Event:
    return Event(name, int(start_ms * MS), int(dur_ms * MS), pid, tid, parent,
                 0 if parent is None else 1)


def steps() -> list[Event]:
    """Three 10 ms steps with 2 ms gaps; each: schedule 1 ms, forward 6 ms (attention 2 ms);
    plus a worker process whose model runner has no parent in its own stack."""
    out = []
    for i in range(3):
        t = i * 12.0
        out += [ev("step", t, 10), ev("schedule", t, 1, "step"), ev("forward", t + 1, 6, "step"),
                Event("attn", int((t + 2) * MS), 2 * MS, 1, 1, "forward", 2),
                ev("runner", t + 1, 5, pid=2)]
    return out


def test_breakdown_numbers() -> None:
    b = breakdown(steps(), dropped=3)
    assert b["step"] == "step" and b["events"] == 15 and b["dropped"] == 3
    assert b["processes"] == [1, 2]
    pts = {p["name"]: p for p in b["points"]}
    assert pts["step"]["calls"] == 3 and pts["step"]["total_s"] == pytest.approx(0.030)
    assert pts["step"]["mean_ms"] == pytest.approx(10) and pts["step"]["p99_ms"] == 10
    assert pts["forward"]["share_of_parent"] == pytest.approx(0.6)
    assert pts["attn"]["parent"] == "forward"
    assert pts["attn"]["share_of_parent"] == pytest.approx(2 / 6)
    # the other process's point: no parent, but its share of the step
    assert pts["runner"]["share_of_parent"] is None
    assert pts["runner"]["share_of_step"] == pytest.approx(0.5)
    un = {u["parent"]: u for u in b["unaccounted"]}
    assert un["step"]["total_s"] == pytest.approx(0.009)  # 3 × (10 - 1 - 6)
    assert un["step"]["share_of_parent"] == pytest.approx(0.3)
    assert un["forward"]["total_s"] == pytest.approx(0.012)
    gap = b["between_steps"]
    assert gap["gaps"] == 2 and gap["total_s"] == pytest.approx(0.004)
    assert gap["mean_ms"] == pytest.approx(2)
    assert gap["share_of_wall"] == pytest.approx(4 / 34)
    assert b["step_period_ms"] == pytest.approx(12)
    # rendered: every point, the unaccounted rows and the gap row
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(breakdown_table("v", b | {"level": "c1"}))
    text = console.export_text()
    for needle in ("profile v c1: 15 events, step period 12.00 ms, 3 dropped", "  forward",
                   "    attn", "(unaccounted)", "(between step calls)", "50.0% of step",
                   "11.8% of wall"):
        assert needle in text, text


def test_gaps_are_per_thread_and_empty_levels_have_no_step() -> None:
    evs = [ev("step", 0, 5, tid=1), ev("step", 1, 5, tid=2), ev("step", 7, 5, tid=1)]
    assert breakdown(evs)["between_steps"]["gaps"] == 1  # 0-5 then 7: one gap of 2 ms in tid 1
    empty = breakdown([])
    assert empty["step"] is None and empty["points"] == [] and empty["between_steps"] is None


def test_parse_lines_skips_headers_counts_drops_and_bad_lines() -> None:
    text = "\n".join([
        json.dumps({"variantctl_profile": 1, "pid": 7, "wall_ns": 1, "mono_ns": 2}),
        json.dumps(["f", 10, 5, 3, None, 0]),
        json.dumps({"dropped": 4}),
        "not json",
        json.dumps(["g", 11, 2, 3, "f", 1]),
        json.dumps([1, 2]),
    ])
    p = parse_lines(text, 7)
    assert [(e.name, e.pid, e.parent) for e in p.events] == [("f", 7, None), ("g", 7, "f")]
    assert p.dropped == 4 and p.bad_lines == 2


def test_chrome_trace_is_valid_json_with_complete_events() -> None:
    trace = json.loads(json.dumps(chrome_trace([("c1", steps()), ("c4", [])])))
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 15
    first = xs[0]
    assert first["name"] == "step" and first["ts"] == 0 and first["dur"] == 10_000
    assert {e["pid"] for e in xs} == {1, 2}
    (marker,) = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert marker["name"] == "c1"
    assert {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"} == {
        "vLLM pid 1", "vLLM pid 2"}


def test_collector_reads_only_each_levels_new_complete_lines(tmp_path: Path) -> None:
    d = tmp_path / "prof"
    d.mkdir()
    f = d / "prof-42.jsonl"
    f.write_text(json.dumps({"variantctl_profile": 1}) + "\n" + json.dumps(
        ["old", 1, 1, 1, None, 0]) + "\n")
    (d / "notes.txt").write_text("ignored")
    c = Collector(LocalTarget(), str(d), sleep=lambda _s: None)
    c.mark()
    with f.open("a") as fh:
        fh.write(json.dumps(["a", 2, 1, 1, None, 0]) + "\n" + '["b", 3, 1')  # b half-written
    lv = c.collect(1, 0)
    assert [e.name for e in lv.events] == ["a"] and lv.label == "c1"
    c.mark()
    with f.open("a") as fh:
        fh.write(', 1, null, 0]\n')
    (d / "prof-43.jsonl").write_text(json.dumps(["c", 4, 1, 9, None, 0]) + "\n")
    lv2 = c.collect(4, 1)
    assert sorted((e.name, e.pid) for e in lv2.events) == [("b", 42), ("c", 43)]
    assert lv2.label == "c4-r2"
    # a directory that does not exist yet (no point called): no events, no error
    empty = Collector(LocalTarget(), str(tmp_path / "none"), sleep=lambda _s: None)
    empty.mark()
    assert empty.collect(1, 0).events == []


def test_server_profile_dir_reads_the_launch_script(tmp_path: Path) -> None:
    script = tmp_path / "launch.sh"

    def record() -> ServerRecord:
        return ServerRecord(variant="v", host="local", pid=1, port=1, log="l", script=str(script),
                            pid_file="p", started_at="t")

    script.write_text("#!/bin/sh\nexport PYTHONPATH=/a\nexec vllm serve m\n")
    assert server_profile_dir(LocalTarget(), record()) is None
    script.write_text("#!/bin/sh\nexport VARIANTCTL_PROFILE='/w/profile/my v'\nexec vllm\n")
    assert server_profile_dir(LocalTarget(), record()) == "/w/profile/my v"
    script.unlink()
    assert server_profile_dir(LocalTarget(), record()) is None


def test_profile_command_shows_a_stored_run_and_exports_its_trace(tmp_path: Path,
                                                                  run_cli) -> None:  # type: ignore[no-untyped-def]
    from datetime import datetime, timezone

    from tests.unit.report.builders import record
    from variantctl.bench.profile import Collector, LevelEvents, raw_document
    from variantctl.runs.store import RunStore

    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    when = datetime(2026, 12, 1, tzinfo=timezone.utc)
    store = RunStore(project / "runs")
    d = store.create(key="0123456789", variant="tiny", when=when)
    store.write(d.path, record(d.run_id, "tiny"))
    r = run_cli(["profile", d.run_id], project=project)
    assert r.code == 2 and f"run {d.run_id} has no profile" in r.stderr, r.output

    c = Collector(LocalTarget(), "/nowhere")
    c.levels.append(LevelEvents("c1", 1, 0, steps()))
    stored = store.attach_profile(d.path, raw_document(c, "tiny", "now"), when)
    assert store.read(d.path).profiles == (stored.name,) == ("profile-20261201T000000Z.json",)
    trace = tmp_path / "out" / "trace.json"
    r = run_cli(["profile", d.run_id[:5], "--trace", str(trace), "--json"], project=project)
    assert r.code == 0, r.output
    doc = json.loads(r.stdout)
    (level,) = doc["levels"]
    assert level["level"] == "c1" and level["step"] == "step" and level["events"] == 15
    assert len([e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]) == 15
    r = run_cli(["profile", d.run_id], project=project)
    assert r.code == 0 and "profile tiny c1: 15 events, step period 12.00 ms" in r.stdout

    bad = store.attach_profile(d.path, {"levels": [1]}, when)  # same second: -2
    r = run_cli(["profile", d.run_id], project=project)
    assert r.code == 2, r.output
    assert r.stderr.startswith(f"error: {bad}: field 'levels[0]' should be an object, got a "
                               "number"), r.output
    bad.write_text("[1, 2]")
    r = run_cli(["profile", d.run_id], project=project)
    assert r.code == 2 and f"{bad}: expected a JSON object" in r.stderr, r.output
    assert "Traceback" not in r.output
