"""A sweep (and a bisect, which runs its rounds as sweeps) stops on SIGTERM and SIGHUP
the way it stops on Ctrl-C (effectful: process signal handlers)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def term_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, a scheduler ending the session) and SIGHUP (the terminal
    closed) stop a sweep as Ctrl-C does: the running points' servers are stopped and
    the state says ``interrupted``, instead of dying with servers left holding GPUs.
    Only where signals can be handled (the main thread)."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    saved = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
