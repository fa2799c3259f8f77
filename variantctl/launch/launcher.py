"""The launcher: how a server is started, found, probed and stopped on a host.

One declared interface for every place a server can run, so launch, watch, ps, stop
and logs are written once (DEVELOPERS.md: every feature works on every target):

- :class:`ProcessLauncher` starts the launch script as a detached process group on
  the host itself (``targets/process.py``): the pid is the record's id;
- :class:`~variantctl.launch.slurm.SlurmLauncher` submits it as a SLURM batch job from
  the host (a login node): the job id is the record's id, the server runs on whatever
  node SLURM picks.

The host selects its launcher (:func:`launcher_for`): a host with ``slurm:`` submits
jobs, any other starts processes. One launcher per loaded host lives as long as that
host value (the command's), so what a launcher caches (a SLURM node's address) lasts
for the command.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from variantctl.hostmodel import Host
from variantctl.jsontypes import JsonObject
from variantctl.launch.probe import Probe
from variantctl.runs.record import HostLayout, ServerId, ServerRecord
from variantctl.targets.activity import HostConditions, TreeSample
from variantctl.targets.base import Target

if TYPE_CHECKING:
    from variantctl.launch.servers import ServerStatus, StopOutcome
    from variantctl.targets.process import ProcIdentity
    from variantctl.variants.model import ResolvedVariant


class Launcher(Protocol):
    """Start a script as a server, say where it runs and whether it is alive, stop it."""

    #: ``process`` or ``slurm`` (ps and run.json show it)
    kind: str

    def place(self, target: Target, layout: HostLayout, variant: ResolvedVariant
              ) -> ResolvedVariant:
        """The variant as it will run (a SLURM job gets a port of its own)."""
        ...

    def start(self, target: Target, *, name: str, script: str, log: str, pid_file: str,
              cwd: str) -> ServerId:
        """Start ``script`` with its output to ``log``; the id the record keeps (a
        process's pid, a SLURM job's id)."""
        ...

    def unplace(self, target: Target, layout: HostLayout, variant: ResolvedVariant) -> None:
        """Undo :meth:`place` for a launch that ended before its server was recorded
        (refused by pre-flight or by ``sbatch``): what it reserved is released."""
        ...

    def identity(self, target: Target, pid: int) -> ProcIdentity | None:
        """What tells the started server (id ``pid``) from a later process given the same
        id, recorded with it and verified before any signal (None: its id is never
        reused, as a SLURM job's)."""
        ...

    def probe(self, target: Target, record: ServerRecord, *, health: bool = True) -> Probe:
        """Alive, waiting, and (when ``health``) /health where it runs."""
        ...

    def address(self, target: Target, record: ServerRecord) -> str:
        """The address its port listens on, as the host sees it (for a forward)."""
        ...

    def statuses(self, target: Target, records: list[ServerRecord], *, probe: bool = True
                 ) -> list[ServerStatus]:
        """The status of each record (what ``ps`` shows)."""
        ...

    def port_in_use(self, target: Target, layout: HostLayout, port: int) -> bool:
        """Whether ``port`` is taken where the server will run."""
        ...

    def stop(self, target: Target, layout: HostLayout, record: ServerRecord, *,
             grace: float) -> StopOutcome:
        """Stop it, verify it ended, remove its record (kept when it survived)."""
        ...

    def facts(self, target: Target, record: ServerRecord) -> JsonObject | None:
        """What the launcher knows of the server beyond its log, recorded with the run's
        facts (a SLURM job's id, state, node and exit code); None: nothing."""
        ...

    def check_patches(self, variant: ResolvedVariant) -> bool:
        """Whether the host's patch roots are the ones the server runs (then their state
        is read and ``requires`` enforced there); refuses a variant whose ``requires``
        cannot be checked."""
        ...

    def cpu_times(self, target: Target, record: ServerRecord) -> TreeSample | None:
        """CPU seconds each of the server's processes (or job steps) has used so far, and
        which of them run (None: gone, or the launcher cannot tell): a quiet log over
        working processes is a slow start, not a hang (launch/watch.py)."""
        ...

    def conditions(self, target: Target, record: ServerRecord) -> HostConditions:
        """The machine the server runs on (load, cores, GPUs), for a verdict's hints."""
        ...


class ProcessLauncher:
    """Today's behaviour: a detached process group on the host (targets/process.py)."""

    kind = "process"

    def __init__(self, host: Host | None = None):
        self.python = host.python if host is not None else "python3"
        #: the host declares GPUs (a monitor or peaks in hosts.yaml)
        self.declares_gpus = host is not None and (host.gpu is not None
                                                   or host.gpu_monitor is not None)

    def place(self, target: Target, layout: HostLayout, variant: ResolvedVariant
              ) -> ResolvedVariant:
        return variant

    def unplace(self, target: Target, layout: HostLayout, variant: ResolvedVariant) -> None:
        return None

    def start(self, target: Target, *, name: str, script: str, log: str, pid_file: str,
              cwd: str) -> ServerId:
        from variantctl.targets.process import spawn_detached

        return ServerId(pid=spawn_detached(target, script, log_path=log, pid_path=pid_file))

    def identity(self, target: Target, pid: int) -> ProcIdentity | None:
        from variantctl.targets.process import identify

        return identify(target, pid)

    def probe(self, target: Target, record: ServerRecord, *, health: bool = True) -> Probe:
        from variantctl.launch.servers import record_identity
        from variantctl.targets.process import (
            foreign_listener,
            http_status,
            is_alive,
            verify_pid,
        )

        status = http_status(target, record.port) if health else None
        if status == 200:
            # the answer counts only when the server's own process listens: one that
            # lost the port to another process (bound between launch's check and its
            # bind) would be called ready on the other's /health
            if record.pid is None:
                return Probe(True, status)
            other = foreign_listener(target, record.pid, record.port)
            if other is None:
                return Probe(True, status)
            return Probe(is_alive(target, record.pid), status,
                         foreign_listener=other.describe_listener())
        if record.pid is None:
            return Probe(False, status)  # a SLURM job's record: no process here
        identity = record_identity(record)
        if identity is not None and verify_pid(target, record.pid, identity) is not None:
            return Probe(False, status)  # its pid belongs to another process now
        return Probe(is_alive(target, record.pid), status)

    def address(self, target: Target, record: ServerRecord) -> str:
        return "127.0.0.1"

    def statuses(self, target: Target, records: list[ServerRecord], *, probe: bool = True
                 ) -> list[ServerStatus]:
        from variantctl.launch.servers import statuses

        return statuses(target, records, probe=probe)

    def port_in_use(self, target: Target, layout: HostLayout, port: int) -> bool:
        from variantctl.targets.process import port_in_use

        return port_in_use(target, port)

    def stop(self, target: Target, layout: HostLayout, record: ServerRecord, *,
             grace: float) -> StopOutcome:
        from variantctl.launch.servers import stop_server

        return stop_server(target, layout, record, grace=grace, python=self.python)

    def facts(self, target: Target, record: ServerRecord) -> JsonObject | None:
        return None

    def check_patches(self, variant: ResolvedVariant) -> bool:
        return True

    def cpu_times(self, target: Target, record: ServerRecord) -> TreeSample | None:
        from variantctl.targets.activity import group_cpu_times

        return None if record.pid is None else group_cpu_times(target, record.pid)

    def conditions(self, target: Target, record: ServerRecord) -> HostConditions:
        from variantctl.targets.activity import host_conditions

        found = host_conditions(target)
        return replace(found, gpus=True) if self.declares_gpus else found


#: id of a loaded Host -> its launcher, dropped when that Host value is collected (a
#: SLURM launcher refers to its host: kept as long as the process, never handed to another)
_LAUNCHERS: dict[int, Launcher] = {}
_LAUNCHERS_LOCK = threading.Lock()


def launcher_for(host: Host) -> Launcher:
    """The launcher ``host`` selects: SLURM jobs for a ``slurm:`` host, else processes.

    The same one for the same host value (the command's loaded host), from every caller
    and thread: its caches last for the command. A host loaded again (the next command,
    another project) gets a fresh one."""
    with _LAUNCHERS_LOCK:
        found = _LAUNCHERS.get(id(host))
        if found is None:
            found = _new_launcher(host)
            _LAUNCHERS[id(host)] = found
            weakref.finalize(host, _LAUNCHERS.pop, id(host), None)
        return found


def _new_launcher(host: Host) -> Launcher:
    if host.slurm is not None:
        from variantctl.launch.slurm import SlurmLauncher

        return SlurmLauncher(host, host.slurm)
    return ProcessLauncher(host)


def stop_servers(
    target: Target, host: Host, variant: str | None, *, grace: float = 10.0
) -> list[StopOutcome]:
    """Stop ``variant`` (or every recorded server when None) on one host."""
    from variantctl.launch.servers import layout_for, list_records, load_record

    launcher = launcher_for(host)
    layout = layout_for(target, host)
    if variant is not None:
        rec = load_record(target, layout, variant)
        records = [rec] if rec is not None else []
    else:
        records = list_records(target, layout)
    return [launcher.stop(target, layout, r, grace=grace) for r in records]
