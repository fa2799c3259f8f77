"""One run of a sweep at a time (issue 19.2), and no server outlives a failing one
(19.4). A second ``sweep NAME`` while one runs is refused with the holder's pid and
host (exit 3) and writes nothing; a lock its holder left by dying holds nothing; a state
write that fails mid-point stops the point's server. Real processes, real launches of
the labelled FAKE OpenAI server (tests/support/fake_openai_server.py: not vLLM)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.support.bench_project import make_bench_project
from tests.support.interruptible import variantctl_argv
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode


def _project(tmp_path: Path, *, requests: int, output_len: int) -> Path:
    root = make_bench_project(tmp_path / "proj", gpu_monitor=False)
    (root / "sweeps").mkdir()
    (root / "sweeps" / "s.yaml").write_text(
        f"base: fake-openai\nhosts: [local]\nport: {free_port()}\n"
        "grid:\n  args:\n    itl-ms: [30]\n"
        "bench:\n  prompts: [random]\n  input_len: 8\n"
        f"  output_len: {output_len}\n  ignore_eos: true\n  concurrency: [1]\n"
        f"  requests: {requests}\n  warmup: '1'\n")
    return root


def _spawn(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(variantctl_argv("--project", str(project), *args),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _state(project: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((project / "runs" / "sweeps" / "s.json").read_text())


def test_a_second_run_of_a_running_sweep_is_refused(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path, requests=60, output_len=32)  # about a minute of benchmark
    first = _spawn(project, "sweep", "s")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if _state(project)["points"][0]["phase"] == "bench":
                    break
            except (OSError, ValueError, KeyError, IndexError):
                pass
            assert first.poll() is None, first.communicate()
            time.sleep(0.2)
        else:
            raise AssertionError("the first sweep never reached its benchmark")
        before = (project / "runs" / "sweeps" / "s.json").read_bytes()
        # the second run: this process (another pid than the first's, as any other run)
        second = run_cli(["sweep", "s", "--resume"], project=project)
        assert second.code == ExitCode.CONFLICT, second.output
        assert (f"sweep s is already running (pid {first.pid} on host "
                f"{socket.gethostname()}" in second.stderr), second.stderr
        assert "Traceback" not in second.output
        # the second run wrote nothing: the first one's point is still benchmarking
        after = json.loads((project / "runs" / "sweeps" / "s.json").read_bytes())
        assert after["points"][0]["status"] == "running"
        assert after["points"][0]["phase"] == "bench"
        assert json.loads(before)["started_at"] == after["started_at"]
        dry = run_cli(["sweep", "s", "--dry-run"], project=project)
        assert dry.code == 0, dry.output  # reading the plan is never refused
    finally:
        first.send_signal(signal.SIGINT)  # the first run stops its server as it ends
        first.communicate(timeout=120)
    assert not list((project / "work-local" / "run").glob("*.json"))


def test_a_lock_left_by_a_dead_holder_holds_nothing(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path, requests=2, output_len=4)
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = project / "runs" / "sweeps" / "s.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(),
                                "started_at": "2026-01-01T00:00:00+00:00"}) + "\n")
    res = run_cli(["sweep", "s"], project=project)
    assert res.code == 0, res.output
    assert _state(project)["status"] == "done"
    assert _state(project)["points"][0]["status"] == "measured"


def _full_disk_from_bench(monkeypatch, kind: str) -> None:  # type: ignore[no-untyped-def]
    """The disk fills up as the point's server is ready: from the state write that
    records its ``bench`` phase on, every write of the state fails. Injected under the
    run store, which writes the state (``RunStore.write_sweep_state``), at the one local
    atomic writer every file of this machine goes through (``LocalTarget.write_atomic``),
    as the disk would: an OSError, or the TargetError the writer makes of one."""
    import errno

    from variantctl.errors import TargetError
    from variantctl.targets.local import LocalTarget

    real = LocalTarget.write_atomic
    full = [False]

    def write(self: LocalTarget, path: str, data: bytes) -> None:
        if Path(path).name == "s.json" and (full[0] or b'"phase": "bench"' in data):
            full[0] = True
            if kind == "oserror":
                raise OSError(errno.ENOSPC, "No space left on device", path)
            raise TargetError("No space left on device", kind="other", host="local",
                              path=path)
        real(self, path, data)

    monkeypatch.setattr(LocalTarget, "write_atomic", write)


def test_a_state_write_failing_mid_point_stops_the_points_server(
        run_cli, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from variantctl.targets.local import LocalTarget
    from variantctl.targets.process import port_in_use

    for kind in ("oserror", "targeterror"):
        project = _project(tmp_path / kind, requests=2, output_len=4)
        with monkeypatch.context() as mp:
            _full_disk_from_bench(mp, kind)
            res = run_cli(["sweep", "s"], project=project)
        assert res.code != 0 and "Traceback" not in res.output, res.output
        assert "No space left on device" in res.stderr
        assert "stopped its server (pid " in res.stderr, res.stderr
        run_dir = project / "work-local" / "run"
        assert not list(run_dir.glob("*.json")), "the point's server is still recorded"
        port = int((project / "sweeps" / "s.yaml").read_text().split("port: ")[1].split()[0])
        assert not port_in_use(LocalTarget(), port)
        # the state kept the last phase it could write: --resume runs the point again
        assert _state(project)["points"][0]["status"] == "running"


def test_a_terminated_sweep_stops_its_server(tmp_path: Path) -> None:
    """SIGTERM (``kill PID``) mid-benchmark: the point's server is stopped, the state says
    interrupted, exit 130 — as Ctrl-C, never a server left running."""
    from variantctl.targets.local import LocalTarget
    from variantctl.targets.process import port_in_use

    project = _project(tmp_path, requests=60, output_len=32)
    proc = _spawn(project, "sweep", "s")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if _state(project)["points"][0]["phase"] == "bench":
                    break
            except (OSError, ValueError, KeyError, IndexError):
                pass
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        else:
            raise AssertionError("the sweep never reached its benchmark")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == ExitCode.INTERRUPTED, (out, err)
    assert "Traceback" not in err
    assert not list((project / "work-local" / "run").glob("*.json")), err
    port = int((project / "sweeps" / "s.yaml").read_text().split("port: ")[1].split()[0])
    assert not port_in_use(LocalTarget(), port)
    state = _state(project)
    assert state["status"] == "interrupted"
    assert state["points"][0]["status"] == "interrupted"
