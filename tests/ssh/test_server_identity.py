"""A server record names its process (boot id + start time): ``stop``, ``ps`` and a
sweep's leftover stop verify it on the host before any signal, so a pid that now
belongs to another process is never signalled (issue 19.1)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ssh.launchkit import make_project
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.launch.servers import layout_for, list_records, save_record
from variantctl.runs.record import ServerRecord
from variantctl.sweeps.executor import stop_leftovers
from variantctl.targets.local import LocalTarget

HOSTS = ["local", pytest.param("gpu1", marks=pytest.mark.ssh)]


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    lab = request.getfixturevalue("ssh_lab") if request.node.get_closest_marker("ssh") else None
    return make_project(tmp_path / "proj", lab)


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated session leader (as a reused pid would be): it must survive."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    time.sleep(0.2)
    return proc.poll() is None


def _launch_and_lose(run_cli, project: Path, host: str) -> tuple[Path, dict]:  # type: ignore[no-untyped-def, type-arg]
    """Launch the fake server, then kill it behind variantctl's back: its record stays."""
    res = run_cli(["launch", "fake-healthy", "--host", host, "--port", str(free_port()),
                   "--grace", "3"], project=project)
    assert res.code == 0, res.output
    record_file = project / f"work-{host}" / "run" / "fake-healthy.json"
    rec = json.loads(record_file.read_text())
    assert rec["boot_id"] and isinstance(rec["proc_start"], int), rec
    os.killpg(rec["pid"], signal.SIGKILL)
    time.sleep(0.3)
    return record_file, rec


@pytest.mark.parametrize("host", HOSTS)
def test_stop_never_signals_a_process_that_took_the_recorded_pid(
        run_cli, project: Path, host: str, bystander: subprocess.Popen[bytes]) -> None:  # type: ignore[no-untyped-def]
    record_file, rec = _launch_and_lose(run_cli, project, host)
    # the record now names a live process that is not the server (its start time differs)
    record_file.write_text(json.dumps({**rec, "pid": bystander.pid}))
    ps = run_cli(["ps", "--host", host, "--json"], project=project)
    assert json.loads(ps.stdout)["servers"][0]["state"] == "stale", ps.output
    stop = run_cli(["stop", "fake-healthy", "--host", host], project=project)
    assert stop.code == 0, stop.output
    assert (f"the recorded server is gone (pid {bystander.pid} now belongs to 'sleep 300')"
            in stop.stdout), stop.stdout
    assert "nothing signalled" in stop.stdout
    assert _alive(bystander)
    assert not record_file.exists()


@pytest.mark.parametrize("host", HOSTS)
def test_stop_refuses_a_live_pid_it_cannot_verify(
        run_cli, project: Path, host: str, bystander: subprocess.Popen[bytes]) -> None:  # type: ignore[no-untyped-def]
    record_file, rec = _launch_and_lose(run_cli, project, host)
    # a record written by an older variantctl: no identity to compare
    old = {k: v for k, v in rec.items() if k not in ("boot_id", "proc_start", "project")}
    record_file.write_text(json.dumps({**old, "pid": bystander.pid}))
    stop = run_cli(["stop", "fake-healthy", "--host", host, "--json"], project=project)
    assert stop.code == ExitCode.FAILED, stop.output
    (item,) = json.loads(stop.stdout)["stopped"]
    assert item["ok"] is False and item["processes"] == 0
    assert item["occupant"] == {"pid": bystander.pid, "command": "sleep 300", "verified": False}
    text = run_cli(["stop", "fake-healthy", "--host", host], project=project)
    assert "cannot be verified as the server; nothing signalled, record kept" in text.stdout
    assert _alive(bystander)
    assert record_file.exists()


def test_a_dead_unverifiable_record_is_cleaned(run_cli, project: Path) -> None:  # type: ignore[no-untyped-def]
    record_file, rec = _launch_and_lose(run_cli, project, "local")
    old = {k: v for k, v in rec.items() if k not in ("boot_id", "proc_start", "project")}
    record_file.write_text(json.dumps(old))
    stop = run_cli(["stop", "fake-healthy", "--host", "local"], project=project)
    assert stop.code == 0 and "stale record removed" in stop.stdout, stop.output
    assert not record_file.exists()


def test_sweep_leftover_stop_leaves_a_reused_pid_alone(
        tmp_path: Path, bystander: subprocess.Popen[bytes]) -> None:
    target = LocalTarget("h1")
    host = Host(name="h1", workdir=str(tmp_path / "work"))
    layout = layout_for(target, host)
    from variantctl.targets.process import identify

    mine = identify(target, os.getpid())  # a real identity, of another process
    assert mine.start is not None
    save_record(target, layout, ServerRecord(
        variant="cpu-eager@t-01", host="h1", pid=bystander.pid, port=1, log="", script="",
        pid_file=layout.pid_file("cpu-eager@t-01"), started_at="", boot_id=mine.boot_id,
        proc_start=mine.start))
    notes: list[str] = []
    assert stop_leftovers(target, host, "t", grace=1, note=notes.append) == []
    assert _alive(bystander)
    assert list_records(target, layout) == []
    assert notes == [f"h1: cpu-eager@t-01: the recorded server is gone (pid {bystander.pid} "
                     "now belongs to 'sleep 300'); record removed, nothing signalled"]


def test_replace_never_signals_a_pid_it_cannot_verify(
        run_cli, project: Path, bystander: subprocess.Popen[bytes]) -> None:  # type: ignore[no-untyped-def]
    record_file, rec = _launch_and_lose(run_cli, project, "local")
    old = {k: v for k, v in rec.items() if k not in ("boot_id", "proc_start", "project")}
    record_file.write_text(json.dumps({**old, "pid": bystander.pid}))
    res = run_cli(["launch", "fake-healthy", "--host", "local", "--port", str(free_port()),
                   "--replace"], project=project)
    assert res.code == ExitCode.FAILED, res.output
    assert (f"pid {bystander.pid} now belongs to 'sleep 300', which cannot be verified as "
            "the server; nothing signalled" in res.stderr), res.stderr
    assert _alive(bystander) and record_file.exists()
