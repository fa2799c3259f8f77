"""A forward's client hanging up while the server still sends must not end the SSH
connection (issue 20.4: paramiko's "Socket exception: Bad file descriptor (9)").

The cause, found with strace (``close(7); close(8)`` by the relay thread, then
``write(8, "*", 1) = -1 EBADF`` by the transport thread): the relay closed a paramiko
channel whose ``fileno()`` pipe the transport thread was signalling at that moment
(``Channel._feed`` -> ``PosixPipe.set``, past its "closed?" check). ``EBADF`` in the
transport thread ends the connection, and every channel on it.

The first test makes that interleaving happen every time: a profile hook holds the
transport thread at its ``os.write`` of the readiness byte until the relay thread is
inside ``Channel.close``. The second repeats the real operation (clients of the forward
hanging up mid-stream) many times, with no hook.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

import paramiko
import pytest
from paramiko.buffered_pipe import BufferedPipe

from tests.ssh.conftest import ssh_host
from tests.support.sshd import SshLab
from variantctl.targets.ssh import SshTarget

pytestmark = pytest.mark.ssh


@contextmanager
def flood_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that sends to each client until it hangs up."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                while not stop.is_set():
                    conn.sendall(b"x" * 512)
            except OSError:
                pass

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        listener.close()


def transport_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("paramiko") and r.levelno >= logging.ERROR]


def read_some(client: socket.socket, n: int = 4096) -> bytes:
    client.settimeout(10)
    return client.recv(n)


class HoldReadinessWrite:
    """A profile hook (every thread started after it is installed) that, once armed,
    holds paramiko's transport thread at its next ``os.write`` (the byte that marks a
    channel readable) until another thread calls ``BufferedPipe.close`` (the relay
    thread inside ``Channel.close``), then lets it write."""

    def __init__(self) -> None:
        self.armed = False
        self.held = threading.Event()
        self.closing = threading.Event()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.armed:
            return
        transport = isinstance(threading.current_thread(), paramiko.Transport)
        if transport and event == "c_call" and arg is os.write and not self.held.is_set():
            self.held.set()
            self.closing.wait(10)
        elif (not transport and event == "call" and self.held.is_set()
              and frame.f_code is BufferedPipe.close.__code__):
            self.closing.set()


def test_a_client_hanging_up_while_the_transport_signals_its_channel_keeps_the_connection(
    ssh_lab: SshLab, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="paramiko")
    hook = HoldReadinessWrite()
    threading.setprofile(hook)  # the transport and relay threads start after this
    target = SshTarget(ssh_host(ssh_lab, "gpu1", tmp_path / "w"))
    try:
        with flood_server() as port, target.forward(port) as (host, local_port):
            client = socket.create_connection((host, local_port))
            assert read_some(client)  # the stream flows
            hook.armed = True
            # keep reading until the hook holds the transport thread: a client that
            # stopped reading would fill the buffers and stall the stream before that
            client.settimeout(0.2)
            deadline = time.monotonic() + 10
            while not hook.held.is_set() and time.monotonic() < deadline:
                with suppress(TimeoutError):
                    client.recv(65536)
            assert hook.held.is_set(), "the transport thread signalled no data"
            client.close()  # the relay closes the channel; the transport thread is held
            assert hook.closing.wait(10), "the relay did not close the channel"
            hook.armed = False
            # the same forward, the same SSH connection: a new client is served
            again = socket.create_connection((host, local_port))
            try:
                assert read_some(again), "the SSH connection ended under the relay"
            finally:
                again.close()
            assert target.is_connected
    finally:
        threading.setprofile(None)
        hook.closing.set()
        target.close()
    assert transport_errors(caplog) == []


def test_many_clients_hanging_up_mid_stream_never_end_the_connection(
    ssh_lab: SshLab, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="paramiko")
    # a short switch interval lets the transport thread run inside the relay's close
    # more often, as a loaded machine does
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    target = SshTarget(ssh_host(ssh_lab, "gpu1", tmp_path / "w"))
    try:
        with flood_server() as port, target.forward(port) as (host, local_port):
            for i in range(300):
                client = socket.create_connection((host, local_port))
                try:
                    for _ in range(1 + i % 4):
                        assert read_some(client), f"connection {i}: the SSH connection ended"
                finally:
                    client.close()
        assert target.is_connected
    finally:
        sys.setswitchinterval(interval)
        target.close()
    assert transport_errors(caplog) == []
