"""The suite stops what it starts (issue 33): the leftover finder, the stand-in's child,
and the session-end check that fails a run which leaves a process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support import leftovers

REPO = Path(__file__).resolve().parents[3]
FAKE = REPO / "tests" / "support" / "fake_gpu_server.py"


def _sleeper(cwd: Path, seconds: int = 60) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"],
                            cwd=cwd, start_new_session=True)


def test_a_process_in_a_temp_root_is_found_and_ended_by_identity(tmp_path: Path) -> None:
    proc = _sleeper(tmp_path)
    try:
        (found,) = [p for p in leftovers.find([tmp_path]) if p.pid == proc.pid]
        assert found.cwd == str(tmp_path.resolve())
        # the same pid with another start time is another process: never signalled
        impostor = leftovers.Proc(found.pid, found.started + 1, found.cwd, found.cmdline)
        assert leftovers.end([impostor], grace=0.1) == []
        assert proc.poll() is None
        assert leftovers.end([found], grace=1.0) == [found]
        assert proc.wait(timeout=5) != 0
        assert leftovers.find([tmp_path]) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_failing_stand_ins_engine_core_child_dies_with_it(tmp_path: Path) -> None:
    """The leak of issue 33: the fake server's child slept an hour after its parent
    failed (reparented to init). Now the kernel kills it when the parent exits."""
    res = subprocess.run([sys.executable, str(FAKE), "--scenario", "xformers-multistep",
                          "--pace", "0"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 1, res.stderr
    assert "Engine process failed to start" in res.stdout
    assert leftovers.settle([tmp_path], seconds=5) == []


def test_the_session_check_fails_a_run_that_leaves_processes(tmp_path: Path) -> None:
    """A session fixture that never stops its processes: the run fails naming both (one
    found by its directory, one only by the run's marker), and both are ended."""
    pids = tmp_path / "pids"
    (tmp_path / "test_leak.py").write_text(textwrap.dedent(f"""
        import subprocess, sys
        import pytest

        @pytest.fixture(scope="session")
        def forgotten(tmp_path_factory):
            d = tmp_path_factory.mktemp("servers")
            code = "import time; time.sleep(120)"
            a = subprocess.Popen([sys.executable, "-c", code], cwd=d)
            b = subprocess.Popen([sys.executable, "-c", code], cwd="/")
            open({str(pids)!r}, "w").write(f"{{a.pid}} {{b.pid}}")
            yield

        def test_uses_it(forgotten):
            assert True
    """))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "VARIANTCTL_LEFTOVER_SETTLE": "0.5"}
    env.pop(leftovers.MARKER, None)  # the inner run is a run of its own
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-p", "tests.support.leftover_check", "-c", str(tmp_path / "pytest.ini"),
         "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_leak.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 passed" in res.stdout
    assert "the run left 2 process(es) running (ended now):" in res.stdout
    a, b = (int(x) for x in pids.read_text().split())
    assert f"pid {a} (cwd {tmp_path / 'base'}" in res.stdout
    assert f"pid {b} (cwd /)" in res.stdout
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(leftovers.start_time(p) for p in (a, b)):
        time.sleep(0.05)
    assert leftovers.start_time(a) is None and leftovers.start_time(b) is None
