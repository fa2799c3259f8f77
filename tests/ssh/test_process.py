"""Detached server processes on LocalTarget and SshTarget: spawn, inspect, stop, ports, logs."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ssh.conftest import ssh_host
from tests.support.sshd import SshLab, free_port
from variantctl.targets.base import Target
from variantctl.targets.connect import open_target
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import (
    group_members,
    http_status,
    is_alive,
    parse_listening_ports,
    parse_proc_stat,
    port_in_use,
    read_from,
    spawn_detached,
    stop_group,
)

FAKE = Path(__file__).resolve().parents[1] / "support" / "fake_gpu_server.py"


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "local":
        yield LocalTarget()
        return
    lab: SshLab = request.getfixturevalue("ssh_lab")
    with open_target(ssh_host(lab, "gpu1", tmp_path / "w")) as t:
        yield t


def write_script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "start.sh"
    p.write_text(body)
    return str(p)


def fake_script(tmp_path: Path, scenario: str, port: int, *extra: str) -> str:
    args = " ".join(extra)
    return write_script(
        tmp_path,
        f"export FAKE_MARKER='it works'\nexec {sys.executable} {FAKE} --scenario {scenario} "
        f"--port {port} --pace 0.01 {args}\n",
    )


def test_parse_proc_stat_handles_odd_comm() -> None:
    text = "12 (a b) c)) S 1 12 12 0 -1\n13 (python3) Z 12 12 12 0\nbogus\n"
    procs = parse_proc_stat(text)
    assert [(p.pid, p.comm, p.pgid, p.sid, p.alive) for p in procs] == [
        (12, "a b) c)", 12, 12, True),
        (13, "python3", 12, 12, False),
    ]


def test_parse_listening_ports() -> None:
    text = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
        "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
        "   1: 0100007F:1F91 0100007F:A000 01 00000000:00000000 00:00000000 00000000     0\n"
        "   0: 00000000000000000000000000000000:1F92 00000000000000000000000000000000:0000 0A\n"
    )
    assert parse_listening_ports(text) == {8080, 8082}


def test_spawn_survives_and_stop_kills_whole_group(target: Target, tmp_path: Path) -> None:
    port = free_port()
    log = str(tmp_path / "s.log")
    pid_file = str(tmp_path / "s.pid")
    pid = spawn_detached(target, fake_script(tmp_path, "healthy", port), log_path=log,
                         pid_path=pid_file)
    try:
        assert Path(pid_file).read_text().strip() == str(pid)
        deadline = time.monotonic() + 20
        while http_status(target, port) != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert http_status(target, port) == 200
        assert http_status(target, port, "/nope") == 404
        assert port_in_use(target, port)
        members = group_members(target, pid)
        assert pid in members and len(members) >= 2  # the server and its "engine core"
        if not isinstance(target, LocalTarget):
            # the server lives on after the connection that started it is gone
            target.reconnect()  # type: ignore[attr-defined]
            assert is_alive(target, pid)
        text = read_from(target, log, 0)
        assert b"Application startup complete." in text
        tail = read_from(target, log, len(text) - 10)
        assert text.endswith(tail) and len(tail) == 10
        assert read_from(target, log, len(text)) == b""
    finally:
        result = stop_group(target, pid, grace=5)
    assert result.ok and not result.killed and result.found >= 2
    assert group_members(target, pid) == []
    assert not port_in_use(target, port)
    assert http_status(target, port) is None


@pytest.mark.parametrize("python", ["python3", "/no/such/python"])
def test_stop_escalates_to_kill(target: Target, tmp_path: Path, python: str) -> None:
    port = free_port()
    pid = spawn_detached(
        target, fake_script(tmp_path, "graph-hang", port, "--ignore-term"),
        log_path=str(tmp_path / "h.log"), pid_path=str(tmp_path / "h.pid"),
    )
    deadline = time.monotonic() + 10
    while len(group_members(target, pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    t0 = time.monotonic()
    result = stop_group(target, pid, grace=1.0, python=python)  # no python: polls from here
    assert result.killed and result.ok
    assert 1.0 <= time.monotonic() - t0 < 8
    assert group_members(target, pid) == []


def test_stop_of_gone_group_is_a_noop(target: Target, tmp_path: Path) -> None:
    pid = spawn_detached(target, write_script(tmp_path, "exit 0\n"),
                         log_path=str(tmp_path / "x.log"), pid_path=str(tmp_path / "x.pid"))
    deadline = time.monotonic() + 5
    while is_alive(target, pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    result = stop_group(target, pid)
    assert result.found == 0 and result.ok


def test_port_in_use_sees_a_listener(target: Target) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert port_in_use(target, port)
    assert not port_in_use(target, port)
    assert http_status(target, port) is None


def test_env_is_exported_inside_the_script(target: Target, tmp_path: Path) -> None:
    script = write_script(tmp_path, 'export X="a b"\necho "X=$X"\n')
    pid = spawn_detached(target, script, log_path=str(tmp_path / "e.log"),
                         pid_path=str(tmp_path / "e.pid"))
    deadline = time.monotonic() + 5
    while is_alive(target, pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "e.log").read_text() == "X=a b\n"
