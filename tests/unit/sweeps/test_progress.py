"""Live progress lines: point i/N per host, the phase, an ETA that learns from the
points already done."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import make_env
from tests.unit.sweeps.test_executor import plan_on
from variantctl.render.sweep import duration, result_blocks
from variantctl.runs.sweepstate import SWEEP_SCHEMA, SweepDoc
from variantctl.terminal.sweepprogress import ProgressPrinter


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_progress_lines_count_points_per_host_and_rescale_the_eta(tmp_path: Path) -> None:
    plan, _ = plan_on(["h1", "h2"], 4, tmp_path)
    env = make_env(None, tmp_path)
    clock = Clock()
    ui = ProgressPrinter(env, plan, clock)
    p1, p2, p3 = plan.points[0], plan.points[1], plan.points[2]
    ui.phase(p1, "launch")
    ui.phase(p2, "bench", "random c=2")
    clock.t = 30.0  # the first point took half its 60 s estimate
    ui.phase(p1, "measured")
    ui.phase(p3, "launch")
    lines = env.stderr.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines == [
        "[h1 1/2] cpu-eager@t-01 launch  ETA 2m00s",
        "[h2 1/2] cpu-eager@t-02 bench random c=2  ETA 2m00s",
        "[h1 1/2] cpu-eager@t-01 measured  ETA 30s",
        "[h1 2/2] cpu-eager@t-03 launch  ETA 30s",
    ]


def test_durations_and_the_result_table() -> None:
    assert [duration(s) for s in (None, 5, 59.6, 61, 3725)] == ["?", "5s", "1m00s", "1m01s",
                                                                "1h02m"]
    doc = {"sweep": "t", "status": "done", "points": [
        {"index": 1, "name": "a@t-01", "host": "h", "status": "measured", "run_id": "k-1",
         "signature": "startup-ok", "timings": {"time_to_ready_s": 20.0, "bench_s": 3.0}},
        {"index": 2, "name": "a@t-02", "host": "h", "status": "skipped", "run_id": None,
         "skip": {"reason": "predicted", "rule": "r", "signature": "sig"}, "timings": {}},
        {"index": 3, "name": "a@t-03", "host": "h", "status": "failed", "run_id": "k-3",
         "signature": "oom", "message": "out of memory", "timings": {}},
    ]}
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    for b in result_blocks(SweepDoc.from_json({"schema": SWEEP_SCHEMA, **doc}, source="t"),
                           "/x/t.json"):
        console.print(b.body)
    out = console.export_text()
    assert "startup-ok" not in out  # a measured point's note is empty
    assert "predicted: sig r" in out and "oom: out of memory" in out
    assert "sweep t done: 1 failed, 1 measured, 1 skipped" in out
