"""The forward relay (variantctl/targets/forward.py) never closes a connection under its
own relay thread (issue 20.4, the SSH transport's "Bad file descriptor" hunt).

A stand-in channel (a socket pair: the relay only needs fileno/recv/sendall/close) whose
``sendall`` is held: the relay thread sits inside it when the forward's context ends.
Before, ``stop()`` gave the thread 5 s and then closed every channel from the stopping
thread — a paramiko channel closed that way frees its pipe's fds while the relay thread
still uses the channel.

And the ready event a paramiko channel is selected through (SelectableChannel): it follows
the channel's input buffer, and once closed it never touches the fd numbers it gave back
(the cause of the "Bad file descriptor" itself is tested on the real sshd:
tests/ssh/test_forward_hangup.py).
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time

from paramiko.buffered_pipe import BufferedPipe

from variantctl.targets.forward import _ReadyEvent, _Relay


class HeldChannel:
    def __init__(self) -> None:
        self.near, self.far = socket.socketpair()
        self.release = threading.Event()
        self.inside = threading.Event()
        self.in_sendall = False
        self.closed_while_in_use = False
        self.closed = threading.Event()

    def fileno(self) -> int:
        return self.near.fileno()

    def recv(self, n: int) -> bytes:
        return self.near.recv(n)

    def sendall(self, data: bytes) -> None:
        self.in_sendall = True
        self.inside.set()
        self.release.wait(10)
        self.near.sendall(data)
        self.in_sendall = False

    def close(self) -> None:
        if self.in_sendall:
            self.closed_while_in_use = True
        self.near.close()
        self.closed.set()


def test_stop_leaves_a_busy_connection_to_the_relay_thread_which_closes_it() -> None:
    channel = HeldChannel()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    relay = _Relay(listener, lambda: channel)
    relay.start()
    client = socket.create_connection(listener.getsockname()[:2])
    try:
        client.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert channel.inside.wait(5)  # the relay thread is inside sendall
        relay.stop(join_s=0.2)  # the context ends while it is held there
        assert relay.thread.is_alive()
        assert not channel.closed.is_set() and not channel.closed_while_in_use
        channel.release.set()
        assert channel.closed.wait(5), "the relay thread did not close the channel"
        relay.thread.join(5)
        assert not relay.thread.is_alive()
        assert not channel.closed_while_in_use
        assert channel.far.recv(100) == b"GET / HTTP/1.0\r\n\r\n"  # relayed in full
        time.sleep(0.05)
        assert listener.fileno() == -1  # the listener went with the thread
    finally:
        channel.release.set()
        client.close()
        channel.far.close()


def readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def test_a_channel_buffer_drives_the_ready_events_pipe_level_by_level() -> None:
    """What the selector sees of a paramiko channel (SelectableChannel): readable while
    its input buffer holds data or is closed, not once it is read empty."""
    buffer: BufferedPipe[bytes] = BufferedPipe()
    event = _ReadyEvent()
    try:
        buffer.set_event(event)
        assert not readable(event.fileno()) and not event.is_set()
        buffer.feed(b"abc")
        buffer.feed(b"def")
        assert readable(event.fileno()) and event.is_set()
        assert buffer.read(4) == b"abcd"
        assert readable(event.fileno())  # two bytes left
        assert buffer.read(10) == b"ef"
        assert not readable(event.fileno()) and not event.is_set()
        buffer.close()  # EOF: readable, so the relay reads the b"" that ends the pair
        assert readable(event.fileno())
    finally:
        event.close()


def test_a_closed_ready_event_leaves_the_fd_numbers_it_gave_back_alone() -> None:
    """paramiko's own pipe, once closed, could still be written (transport thread) or
    read (PosixPipe.clear) at its old numbers; the ready event, once closed, is not."""
    event = _ReadyEvent()
    given_back = event.fileno()
    event.close()
    r, w = os.pipe()  # the lowest free numbers: those the event gave back
    try:
        assert given_back in (r, w)
        os.write(w, b"mine")
        event.set()  # the transport thread feeding a channel the relay closed
        event.clear()  # the relay reading it
        event.close()
        os.close(w)
        assert os.read(r, 100) == b"mine"  # nothing taken, nothing added
        assert event.is_set() is False
    finally:
        os.close(r)
