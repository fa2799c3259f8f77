"""A slow start is not a hang (issue 20.1): the pure judge of a quiet log, the CPU time of
a process tree read from /proc, and a hang verdict told for the host it happened on."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from variantctl.config.catalog import default_catalog
from variantctl.launch.classify import ClassifierAdapter, Decision, on_host
from variantctl.launch.watch import (
    BUSY_SHARE,
    BUSY_STALLS,
    SILENT_PHASE_STALLS,
    BusyJudge,
)
from variantctl.runs.run import RunVerdict
from variantctl.targets.activity import (
    HostConditions,
    TreeSample,
    cpu_used,
    group_cpu_times,
    host_conditions,
    parse_cores,
    parse_group_cpu,
)
from variantctl.targets.local import LocalTarget
from variantctl.targets.slurm import parse_slurm_duration

CATALOG = default_catalog()


def _stat(pid: int, comm: str, state: str, pgrp: int, sid: int, times: tuple[int, ...]) -> str:
    # fields 3.. of /proc/<pid>/stat: state ppid pgrp session tty tpgid flags minflt
    # cminflt majflt cmajflt utime stime cutime cstime …
    u, s, cu, cs = times
    return (f"{pid} ({comm}) {state} 1 {pgrp} {sid} 0 -1 4194304 100 0 0 0 {u} {s} {cu} {cs} "
            "20 0 1 0 100 1000 10")


def test_group_cpu_sums_user_system_and_waited_children_of_live_members() -> None:
    text = "\n".join([
        _stat(100, "python3", "S", 100, 100, (50, 10, 0, 0)),
        # comm with a space and a parenthesis; its compiler children were waited for
        _stat(101, "VLLM::Engine (core)", "R", 100, 100, (300, 40, 200, 10)),
        _stat(102, "zombie", "Z", 100, 100, (999, 999, 0, 0)),  # gone: not counted
        _stat(200, "other", "R", 200, 200, (1000, 0, 0, 0)),  # another group
        _stat(103, "setsid-child", "S", 103, 100, (5, 5, 0, 0)),  # same session
        "garbage line",
    ])
    sample = parse_group_cpu(text, 100)
    assert sample is not None
    assert sample.cpu == pytest.approx({"100": 0.6, "101": 5.5, "103": 0.1})
    assert sample.active == ("101",)  # running; the others sleep
    assert parse_group_cpu(text, 300) is None


def test_cpu_used_counts_each_process_so_one_that_ends_hides_no_work() -> None:
    """A server's tree changes while it starts: a helper that exits takes its time with
    it, which a sum over the tree would subtract from the others' work."""
    before = {"100": 1.0, "101": 5.0, "102": 30.0}
    after = {"100": 1.0, "101": 7.5, "103": 0.5}  # 102 ended; 103 is new
    assert cpu_used(before, after) == pytest.approx(3.0)
    assert sum(after.values()) < sum(before.values())  # what a tree sum would have seen
    assert cpu_used(after, after) == 0.0


def test_a_busy_process_tree_gains_cpu_time_and_a_sleeping_one_does_not() -> None:
    """Real processes read through the real LocalTarget: the measure a hang is told by."""
    local = LocalTarget()
    busy = subprocess.Popen([sys.executable, "-c",
                             "import time\nend = time.time() + 30\n"
                             "while time.time() < end: pass"], start_new_session=True)
    idle = subprocess.Popen([sys.executable, "-c",
                             "import time; print('asleep', flush=True); time.sleep(30)"],
                            start_new_session=True, stdout=subprocess.PIPE)
    try:
        # both past their interpreter start (on a loaded machine that takes seconds, and a
        # starting interpreter is running, not sleeping)
        assert idle.stdout is not None and idle.stdout.readline() == b"asleep\n"
        time.sleep(0.5)
        a_busy, a_idle = group_cpu_times(local, busy.pid), group_cpu_times(local, idle.pid)
        deadline = time.monotonic() + 20
        b_busy = a_busy
        while b_busy == a_busy and time.monotonic() < deadline:
            time.sleep(0.5)
            b_busy = group_cpu_times(local, busy.pid)
        b_idle = group_cpu_times(local, idle.pid)
    finally:
        busy.kill()
        idle.kill()
        busy.wait()
        idle.wait()
    assert a_busy is not None and b_busy is not None and cpu_used(a_busy.cpu, b_busy.cpu) > 0
    assert set(a_busy.cpu) == {str(busy.pid)}
    assert a_idle is not None and b_idle is not None and cpu_used(a_idle.cpu, b_idle.cpu) == 0
    assert a_idle.active == b_idle.active == ()  # a sleeping process is not running
    assert group_cpu_times(local, busy.pid) is None  # gone


def test_busy_judge_counts_work_within_its_budget() -> None:
    judge = BusyJudge(stall=10.0)
    assert judge.poll == 2.5
    assert judge.share(100.0, TreeSample({"1": 5.0})) is None  # the baseline
    share = judge.share(102.0, TreeSample({"1": 6.0}))
    assert share == pytest.approx(0.5)
    # the baseline stays: the window grows while the log is quiet
    assert judge.share(104.0, TreeSample({"1": 6.2})) == pytest.approx(0.3)
    assert judge.last == (100.0, {"1": 5.0})
    # working: progress while the silence is within the budget of its phase
    assert judge.excuses(share, 15.0, "model-load")
    assert not judge.excuses(share, BUSY_STALLS * 10.0, "model-load")
    assert judge.excuses(share, BUSY_STALLS * 10.0, "engine-config")
    assert not judge.excuses(share, SILENT_PHASE_STALLS * 10.0, "engine-config")
    # a waiting process (no CPU), or one that cannot be measured, is no progress
    assert not judge.excuses(0.0, 6.0, "engine-config")
    assert not judge.excuses(BUSY_SHARE / 2, 6.0, "engine-config")
    assert not judge.excuses(None, 6.0, "engine-config")
    # a process running (or waiting for the disk) right now works, whatever CPU it got
    assert judge.excuses(0.0, 6.0, "engine-config", active=1)
    assert not judge.excuses(0.0, SILENT_PHASE_STALLS * 10.0, "engine-config", active=1)
    # running at two looks in a row counts; at one look (a late wake-up) does not
    judge.share(105.0, TreeSample({"1": 6.2}, active=("1",)))
    assert judge.steady == 0
    judge.share(106.0, TreeSample({"1": 6.2}, active=("1",)))
    assert judge.steady == 1
    assert judge.share(104.0, None) is None and judge.last is None


def _told(decision: Decision) -> RunVerdict:
    """The decision as the launch carries it to run.json and the printed verdict."""
    return RunVerdict.of(decision.verdict, decision.result, waiting=decision.waiting)


def _hang(config_line: str) -> Decision:
    now = [0.0]
    adapter = ClassifierAdapter.create(stall_seconds=5, clock=lambda: now[0], catalog=CATALOG)
    adapter.feed("INFO 12-01 21:00:00 [api_server.py:1] vLLM API server version 0.32.0")
    adapter.feed(config_line)
    now[0] = 10.0
    decision = adapter.tick()
    assert decision is not None and decision.verdict == "hang"
    return decision


CONFIG = ("INFO 12-01 21:00:01 [core.py:1] Initializing a V1 LLM engine (v0.32.0) with "
          "config: model='m', enforce_eager=True, device_config={device}, seed=0")


def test_a_hang_on_a_host_without_gpus_gets_no_gpu_advice() -> None:
    cpu = _hang(CONFIG.format(device="cpu"))
    assert (_told(cpu).signature, _told(cpu).phase) == ("engine-start-hang", "engine-config")
    assert "NCCL" in _told(cpu).remediation  # the catalog's text, before the host is known
    told = _told(on_host(cpu, HostConditions(load=0.5, cores=2, gpus=None), CATALOG))
    assert "NCCL" not in told.remediation and "py-spy dump" in told.remediation
    # the log says cuda: GPU advice, whatever /dev looked like from here
    gpu = _told(on_host(_hang(CONFIG.format(device="cuda")), HostConditions(gpus=False),
                        CATALOG))
    assert "NCCL" in gpu.remediation
    # no device in the log: the host's devices decide
    bare = _hang("INFO 12-01 21:00:01 [core.py:1] Initializing a V1 LLM engine (v0.32.0) "
                 "with config: model='m', seed=0")
    assert "NCCL" not in _told(on_host(bare, HostConditions(gpus=False), CATALOG)).remediation
    assert "NCCL" in _told(on_host(bare, HostConditions(gpus=True), CATALOG)).remediation
    assert "NCCL" in _told(on_host(bare, HostConditions(), CATALOG)).remediation


def test_a_hang_on_a_loaded_host_says_so() -> None:
    decision = _hang(CONFIG.format(device="cpu"))
    told = _told(on_host(decision, HostConditions(load=9.0, cores=2, gpus=False), CATALOG))
    assert "load average 9.0 on 2 cores" in told.message
    assert told.message.startswith(_told(decision).message.rstrip())
    quiet = _told(on_host(decision, HostConditions(load=1.2, cores=2, gpus=False), CATALOG))
    assert "load average" not in quiet.message
    # a failure is not retold
    failed = Decision(verdict="failed", decisive=True, result=decision.result)
    assert on_host(failed, HostConditions(load=9.0, cores=2, gpus=False), CATALOG) is failed


def test_host_conditions_of_this_machine() -> None:
    found = host_conditions(LocalTarget())
    assert found.load is not None and found.load >= 0
    assert found.cores == parse_cores(open("/proc/stat").read())  # noqa: SIM115
    assert found.cores is not None and 1 <= found.cores <= (os.cpu_count() or 1)
    assert found.gpus is (any(n.startswith(("nvidia", "kfd", "davinci", "iluvatar", "accel"))
                              for n in os.listdir("/dev")))
    assert HostConditions(load=9.0, cores=2).describe_load() == "load average 9.0 on 2 cores"
    assert HostConditions(load=2.0, cores=2).loaded and not HostConditions(load=1.9,
                                                                           cores=2).loaded


@pytest.mark.parametrize(("text", "seconds"), [
    ("00:01.500", 1.5), ("01:02:03", 3723.0), ("2-00:00:01", 172801.0), ("12:00", 720.0),
    ("", None), ("abc", None), ("1:2:3:4", None),
])
def test_slurm_durations(text: str, seconds: float | None) -> None:
    assert parse_slurm_duration(text) == seconds
