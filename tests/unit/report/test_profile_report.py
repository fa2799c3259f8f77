"""The profile section's values: stacked-bar segments that add up to the step period, the
table, the loader of stored profile files and the PNG."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from variantctl.bench.profiledata import Event, breakdown
from variantctl.report.profile import (
    breakdown_table,
    render_stacked_png,
    stacked_bars,
    step_segments,
)

MS = 1_000_000


def v1_like() -> list[Event]:
    """Engine core (pid 1): step 10 ms with schedule 1 ms, gaps 2 ms; worker (pid 2): the
    runner 6 ms inside each step, its forward 4 ms."""
    out = []
    for i in range(4):
        t = i * 12 * MS
        out += [Event("step", t, 10 * MS, 1, 1, None, 0),
                Event("schedule", t, 1 * MS, 1, 1, "step", 1),
                Event("runner", t + 2 * MS, 6 * MS, 2, 5, None, 0),
                Event("forward", t + 3 * MS, 4 * MS, 2, 5, "runner", 1)]
    return out


def test_segments_add_up_to_the_step_period() -> None:
    b = breakdown(v1_like())
    segs = dict(step_segments(b))
    assert segs == pytest.approx({"schedule": 1.0, "forward": 4.0, "runner (rest)": 2.0,
                                  "step (unaccounted)": 3.0, "between steps": 2.0})
    assert sum(segs.values()) == pytest.approx(b["step_period_ms"])
    assert step_segments(breakdown([])) == []


def test_table_and_bars_per_variant_and_level(tmp_path: Path) -> None:
    b = {"level": "c1", **breakdown(v1_like())}
    t = breakdown_table([("base", [b])])
    rows = {r[2]: r for r in t.rows}
    assert rows["forward"] == ("base", "c1", "forward", "4", "4.000", "4.000", "66.7%")
    assert rows["runner"][-1] == "60.0% of step"
    assert rows["(between steps)"][3] == "3"
    bars = stacked_bars([("base", [b]), ("eager", [])])
    assert bars is not None and [name for name, _ in bars.bars] == ["base c1"]
    png = render_stacked_png(bars)
    assert png.startswith(b"\x89PNG")
    assert stacked_bars([("x", [])]) is None


def test_a_run_s_listed_profiles_are_read_and_broken_files_skipped(tmp_path: Path) -> None:
    from tests.unit.report.builders import WHEN, record, store_run
    from variantctl.report.load import load_run
    from variantctl.runs.store import RunStore

    store = RunStore(tmp_path / "runs")
    run_dir = store_run(store, record("dddddddddd-1", "cpu-base"))
    doc = {"levels": [{"label": "c1", "events": [], "breakdown": breakdown(v1_like())},
                      {"label": "c4", "events": [], "breakdown": breakdown([])}]}
    store.attach_profile(run_dir, doc, WHEN)
    broken = store.attach_profile(run_dir, {"levels": [1]}, WHEN)
    assert broken.name == "profile-20260714T101500Z-2.json"  # the bench files' stamp rule
    levels = load_run(store, "dddddddddd-1").profiles
    assert [lv["level"] for lv in levels] == ["c1", "c4"]
    assert levels[0]["step"] == "step"


def test_report_shows_the_breakdown_and_stacked_bars_of_profiled_runs(
        run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    from tests.unit.report.builders import WHEN, level, record, result, store_run
    from variantctl.runs.store import RunStore

    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    store = RunStore(project / "runs")
    run_dir = store_run(store, record("dddddddddd-1", "cpu-base"), [result([
        level(1, agg=40.0, ttft_p90_ms=50.0, tps_p10=30.0, tps_p50=35.0)])])
    doc = {"levels": [{"label": "c1", "events": [], "breakdown": breakdown(v1_like())}]}
    store.attach_profile(run_dir, doc, WHEN)
    out = tmp_path / "rep"
    res = run_cli(["report", "dddddddddd-1", "--out", str(out)], project=project)
    assert res.code == 0, res.output
    md = (out / "report.md").read_text()
    assert "## Code-level profile" in md
    assert "| cpu-base | c1 | forward | 4 |" in md
    assert "![Where a step's time goes (ms per step)](profile_steps.png)" in md
    assert (out / "profile_steps.png").read_bytes().startswith(b"\x89PNG")
