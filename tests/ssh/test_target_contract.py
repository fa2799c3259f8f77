"""The Target contract: the same tests over LocalTarget and SshTarget (real OpenSSH).

Every capability the launch/measure loop uses is declared on
``variantctl.targets.base.Target``; these tests hold both implementations to it:
atomic write, lock, read from an offset, ``~`` expansion on the target, spawn
detached / stop the process group, a TCP forward an ordinary HTTP client can use,
reconnect, and concurrent use of one connection from several threads.
"""

from __future__ import annotations

import http.server
import os
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.ssh.conftest import ssh_host
from tests.support.sshd import SshLab
from variantctl.errors import TargetError
from variantctl.targets.base import Target
from variantctl.targets.connect import open_target
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import group_members, spawn_detached, stop_group


@pytest.fixture(params=["local", pytest.param("ssh", marks=pytest.mark.ssh)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "local":
        yield LocalTarget()
        return
    lab: SshLab = request.getfixturevalue("ssh_lab")
    host = ssh_host(lab, "gpu1", tmp_path / "work")
    with open_target(host) as t:
        yield t


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"hello {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def http_port() -> Iterator[int]:
    """A tiny HTTP server on this machine's loopback (the SSH lab's hosts are this
    machine too, so it stands for a server listening on the host's loopback)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_write_atomic_replaces_and_keeps_mode(target: Target, tmp_path: Path) -> None:
    path = str(tmp_path / "f.txt")
    target.write_atomic(path, b"one")
    os.chmod(path, 0o640)
    target.write_atomic(path, b"two")
    assert target.read_bytes(path) == b"two"
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert [n for n in os.listdir(tmp_path) if "variantctl-tmp" in n] == []


def test_write_new_refuses_an_existing_file(target: Target, tmp_path: Path) -> None:
    path = str(tmp_path / "backup")
    target.write_new(path, b"original", mode=0o600)
    with pytest.raises(TargetError) as err:
        target.write_new(path, b"other")
    assert err.value.kind == "exists"
    assert target.read_bytes(path) == b"original"
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_lock_is_exclusive(target: Target, tmp_path: Path) -> None:
    path = str(tmp_path / "lock")
    with target.lock(path):
        # a second holder (another process: flock is per open file) is refused
        probe = (
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n"
            "    sys.exit(3)\n"
        )
        res = target.run([sys.executable, "-c", probe, path])
        assert res.returncode == 3
    res = target.run([sys.executable, "-c", probe, path])
    assert res.returncode == 0


def test_read_from_offset_of_a_growing_file(target: Target, tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(b"line one\n")
    assert target.read_from(str(path), 0) == b"line one\n"
    with path.open("ab") as fh:
        fh.write(b"line two\n")
    assert target.read_from(str(path), 9) == b"line two\n"
    assert target.read_from(str(path), 18) == b""
    assert target.read_from(str(path), 0, 4) == b"line"
    with pytest.raises(TargetError) as err:
        target.read_from(str(tmp_path / "missing"), 0)
    assert err.value.kind == "not-found"


def test_expand_user_uses_the_targets_home(target: Target) -> None:
    home = target.run(["sh", "-c", 'printf %s "$HOME"']).stdout
    assert target.expand_user("~") == home
    assert target.expand_user("~/variantctl") == home.rstrip("/") + "/variantctl"
    assert target.expand_user("/abs/path") == "/abs/path"


def test_spawn_detached_and_stop_group(target: Target, tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\nsleep 300 &\necho started\nwait\n")
    script.chmod(0o755)
    log, pid_file = str(tmp_path / "s.log"), str(tmp_path / "s.pid")
    pid = spawn_detached(target, str(script), log_path=log, pid_path=pid_file)
    deadline = time.monotonic() + 10
    while len(group_members(target, pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(group_members(target, pid)) >= 2  # the shell and its sleep child
    result = stop_group(target, pid, grace=5)
    assert result.remaining == ()
    assert group_members(target, pid) == []


def test_forward_reaches_a_port_on_the_target(target: Target, http_port: int) -> None:
    with target.forward(http_port) as (host, port):
        with urllib.request.urlopen(f"http://{host}:{port}/a", timeout=10) as resp:
            assert resp.read() == b"hello /a"
        # several clients at once, each on its own connection (a benchmark's pool)
        def get(i: int) -> bytes:
            with urllib.request.urlopen(f"http://{host}:{port}/{i}", timeout=10) as resp:
                return bytes(resp.read())

        with ThreadPoolExecutor(8) as pool:
            bodies = list(pool.map(get, range(24)))
        assert bodies == [f"hello /{i}".encode() for i in range(24)]


def test_forward_to_a_closed_port_looks_like_a_closed_port(target: Target) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with target.forward(closed) as (host, port), pytest.raises(OSError):
        urllib.request.urlopen(f"http://{host}:{port}/", timeout=5)


def test_open_tcp_probe(target: Target, http_port: int) -> None:
    sock = target.open_tcp(http_port)
    try:
        sock.sendall(b"GET /p HTTP/1.0\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            piece = sock.recv(4096)
            if not piece:
                break
            data += piece
    finally:
        sock.close()
    assert data.startswith(b"HTTP/1.0 200") and data.endswith(b"hello /p")


def test_reconnect_keeps_the_target_usable(target: Target, tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_bytes(b"before")
    target.reconnect()
    assert target.read_bytes(str(path)) == b"before"
    assert target.run(["true"]).ok


def test_one_connection_shared_by_watcher_sampler_and_client(
    target: Target, tmp_path: Path, http_port: int
) -> None:
    """A log watcher (file reads), a GPU sampler (process runs) and a benchmark client
    (forwarded HTTP) use one target from three threads at once."""
    log = tmp_path / "grow.log"
    log.write_bytes(b"")
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer() -> None:
        with log.open("ab") as fh:
            for i in range(200):
                fh.write(f"line {i}\n".encode())
                fh.flush()
                time.sleep(0.002)

    def watcher() -> None:
        offset = 0
        got = b""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not got.endswith(b"line 199\n"):
            chunk = target.read_from(str(log), offset)
            offset += len(chunk)
            got += chunk
        assert got == b"".join(f"line {i}\n".encode() for i in range(200))

    def sampler() -> None:
        for i in range(15):
            assert target.run(["sh", "-c", f"echo {i}"]).stdout == f"{i}\n"
            assert target.stat(str(log)) is not None

    def client() -> None:
        with target.forward(http_port) as (host, port):
            for i in range(30):
                with urllib.request.urlopen(f"http://{host}:{port}/{i}", timeout=10) as r:
                    assert r.read() == f"hello /{i}".encode()

    def guarded(fn: object) -> None:
        try:
            fn()  # type: ignore[operator]
        except BaseException as exc:  # collected and re-raised in the test thread
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=guarded, args=(f,))
               for f in (writer, watcher, sampler, client)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
