"""The sweep driver with a stand-in PointRunner (the per-point executor interface):
hosts in parallel, one point per host at a time, a failing host does not stop the
others, Ctrl-C stops and leaves a resumable state; the state file; stop rules; and
leftover servers of a killed sweep found and stopped (real processes)."""

from __future__ import annotations

import _thread
import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import REPO
from variantctl.bench.model import LevelMetrics, Stats
from variantctl.config.sweeps import parse_sweep
from variantctl.config.variants import load_catalog
from variantctl.config.yamlload import load_yaml_text
from variantctl.errors import TargetError, VariantctlError
from variantctl.hostmodel import Host
from variantctl.launch.servers import layout_for, list_records, save_record
from variantctl.runs.record import ServerRecord
from variantctl.runs.store import RunStore
from variantctl.sweeps.executor import PointOutcome, run_sweep, stop_leftovers
from variantctl.sweeps.model import StopRules
from variantctl.sweeps.plan import Plan, PlannedPoint, make_plan
from variantctl.sweeps.state import SweepState, read_state
from variantctl.sweeps.stoprules import stop_reason
from variantctl.targets.base import Target
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import identify, is_alive, spawn_detached
from variantctl.variants.resolve import resolve


def now() -> datetime:
    return datetime.now(timezone.utc)


def plan_on(hosts: list[str], n: int, tmp: Path) -> tuple[Plan, dict[str, Host]]:
    values = ", ".join(str(i) for i in range(1, n + 1))
    spec = parse_sweep(load_yaml_text(
        f"base: cpu-eager\ngrid:\n  args:\n    max-num-seqs: [{values}]\n", "sweeps/t.yaml"), "t")
    catalog = load_catalog(REPO / "variants")
    known = {h: Host(name=h, workdir=str(tmp / h)) for h in hosts}
    plan = make_plan(spec, {"cpu-eager": resolve(catalog, "cpu-eager")}, known,
                     on_hosts=hosts)
    return plan, known


class UI:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def phase(self, point: PlannedPoint, phase: str, detail: str = "") -> None:
        self.lines.append(f"{point.name} {phase}")

    def note(self, text: str) -> None:
        self.lines.append(text)


@contextlib.contextmanager
def local(host: Host) -> Iterator[Target]:
    if host.name == "down":
        raise TargetError("host down: connection refused", kind="unreachable")
    yield LocalTarget(host.name)


class Runner:
    """Records which points of its host run at the same time as which."""

    def __init__(self, host: Host, barrier: threading.Barrier | None,
                 active: dict[str, int], lock: threading.Lock):
        self.host, self.barrier, self.active, self.lock = host, barrier, active, lock

    def run_point(self, point: PlannedPoint) -> PointOutcome:
        with self.lock:
            self.active[self.host.name] = self.active.get(self.host.name, 0) + 1
            assert self.active[self.host.name] == 1, "two servers on one host at once"
        try:
            if self.barrier is not None and point.point.index <= 2:
                self.barrier.wait(timeout=5)  # both hosts' first points run together
            time.sleep(0.01)
            return PointOutcome("measured", run_id=f"k-{point.point.index}",
                                timings={"total_s": 0.01})
        finally:
            with self.lock:
                self.active[self.host.name] -= 1


def test_hosts_run_in_parallel_one_point_each_at_a_time(tmp_path: Path) -> None:
    plan, hosts = plan_on(["h1", "h2"], 6, tmp_path)
    state = SweepState.begin(tmp_path / "s.json", plan, now, None, store=RunStore(tmp_path))
    barrier, active, lock = threading.Barrier(2), {}, threading.Lock()
    out = run_sweep(plan, state, hosts, lambda h, t, s, u: Runner(h, barrier, active, lock), UI(),
                    open_target=local)
    assert not out.interrupted and not out.host_errors
    doc = read_state(RunStore(tmp_path), tmp_path / "s.json")
    assert doc is not None
    assert [(p.host, p.status, p.run_id) for p in doc.points] == [
        ("h1", "measured", "k-1"), ("h2", "measured", "k-2"), ("h1", "measured", "k-3"),
        ("h2", "measured", "k-4"), ("h1", "measured", "k-5"), ("h2", "measured", "k-6")]


def test_a_failing_host_does_not_stop_the_others(tmp_path: Path) -> None:
    plan, hosts = plan_on(["down", "h2"], 4, tmp_path)
    state = SweepState.begin(tmp_path / "s.json", plan, now, None, store=RunStore(tmp_path))
    active, lock = {}, threading.Lock()
    out = run_sweep(plan, state, hosts, lambda h, t, s, u: Runner(h, None, active, lock), UI(),
                    open_target=local)
    assert list(out.host_errors) == ["down"]
    doc = state.snapshot()
    assert [p.status for p in doc.points] == ["error", "measured", "error", "measured"]
    assert "host down: connection refused" in doc.points[0].message


def test_ctrl_c_stops_the_running_point_and_leaves_the_rest_pending(tmp_path: Path) -> None:
    # interrupt_main() does nothing where SIGINT is ignored, as in a test run started by
    # a shell's background job (tests/support/interruptible.py): Ctrl-C as a terminal has it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupted_sweep(tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted_sweep(tmp_path: Path) -> None:
    plan, hosts = plan_on(["h1"], 3, tmp_path)
    state = SweepState.begin(tmp_path / "s.json", plan, now, None, store=RunStore(tmp_path))
    seen: list[str] = []

    class Interruptible:
        def __init__(self, stop: threading.Event):
            self.stop = stop

        def run_point(self, point: PlannedPoint) -> PointOutcome:
            seen.append(point.name)
            if point.point.index == 2:
                _thread.interrupt_main()  # the person presses Ctrl-C mid-point
                assert self.stop.wait(5), "the stop flag never reached the point"
                return PointOutcome("interrupted", message="interrupted during the benchmark")
            return PointOutcome("measured", run_id="k-1")

    out = run_sweep(plan, state, hosts, lambda h, t, s, u: Interruptible(s), UI(),
                    open_target=local)
    assert out.interrupted
    assert seen == [p.name for p in plan.points[:2]]  # the third never started
    assert [p.status for p in state.snapshot().points] == [
        "measured", "interrupted", "pending"]


def test_resume_keeps_finished_points_whose_runs_are_still_archived(tmp_path: Path) -> None:
    plan, _ = plan_on(["h1"], 3, tmp_path)
    store = RunStore(tmp_path / "runs")
    path = store.sweep_state_path("t")
    state = SweepState.begin(path, plan, now, None, store=store)
    kept, gone = tmp_path / "runs" / "run-a", tmp_path / "runs" / "run-b"
    kept.mkdir(parents=True)
    (kept / "run.json").write_text("{}")
    (kept / "bench-1.json").write_text("{}")
    state.update(plan.points[0].name, lambda e: replace(
        e, status="measured", run_dir=str(kept), benchmarks=("bench-1.json",)))
    state.update(plan.points[1].name, lambda e: replace(
        e, status="measured", run_dir=str(gone), benchmarks=()))
    state.update(plan.points[2].name, lambda e: replace(e, status="interrupted"))
    previous = read_state(store, path)
    resumed = SweepState.begin(path, plan, now, previous, store=store)
    got = [(p.status, p.resumed) for p in resumed.snapshot().points]
    assert got == [("measured", True), ("pending", False), ("pending", False)]


def test_a_broken_state_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("{not json")
    with pytest.raises(VariantctlError) as err:
        read_state(RunStore(tmp_path), path)
    assert str(path) in err.value.message and err.value.exit_code == 2
    path.write_text('{"schema": "other"}')
    with pytest.raises(VariantctlError, match=r"not a variantctl\.sweep/1 state file"):
        read_state(RunStore(tmp_path), path)


def _metrics(completed: int, failed: int, ttft_p90: float) -> LevelMetrics:
    return LevelMetrics(
        concurrency=4, duration_s=1.0, completed=completed, failed=failed,
        total_input_tokens=0, total_output_tokens=0, total_cached_tokens=0,
        total_reasoning_tokens=0, request_throughput=0.0, request_goodput=None,
        output_throughput=0.0, total_token_throughput=0.0,
        ttft_ms=Stats(count=completed, p90=ttft_p90), tpot_ms=Stats(), itl_ms=Stats(),
        e2el_ms=Stats(), output_tps=Stats(), max_output_tokens_per_s=0.0,
        max_concurrent_requests=0, peak_concurrency=0, steady=None)


def test_stop_rules() -> None:
    rules = StopRules(min_success_pct=100, max_ttft_p90_ms=500)
    assert stop_reason(rules, _metrics(4, 0, 499.0)) is None
    assert stop_reason(rules, _metrics(3, 1, 10.0)) == "success 75 % < 100 % at concurrency 4"
    assert stop_reason(rules, _metrics(4, 0, 900.0)) == (
        "TTFT P90 900 ms > 500 ms at concurrency 4")
    assert stop_reason(StopRules(), _metrics(0, 4, 1e9)) is None


def test_leftover_servers_of_the_sweep_are_stopped_and_others_left(tmp_path: Path) -> None:
    target = LocalTarget("h1")
    host = Host(name="h1", workdir=str(tmp_path / "work"))
    layout = layout_for(target, host)
    for d in (layout.logs, layout.run, layout.scripts):
        target.makedirs(d)
    pids = {}
    for name in ("cpu-eager@t-02", "cpu-eager@other-01", "by-hand"):
        script = Path(layout.scripts) / f"{name}.sh"
        script.write_text("#!/bin/sh\nexec sleep 60\n")
        script.chmod(0o755)
        pid = spawn_detached(target, str(script), log_path=str(Path(layout.logs) / "x.log"),
                             pid_path=layout.pid_file(name))
        pids[name] = pid
        ident = identify(target, pid)
        save_record(target, layout, ServerRecord(
            variant=name, host="h1", pid=pid, port=1, log="", script=str(script),
            pid_file=layout.pid_file(name), started_at="", boot_id=ident.boot_id,
            proc_start=ident.start))
    try:
        assert stop_leftovers(target, host, "t", grace=2) == ["cpu-eager@t-02"]
        assert not is_alive(target, pids["cpu-eager@t-02"])
        assert is_alive(target, pids["by-hand"]) and is_alive(target, pids["cpu-eager@other-01"])
        assert sorted(r.variant for r in list_records(target, layout)) == [
            "by-hand", "cpu-eager@other-01"]
    finally:
        import os
        import signal

        for pid in pids.values():
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
