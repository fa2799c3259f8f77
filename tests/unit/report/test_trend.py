"""``runs trend``: a configuration's figure run by run, changes beyond the noise flagged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.report.build import build
from variantctl.report.load import load_run
from variantctl.report.model import ReportInput
from variantctl.report.trend import trend
from variantctl.runs.store import RunStore

Cli = Callable[..., CliResult]


def _levels(seed: int, slow: float) -> list:  # type: ignore[type-arg]
    return [measured_level(c, seed + 10 * c + r, slow=slow, repeat=r)
            for c in (1, 4) for r in range(3)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Three runs of one configuration: the second like the first, the third on a new
    vLLM with a re-applied patch and 40 % slower per token."""
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")
    patch = {"eager-allreduce": {"roots": {"/venv": "applied"}, "fingerprint": "aa11"}}
    store_run(store, record("5e5e5e5e5e-1", "cpu-eager", patches=patch), [result(_levels(0, 1.0))])
    store_run(store, record("5e5e5e5e5e-2", "cpu-eager", patches=patch),
              [result(_levels(100, 1.0))])
    store_run(store, record("5e5e5e5e5e-3", "cpu-eager", facts={"vllm_version": "0.33.0"},
                            patches={"eager-allreduce": {"roots": {"/venv": "applied"},
                                                         "fingerprint": "bb22"}}),
              [result(_levels(200, 1.4))])
    store_run(store, record("0f0f0f0f0f-1", "other"), [result(_levels(300, 1.0))])
    return p


def test_trend_flags_the_change_beyond_noise_with_what_changed(project: Path) -> None:
    store = RunStore(project / "runs")
    runs = [load_run(store, f"5e5e5e5e5e-{i}") for i in (1, 2, 3)]
    t = trend(runs)
    assert [p.run.run_id for p in t.points if p.concurrency == 4] == [
        "5e5e5e5e5e-1", "5e5e5e5e5e-2", "5e5e5e5e5e-3"]
    first, second, third = (p for p in t.points if p.concurrency == 4)
    assert first.change is None and first.figure.method == "repeats"
    assert second.change is not None and not second.beyond_noise and second.changed == ()
    assert third.beyond_noise and third.change is not None
    assert third.change.delta_pct is not None and third.change.delta_pct < -20
    changed = {(c.group, c.key) for c in third.changed}
    assert ("facts", "vllm_version") in changed
    assert ("patches", "eager-allreduce.fingerprint") in changed  # the patchset was edited
    doc = build(ReportInput("R", tuple(runs)))
    (section,) = [s for s in doc.sections if s.title == "Trend across runs"]
    assert [p.name for p in section.plots] == ["trend.png"]
    assert [ln.label for ln in section.plots[0].lines] == ["c=1", "c=4"]
    assert section.plots[0].lines[1].xs == (1.0, 2.0, 3.0)
    assert any(r[-1].startswith("beyond noise: ") and "facts vllm_version" in r[-1]
               for r in section.tables[0].rows)


def test_runs_trend_cli_by_key_and_by_variant(run_cli: Cli, project: Path) -> None:
    res = run_cli(["runs", "trend", "5e5e5e5e5e"], project=project)
    assert res.code == 0, res.output
    lines = res.stdout.splitlines()
    flagged = [line for line in lines if "CHANGED beyond noise" in line]
    assert len(flagged) == 2 and all("5e5e5e5e5e-3" in line for line in flagged)
    assert "facts vllm_version: 0.32.0 → 0.33.0" in flagged[0]
    assert sum("within noise" in line for line in lines) == 2
    res = run_cli(["runs", "trend", "cpu-eager", "--metric", "ttft_p90", "--json"],
                  project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)["trend"]
    assert doc["target"] == "cpu-eager" and doc["metric"] == "ttft_p90"
    assert doc["runs"] == ["5e5e5e5e5e-1", "5e5e5e5e5e-2", "5e5e5e5e5e-3"]
    last = doc["points"][-1]
    assert (last["level"], last["run_id"], last["n"]) == (4, "5e5e5e5e5e-3", 3)
    assert last["significant"] is True and last["delta_pct"] > 0  # TTFT grew
    lo, hi = last["ci95"]
    assert lo < last["estimate"] < hi


@pytest.mark.parametrize("args", [["runs", "trend", "nosuch"],
                                  ["runs", "trend", "cpu-eager", "--metric", "speed"]])
def test_runs_trend_bad_input_is_one_error_line(run_cli: Cli, project: Path,
                                                args: list[str]) -> None:
    res = run_cli(args, project=project)
    assert res.code == 2, res.output
    assert "Traceback" not in res.output
    assert res.stderr.lower().startswith("error") or "Usage" in res.stderr


def test_a_trend_of_single_launches_is_the_reference_computation(tmp_path: Path) -> None:
    """One repeat a run (the bootstrap over requests): each point's interval and each
    test against the run before are the ones ``point_intervals`` and ``compare_points``
    give on their own, made from lists (which nothing keeps between calls), bit for bit."""
    from dataclasses import replace

    from variantctl.bench.uncertainty import compare_points, point_intervals
    from variantctl.report.series import points_of

    store = RunStore(tmp_path / "runs")
    for i in range(1, 8):
        # runs 3 and 4 with fewer requests (other resamples), run 6 with 3 repeats at c=4
        # (a t interval, tested by Welch against its neighbours' bootstraps' fallback)
        n = 30 if i in (3, 4) else 40
        levels = [measured_level(c, 7 * i + c + 100 * r, n=n, slow=1.0 + 0.1 * (i == 4),
                                 repeat=r)
                  for c in (1, 4) for r in range(3 if (i == 6 and c == 4) else 1)]
        store_run(store, record(f"5e5e5e5e5e-{i}", "cpu-eager"), [result(levels)])
    runs = [load_run(store, f"5e5e5e5e5e-{i}") for i in range(1, 8)]
    for metric in ("output_throughput", "ttft_p90", "tpot_mean"):
        t = trend(runs, metric)
        assert len(t.points) == 14
        for c in (1, 4):
            got = [p for p in t.points if p.concurrency == c]
            fresh = [[replace(lv, requests=list(lv.requests)) for lv in p.levels]
                     for r in runs for p in points_of(r.results[0][1].levels)
                     if p.concurrency == c]
            for k, point in enumerate(got):
                assert point.figure == point_intervals(fresh[k], [metric])[metric]
                if k == 0:
                    assert point.change is None
                    continue
                (test,) = compare_points(c, fresh[k - 1], fresh[k], [metric])
                assert point.change == test
    assert any(p.beyond_noise for p in trend(runs).points)  # the slower fourth run


def test_the_collector_paused_for_a_trend_is_restored_with_its_work_aged() -> None:
    """trend_of pauses the cyclic collector; after, it is as it was, nothing is left
    frozen, and what the block made is in the oldest generation (not left young for
    the next collection to walk)."""
    import gc

    from variantctl.usecases.runs import _paused_gc

    was = gc.isenabled()
    gc.enable()
    try:
        with _paused_gc():
            assert not gc.isenabled()
            made = [[i] for i in range(20_000)]
        assert gc.isenabled() and gc.get_freeze_count() == 0
        assert id(made) in {id(o) for o in gc.get_objects(generation=2)}
        gc.disable()
        with _paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        if not was:
            gc.disable()
