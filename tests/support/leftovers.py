"""Processes a test run (or ``make demo``) left behind, and ending them safely.

A process is the run's when its working directory or its command line lies under one of
the run's temp roots (every test's ``tmp_path``, the sshd lab, the SLURM cluster and the
servers they start live there), or when it carries the run's marker in its environment
(everything started locally inherits it; a process started through sshd or slurmd does
not, but runs in a temp dir). It is ended only by its verified identity: the pid *and*
the start time the kernel recorded for it (``/proc/PID/stat`` field 22), read again
right before each signal, so a pid reused by an unrelated process is never signalled.

Used by the per-test reaper and the session-end check in ``tests/conftest.py`` and at the
end of ``scripts/demo.py`` (issue 33). Standard library only: the demo imports it too.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: environment variable the run's root process sets; its children inherit it
MARKER = "VARIANTCTL_SUITE_RUN"
#: what a command line is shown as at most in a report
_SHOWN = 160


@dataclass(frozen=True)
class Proc:
    pid: int
    #: clock ticks since boot when the process started: with the pid, its identity
    started: int
    cwd: str
    cmdline: str

    def describe(self) -> str:
        cmd = self.cmdline if len(self.cmdline) <= _SHOWN else self.cmdline[:_SHOWN] + "…"
        # a command line is data from another process: show control characters
        cmd = cmd.encode("unicode_escape", "backslashreplace").decode("ascii")
        return f"pid {self.pid} (cwd {self.cwd}): {cmd}"


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = stat[stat.rfind(b")") + 2:].split()
    try:
        return int(fields[19])  # field 22 overall
    except (IndexError, ValueError):
        return None


def _read(pid: int) -> Proc | None:
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = ""  # another user's process, or a zombie: judged by its command line alone
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[:4096]
    except OSError:
        return None
    started = start_time(pid)
    if started is None:
        return None
    return Proc(pid, started, cwd, raw.replace(b"\0", b" ").decode("utf-8", "replace").strip())


def _has_marker(pid: int, marker: str) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{MARKER}={marker}".encode() in environ.split(b"\0")


def _ancestors() -> set[int]:
    """This process and every process above it: never candidates (a test may chdir)."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
            pid = int(stat[stat.rfind(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def find(roots: Iterable[Path], *, marker: str | None = None,
         exclude: Iterable[int] = ()) -> list[Proc]:
    """Live processes whose cwd or command line is under one of ``roots``, or that carry
    ``marker``; never this process, its ancestors or ``exclude``."""
    prefixes = [str(Path(r).resolve()) for r in roots]
    skip = _ancestors() | set(exclude)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        proc = _read(int(entry))
        if proc is None or _zombie(proc.pid):
            continue
        hit = any(_under(proc.cwd, p) or p in proc.cmdline for p in prefixes)
        if hit or (marker is not None and _has_marker(proc.pid, marker)):
            found.append(proc)
    return found


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + os.sep)


def _zombie(pid: int) -> bool:
    """A zombie has run its course; only its parent's wait is missing."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:][:1] in (b"Z", b"X")


def _signal(proc: Proc, sig: int) -> bool:
    """Send ``sig`` only if the pid still names the process we found."""
    if start_time(proc.pid) != proc.started:
        return False
    try:
        os.kill(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def alive(proc: Proc) -> bool:
    return start_time(proc.pid) == proc.started and not _zombie(proc.pid)


def end(procs: Iterable[Proc], grace: float = 2.0) -> list[Proc]:
    """SIGTERM each (identity verified), SIGKILL what is left after ``grace`` seconds.
    Returns the processes that were still alive when asked to end."""
    asked = [p for p in procs if _signal(p, signal.SIGTERM)]
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in asked):
        time.sleep(0.05)
    for p in asked:
        if alive(p):
            _signal(p, signal.SIGKILL)
    return asked


def settle(roots: Iterable[Path], *, marker: str | None = None, exclude: Iterable[int] = (),
           seconds: float = 10.0) -> list[Proc]:
    """What is still alive after waiting up to ``seconds`` for the run's processes to end
    on their own (a fixture's stop may still be finishing)."""
    roots = list(roots)
    deadline = time.monotonic() + seconds
    while True:
        left = find(roots, marker=marker, exclude=exclude)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)
