"""Whether a quiet server still works, and what the machine it runs on is like.

A log that says nothing for a while is not by itself a hang: under load, or while
torch.compile or the engine's configuration runs, a healthy start can be silent for
minutes. What tells them apart is work: a hung process waits (a sleeping process uses no
CPU), a slow one computes. Everything here acts through the :class:`Target` interface
(``run`` of POSIX ``sh`` over Linux ``/proc``, ``read_from``, ``listdir``), so it behaves
the same on this machine and over SSH; SLURM jobs, which run on a node the target does
not see, are measured by :mod:`variantctl.targets.slurm` (``sstat``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from variantctl.errors import TargetError
from variantctl.targets.base import Target

#: clock ticks per second of ``/proc/<pid>/stat``'s times (USER_HZ: 100 on every Linux
#: architecture vLLM runs on)
USER_HZ = 100
#: ``/dev`` entries of GPU (and other accelerator) devices, by prefix
GPU_DEVICE_PREFIXES = ("nvidia", "kfd", "davinci", "iluvatar", "accel")


@dataclass(frozen=True)
class HostConditions:
    """What the machine a server runs on is like when its start is judged; None where
    it is not known (a SLURM node's load)."""

    #: 1-minute load average
    load: float | None = None
    #: online CPU cores
    cores: int | None = None
    #: whether the machine has GPU devices (None: cannot tell)
    gpus: bool | None = None

    @property
    def loaded(self) -> bool:
        """More runnable work than cores: everything on the machine runs slower."""
        return self.load is not None and self.cores is not None and self.load >= self.cores

    def describe_load(self) -> str:
        """``load average 9.0 on 2 cores`` (empty when unknown)."""
        if self.load is None or not self.cores:
            return ""
        return f"load average {self.load:.1f} on {self.cores} core{'s' if self.cores != 1 else ''}"


@dataclass(frozen=True)
class TreeSample:
    """One look at a server's processes (or a SLURM job's steps)."""

    #: CPU seconds (user + system) used so far, by process id (or job step)
    cpu: Mapping[str, float]
    #: processes running or runnable (``R``) or waiting for the disk (``D``) at the look:
    #: working, even when a loaded host or a slow disk gives them little CPU; a hung
    #: process sleeps (``S``) on a lock, a socket or a collective
    active: tuple[str, ...] = ()


def parse_group_cpu(text: str, pgid: int) -> TreeSample | None:
    """CPU seconds (user + system, with the children they waited for: the compilers
    torch.compile starts) of each live process of process group or session ``pgid`` in
    concatenated ``/proc/*/stat`` lines, by pid, and which of them run or wait for the
    disk; None when none is alive.

    Per process, because the tree changes while a server starts: a helper that exits
    takes its time with it, and a sum over the tree would then shrink and hide the work
    of the others (:func:`cpu_used`)."""
    out: dict[str, float] = {}
    active: list[str] = []
    for line in text.splitlines():
        head, sep, rest = line.partition(" (")
        if not sep or not head.strip().isdigit():
            continue
        _comm, sep, tail = rest.rpartition(") ")
        fields = tail.split()
        # fields[0] is stat's 3rd field (state): pgrp 5, session 6, utime..cstime 14-17
        if not sep or len(fields) < 15 or fields[0] in ("Z", "X"):
            continue
        try:
            if pgid not in (int(fields[2]), int(fields[3])):
                continue
            out[head.strip()] = sum(int(f) for f in fields[11:15]) / USER_HZ
        except ValueError:
            continue
        if fields[0] in ("R", "D"):
            active.append(head.strip())
    return TreeSample(out, tuple(active)) if out else None


def cpu_used(before: Mapping[str, float], after: Mapping[str, float]) -> float:
    """CPU seconds the processes of ``after`` used since ``before`` (a process that is new
    counts with all its time; one that ended counts no more)."""
    return sum(max(0.0, t - before.get(k, 0.0)) for k, t in after.items())


def group_cpu_times(target: Target, pgid: int) -> TreeSample | None:
    """CPU seconds used so far by each process of the server whose process group is
    ``pgid`` (see :func:`parse_group_cpu`); None when it is gone or ``/proc`` cannot be
    read."""
    try:
        res = target.run(["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null; true"], timeout=30)
    except TargetError as exc:
        if exc.kind == "unreachable":
            raise
        return None
    return parse_group_cpu(res.stdout, pgid)


def parse_cores(stat_text: str) -> int | None:
    """Online cores from ``/proc/stat`` (its ``cpuN`` lines)."""
    n = sum(1 for line in stat_text.splitlines()
            if line.startswith("cpu") and line[3:4].isdigit())
    return n or None


def host_conditions(target: Target) -> HostConditions:
    """Load average, cores and GPU devices of the machine ``target`` runs on: three
    small reads, none of which starts a process; what cannot be read stays None."""
    load = cores = None
    gpus: bool | None = None
    try:
        text = target.read_from("/proc/loadavg", 0, 4096).decode("ascii", "replace")
        load = float(text.split()[0])
    except (TargetError, ValueError, IndexError) as exc:
        if isinstance(exc, TargetError) and exc.kind == "unreachable":
            raise
    try:
        cores = parse_cores(target.read_from("/proc/stat", 0, 1 << 20).decode("ascii",
                                                                              "replace"))
    except TargetError as exc:
        if exc.kind == "unreachable":
            raise
    try:
        names = target.listdir("/dev")
        gpus = any(n.startswith(GPU_DEVICE_PREFIXES) for n in names)
    except TargetError as exc:
        if exc.kind == "unreachable":
            raise
    return HostConditions(load=load, cores=cores, gpus=gpus)
