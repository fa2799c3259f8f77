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
        time.sleep(1.0)
        counter.scan()
        counter.label = ("slurm", "tests/slurm/test_b.py")
        counter.scan()  # the same processes again: not new starts
        procs.append(_spawn([*SLEEPER, "/v/bin/vllm", "serve"], ours / "e.log"))
        time.sleep(0.5)
    finally:
        counter.stop()
        for p in procs:
            p.kill()
            p.wait()
    assert dict(counter.by_tier) == {"vllm": 2, "slurm": 1}
    assert dict(counter.by_module) == {("vllm", "tests/vllm/test_a.py"): 2,
                                       ("slurm", "tests/slurm/test_b.py"): 1}
