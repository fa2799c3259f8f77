"""The suite's start counter (tests/support/suiteclock.py) sees real processes.

Stand-in servers here are ``python -c 'sleep' -m vllm.entrypoints.openai.api_server``:
a process whose command line is a vLLM API server's, which is all the counter reads.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.suiteclock import StartCounter, is_vllm_server

SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)"]


def test_server_command_lines() -> None:
    assert is_vllm_server(["/v/bin/python", "-m", "vllm.entrypoints.openai.api_server",
                           "--model", "/m"])
    assert is_vllm_server(["/v/bin/python", "/v/bin/vllm", "serve", "/m"])
    assert is_vllm_server(["vllm", "serve", "/m"])
    assert not is_vllm_server(["/v/bin/python", "-m", "vllm.entrypoints.openai.api_server",
                               "--help"])
    assert not is_vllm_server(["python", "fake_gpu_server.py", "--scenario", "ok"])
    assert not is_vllm_server(["/v/bin/vllm", "bench", "serve"])


def _wait_until_running(pid: int, arg: str) -> None:
    """Until the process's argv holds ``arg`` (a shell has exec'd its command)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if arg.encode() in fh.read().split(b"\0"):
                return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} never ran {arg!r}")


def _spawn(argv: list[str], out: Path) -> subprocess.Popen[bytes]:
    with out.open("wb") as fh:
        return subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)


def test_counts_servers_under_its_root_by_label_and_once() -> None:
    # outside the run's temporary root, so the run's own counter does not count them
    with tempfile.TemporaryDirectory() as tmp:
        _count_in(Path(tmp))


def _count_in(tmp_path: Path) -> None:
    ours, other = tmp_path / "ours", tmp_path / "other"
    ours.mkdir()
    other.mkdir()
    counter = StartCounter((str(ours),))
    counter.start()
    procs = []
    try:
        counter.label = ("vllm", "tests/vllm/test_a.py")
        procs.append(_spawn([*SLEEPER, "-m", "vllm.entrypoints.openai.api_server"],
                            ours / "a.log"))
        # a shell that becomes a server by exec: counted once it has exec'd
        procs.append(_spawn(["sh", "-c", f"sleep 0.3; exec {SLEEPER[0]} -c "
                             "'import time; time.sleep(30)' -m "
                             "vllm.entrypoints.openai.api_server"], ours / "b.log"))
        # not a server, and a server of other work on the machine: not counted
        procs.append(_spawn(SLEEPER, ours / "c.log"))
        procs.append(_spawn([*SLEEPER, "-m", "vllm.entrypoints.openai.api_server"],
                            other / "d.log"))
        for p in procs:  # every one has started (the shell has exec'd), however busy
            _wait_until_running(p.pid, SLEEPER[2])
        counter.scan()
        counter.label = ("slurm", "tests/slurm/test_b.py")
        counter.scan()  # the same processes again: not new starts
        procs.append(_spawn([*SLEEPER, "/v/bin/vllm", "serve"], ours / "e.log"))
        _wait_until_running(procs[-1].pid, "serve")
    finally:
        counter.stop()
        for p in procs:
            p.kill()
            p.wait()
    assert dict(counter.by_tier) == {"vllm": 2, "slurm": 1}
    assert dict(counter.by_module) == {("vllm", "tests/vllm/test_a.py"): 2,
                                       ("slurm", "tests/slurm/test_b.py"): 1}


def test_start_budgets_have_floors_and_grow_with_a_slow_machine() -> None:
    from tests.support.realvllm import StartBudget

    quiet = StartBudget.scaled(8.0)
    assert (quiet.ready_timeout, quiet.stall, quiet.wait) == (400, 240, 420)
    busy = StartBudget.scaled(25.0)  # the import three times slower: everything is
    assert (busy.ready_timeout, busy.stall, busy.wait) == (1000, 600, 1050)
    assert busy.startup_yaml() == "startup:\n  ready_timeout: 1000\n  stall: 600\n"
