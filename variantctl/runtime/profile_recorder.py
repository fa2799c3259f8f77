"""RUNTIME of the ``instrument`` operation: the timing recorder that runs inside vLLM.

This file is never imported by variantctl itself at run time: its *source text*
is inlined, as a string, into every file an ``instrument`` operation patches
(:mod:`variantctl.patching.instrument`), and executed once per process into a
module object registered as :data:`RUNTIME_NAME`. So it must stay self-contained:
standard library only, no variantctl import, no three single quotes in a row (it is embedded in a
triple-quoted string), nothing done at import but definitions.

Decision at decoration time: :func:`point` reads ``VARIANTCTL_PROFILE`` when the
patched module is imported (the server's start). Unset or empty, it returns the
function itself, so an unprofiled server runs exactly the original code (zero
cost per call, not even a check). Set to a directory, each call of a decorated
function records ``(name, start, duration, thread, parent, depth)`` into a
per-process buffer. The buffer is bounded: it is written out when it holds
:data:`FLUSH_EVERY` events, every :data:`FLUSH_INTERVAL_S` seconds by a daemon
thread (so a benchmark level's events are on disk shortly after the level), and
at exit; events that cannot be written (disk full, directory gone) are counted
and dropped, never kept growing.

File format (``DIR/prof-<pid>.jsonl``, appended): a header object per process
start ``{"variantctl_profile": 1, "pid", "wall_ns", "mono_ns", "argv"}`` anchoring
the monotonic clock to wall time, then one JSON array per event
``[name, start_mono_ns, dur_ns, tid, parent, depth]``, and ``{"dropped": N}``
lines when events were lost. ``time.perf_counter_ns`` is CLOCK_MONOTONIC on
Linux, one clock for every process of the host, so events of the API server and
of the engine-core process line up.

``sync=True`` synchronises the device (CUDA, when torch has initialised it)
before each clock reading, so a duration includes the kernels the call queued;
without it, GPU numbers are host time only (kernel launches are asynchronous).
"""

from __future__ import annotations

import atexit
import collections
import functools
import inspect
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    #: ``(name, start_ns, dur_ns, tid, parent, depth)``
    Event = tuple[str, int, int, int, str | None, int]
    #: a thread's ``(call stack, native thread id)``
    ThreadState = tuple[list[str], int]

#: a decorated vLLM function: wrapped, never called with arguments of our own
F = TypeVar("F", bound=Callable[..., object])

ENV = "VARIANTCTL_PROFILE"
#: the module name the runtime registers under in ``sys.modules`` (versioned: two
#: variantctl releases' patched files in one process each find their own)
RUNTIME_NAME = "_variantctl_profile_runtime_1"
FLUSH_EVERY = 2048
FLUSH_INTERVAL_S = 0.5
#: events kept at most while writing fails
MAX_BUFFER = FLUSH_EVERY * 8

_state: dict[str, Recorder | None] = {"recorder": None}
_state_lock = threading.Lock()


def _identity(fn: F) -> F:
    return fn


def _sync() -> None:
    torch = sys.modules.get("torch")
    if torch is None:
        return
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            cuda.synchronize()
    except Exception:  # a profiler must never break the server
        pass


class Recorder:
    """The per-process event buffer and its writer.

    The buffer is a deque: ``append`` and ``popleft`` are atomic under the GIL, so a
    recorded call takes no lock and the writer never loses an event appended while it
    drains. Each thread keeps its call stack and its native thread id (a system call,
    made once per thread) in a thread-local.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.buf: collections.deque[Event] = collections.deque()
        self.dropped = 0
        self.io_lock = threading.Lock()
        self.start_lock = threading.Lock()
        self.local = threading.local()
        self.pid = os.getpid()
        self.header_written = False
        self.flusher: threading.Thread | None = None
        self.names: dict[str, str] = {}

    def thread_state(self) -> ThreadState:
        """``(call stack, native thread id)`` of the calling thread."""
        st: ThreadState = ([], threading.get_native_id())
        self.local.st = st
        return st

    def add(self, event: Event) -> None:
        # no getpid() here (a system call per event): a fork resets the recorder through
        # os.register_at_fork
        buf = self.buf
        n = len(buf)
        if n >= MAX_BUFFER:
            self.dropped += 1
            return
        buf.append(event)
        if self.flusher is None:
            self.start_flusher()
        if (n + 1) % FLUSH_EVERY == 0:
            self.flush()

    def start_flusher(self) -> None:
        with self.start_lock:
            if self.flusher is not None:
                return
            thread = self.flusher = threading.Thread(target=self.flush_loop,
                                                     name="variantctl-profile", daemon=True)
        thread.start()

    def flush_loop(self) -> None:
        me = self.flusher
        while self.flusher is me:
            time.sleep(FLUSH_INTERVAL_S)
            self.flush()

    def flush(self) -> None:
        with self.io_lock:
            buf = self.buf
            pop = buf.popleft
            events = [pop() for _ in range(len(buf))]
            dropped, self.dropped = self.dropped, 0
            if not events and not dropped:
                return
            lines: list[str] = []
            if not self.header_written:
                lines.append(json.dumps({
                    "variantctl_profile": 1, "pid": self.pid, "wall_ns": time.time_ns(),
                    "mono_ns": time.perf_counter_ns(), "argv": sys.argv[:4]}))
            # json.dumps per event costs microseconds; names are few: encode each once
            names = self.names
            for name, start, dur, tid, parent, depth in events:
                qn = names.get(name)
                if qn is None:
                    qn = names[name] = json.dumps(name)
                if parent is None:
                    qp = "null"
                else:
                    qparent = names.get(parent)
                    if qparent is None:
                        qparent = names[parent] = json.dumps(parent)
                    qp = qparent
                lines.append(f"[{qn},{start},{dur},{tid},{qp},{depth}]")
            if dropped:
                lines.append(json.dumps({"dropped": dropped}))
            path = os.path.join(self.directory, f"prof-{self.pid}.jsonl")
            try:
                os.makedirs(self.directory, exist_ok=True)
                with open(path, "a", encoding="utf-8") as f:
                    f.write("\n".join(lines) + "\n")
                self.header_written = True
            except OSError:
                self.dropped += len(events) + dropped

    def reset_after_fork(self) -> None:
        # the child inherits the parent's buffer (its events are the parent's to
        # write) but not its flusher thread, and its threads have new ids
        self.buf = collections.deque()
        self.dropped = 0
        self.io_lock = threading.Lock()
        self.start_lock = threading.Lock()
        self.local = threading.local()
        self.pid = os.getpid()
        self.header_written = False
        self.flusher = None


def recorder(directory: str) -> Recorder:
    """The process's recorder (one per process, whatever the directory of later calls)."""
    with _state_lock:
        rec = _state["recorder"]
        if rec is None:
            rec = _state["recorder"] = Recorder(directory)
            atexit.register(rec.flush)
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(after_in_child=rec.reset_after_fork)
        return rec


def point(name: str, sync: bool = False) -> Callable[[F], F]:
    """The decorator for one profile point (the identity when profiling is off)."""
    directory = os.environ.get(ENV, "")
    if not directory:
        return _identity
    rec = recorder(directory)
    clock = time.perf_counter_ns

    def decorate(fn: F) -> F:
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            return fn  # a generator's time is spent between its yields: not a call's time
        if inspect.iscoroutinefunction(fn):
            call = cast("Callable[..., Awaitable[object]]", fn)

            @functools.wraps(fn)
            async def awrapper(*args: object, **kwargs: object) -> object:
                try:
                    st = rec.local.st
                except AttributeError:
                    st = rec.thread_state()
                stack = st[0]
                parent = stack[-1] if stack else None
                t0 = clock()
                stack.append(name)
                try:
                    return await call(*args, **kwargs)
                finally:
                    t1 = clock()
                    stack.pop()
                    rec.add((name, t0, t1 - t0, st[1], parent, len(stack)))
            return cast(F, awrapper)

        @functools.wraps(fn)
        def wrapper(*args: object, **kwargs: object) -> object:
            try:
                st = rec.local.st
            except AttributeError:
                st = rec.thread_state()
            stack = st[0]
            parent = stack[-1] if stack else None
            if sync:
                _sync()
            t0 = clock()
            stack.append(name)
            try:
                return fn(*args, **kwargs)
            finally:
                if sync:
                    _sync()
                t1 = clock()
                stack.pop()
                rec.add((name, t0, t1 - t0, st[1], parent, len(stack)))
        return cast(F, wrapper)

    return decorate
