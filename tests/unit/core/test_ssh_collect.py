"""SshTarget's output collection must read to EOF, not stop at the exit status.

sshd may send ``exit-status`` while the command's last output is still in its
buffers; the real-sshd test (tests/ssh) can only hope to hit that timing, so this
replays the message order deterministically with a scripted channel.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from variantctl.targets.ssh import _collect


class ScriptedChannel:
    """The parts of paramiko.Channel that _collect uses, fed by a script of events."""

    def __init__(self, events: list[tuple[str, Any]]):
        self.events = deque(events)
        self.out = bytearray()
        self.err = bytearray()
        self.exit_status: int | None = None
        self.eof_received = False
        self.closed = False

    def _advance(self) -> None:
        # one network message arrives each time the reader looks
        if self.events:
            kind, value = self.events.popleft()
            if kind == "out":
                self.out += value
            elif kind == "err":
                self.err += value
            elif kind == "exit":
                self.exit_status = value
            elif kind == "eof":
                self.eof_received = True
            elif kind == "close":
                self.closed = True

    def settimeout(self, _: float) -> None:
        pass

    def recv_ready(self) -> bool:
        self._advance()
        return bool(self.out)

    def recv(self, n: int) -> bytes:
        data, self.out = bytes(self.out[:n]), self.out[n:]
        return data

    def recv_stderr_ready(self) -> bool:
        return bool(self.err)

    def recv_stderr(self, n: int) -> bytes:
        data, self.err = bytes(self.err[:n]), self.err[n:]
        return data

    def exit_status_ready(self) -> bool:
        return self.exit_status is not None

    def recv_exit_status(self) -> int:
        assert self.exit_status is not None
        return self.exit_status


def test_output_after_the_exit_status_is_kept() -> None:
    chan = ScriptedChannel([
        ("out", b"first\n"), ("exit", 0), ("none", None), ("none", None),
        ("out", b"late 1\n"), ("err", b"warn\n"), ("out", b"late 2\n"), ("eof", None),
        ("close", None),
    ])
    out, err, code = _collect(chan, timeout=5)  # type: ignore[arg-type]
    assert (out, err, code) == (b"first\nlate 1\nlate 2\n", b"warn\n", 0)


def test_a_close_without_eof_still_ends_the_read() -> None:
    chan = ScriptedChannel([("out", b"x"), ("exit", 3), ("close", None)])
    assert _collect(chan, timeout=5) == (b"x", b"", 3)  # type: ignore[arg-type]
