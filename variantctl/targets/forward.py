"""A local TCP listener whose connections are relayed to a port on a target.

``SshTarget.forward`` uses it so that an ordinary HTTP client in this process
(the benchmark's async client, a ``/metrics`` scraper) can reach a server that
listens only on the remote host's loopback: every accepted connection opens its
own SSH ``direct-tcpip`` channel, so many clients (and the log watcher's SFTP
requests, the GPU sampler's exec channels) share one SSH connection without
sharing a channel.

One relay thread serves every connection with ``selectors``, so a benchmark at
concurrency 200 costs one thread, not 400. A paramiko channel is waited on through
:class:`SelectableChannel`, not through its own ``fileno()`` (see there why).
"""

from __future__ import annotations

import os
import selectors
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import paramiko


class ChannelLike(Protocol):
    """What the relay needs of the far end (a paramiko Channel or a socket)."""

    def fileno(self) -> int: ...

    def recv(self, n: int) -> bytes: ...

    def sendall(self, data: bytes) -> None: ...

    def close(self) -> None: ...


_CHUNK = 65536


class _ReadyEvent(threading.Event):
    """The "data to read" event of a channel's input buffer, mirrored in a pipe the
    selector waits on; setting it and closing it exclude each other.

    paramiko's transport thread sets it (``BufferedPipe.feed``) while the relay thread
    clears it (``recv``) and, at the end, closes it: under one lock, so the transport
    thread never writes to a pipe end that ``close`` has given back to the system
    (another file may hold that number by then).
    """

    def __init__(self) -> None:
        super().__init__()
        self._fd_lock = threading.Lock()
        self._read_fd, self._write_fd = os.pipe()
        self._closed = False

    def fileno(self) -> int:
        return self._read_fd

    def set(self) -> None:
        with self._fd_lock:
            if not self._closed and not self.is_set():
                os.write(self._write_fd, b"*")
            super().set()

    def clear(self) -> None:
        with self._fd_lock:
            if not self._closed and self.is_set():
                os.read(self._read_fd, 1)
            super().clear()

    def close(self) -> None:
        with self._fd_lock:
            if not self._closed:
                self._closed = True
                os.close(self._read_fd)
                os.close(self._write_fd)


class SelectableChannel:
    """A paramiko channel the relay's selector can wait on (issue 20.4).

    Not through ``Channel.fileno()``: the pipe that creates is closed by
    ``Channel.close()`` with no lock shared with the transport thread, which may at
    that moment be in ``PosixPipe.set`` (``Channel._feed``, data arriving for the
    channel), past its "closed?" check and about to write to the pipe. It then
    writes to a closed fd: ``EBADF``, or ``EPIPE`` when only the read end is gone,
    and paramiko ends the whole connection with "Socket exception: Bad file
    descriptor (9)", or writes a byte into whichever file took that number. A relay
    client that hangs up while the server still sends hits it (25 of 1,000 such
    connections in a loop on this machine). Here the channel's buffer signals a
    :class:`_ReadyEvent` the relay owns, closed after the channel.
    """

    def __init__(self, channel: paramiko.Channel):
        self.channel = channel
        self._ready = _ReadyEvent()
        channel.in_buffer.set_event(self._ready)

    def fileno(self) -> int:
        return self._ready.fileno()

    def recv(self, n: int) -> bytes:
        return self.channel.recv(n)

    def sendall(self, data: bytes) -> None:
        self.channel.sendall(data)

    def close(self) -> None:
        try:
            self.channel.close()
        finally:
            self._ready.close()


class _Relay:
    def __init__(self, listener: socket.socket, open_channel: Callable[[], ChannelLike]):
        self.listener = listener
        self.open_channel = open_channel
        self.selector = selectors.DefaultSelector()
        self.stopping = False
        # a self-pipe wakes the selector when the context ends
        self.wake_r, self.wake_w = socket.socketpair()
        self.peers: dict[Any, Any] = {}
        self.thread = threading.Thread(target=self._loop, name="variantctl-forward", daemon=True)

    def start(self) -> None:
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.thread.start()

    def stop(self, join_s: float = 5.0) -> None:
        """Stop relaying; the relay thread closes every connection as its loop ends.

        Not here: a relay thread still inside ``recv`` or ``sendall`` (a slow peer
        can hold it past the join) would go on using a channel closed under it, its
        readiness pipe among it.
        """
        self.stopping = True
        with suppress(OSError):
            self.wake_w.send(b"x")
        self.thread.join(timeout=join_s)

    def _close_all(self) -> None:
        """Close every connection, the listener and the selector (the relay thread,
        once, as it ends)."""
        for end in list(self.peers):
            with suppress(Exception):
                self.selector.unregister(end)
            with suppress(Exception):
                end.close()
        self.peers.clear()
        for s in (self.listener, self.wake_r, self.wake_w):
            with suppress(OSError):
                s.close()
        self.selector.close()

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except (BlockingIOError, OSError):
            return
        client.setblocking(True)
        try:
            channel = self.open_channel()
        except Exception:
            # nothing listens there (yet): the client sees a closed connection, as it
            # would connecting directly to a closed port
            with suppress(OSError):
                client.close()
            return
        self.peers[client] = channel
        self.peers[channel] = client
        self.selector.register(client, selectors.EVENT_READ, "data")
        self.selector.register(channel, selectors.EVENT_READ, "data")

    def _close_pair(self, end: Any) -> None:
        other = self.peers.pop(end, None)
        for e in (end, other):
            if e is None:
                continue
            self.peers.pop(e, None)
            with suppress(Exception):
                self.selector.unregister(e)
            with suppress(Exception):
                e.close()

    def _pump(self, end: Any) -> None:
        other = self.peers.get(end)
        if other is None:
            return
        try:
            data = end.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except Exception:
            data = b""
        if not data:
            self._close_pair(end)
            return
        try:
            other.sendall(data)
        except Exception:
            self._close_pair(end)

    def _loop(self) -> None:
        try:
            while not self.stopping:
                try:
                    events = self.selector.select(timeout=1.0)
                except (OSError, ValueError):
                    return
                for key, _ in events:
                    if key.data == "wake" or self.stopping:
                        return
                    if key.data == "accept":
                        self._accept()
                    else:
                        self._pump(key.fileobj)
        finally:
            self._close_all()


@contextmanager
def relay(open_channel: Callable[[], ChannelLike]) -> Iterator[tuple[str, int]]:
    """Listen on an ephemeral port of 127.0.0.1; yield ``(host, port)``. Each
    connection made to it is joined to a new ``open_channel()``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    r = _Relay(listener, open_channel)
    r.start()
    try:
        yield listener.getsockname()[:2]
    finally:
        r.stop()
