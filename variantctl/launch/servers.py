"""Servers variantctl started on a host: records, status, stop.

A record (``<workdir>/run/<variant>.json``) is written when a server starts and
removed when it is stopped. A record whose process is gone is *stale* (the
server died or the host rebooted); ``ps`` shows it, ``stop`` and ``launch``
clean it up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.errors import TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.jsontypes import JsonObject
from variantctl.runs.record import HostLayout, ServerRecord
from variantctl.targets.base import Target
from variantctl.targets.process import (
    UNVERIFIABLE,
    ProcIdentity,
    ProcInfo,
    StopResult,
    boot_id,
    foreign_listener,
    http_status,
    listening_ports,
    occupant_of,
    process_table,
    stop_group,
)

if TYPE_CHECKING:
    from variantctl.targets.slurm import JobInfo


def resolve_workdir(target: Target, host: Host) -> str:
    """The host's work directory with ``~`` expanded on that host."""
    return target.expand_user(host.workdir)


def layout_for(target: Target, host: Host) -> HostLayout:
    return HostLayout(resolve_workdir(target, host))


def project_id(runs_root: Path) -> str:
    """Which project a record belongs to: this machine and the project's ``runs/``
    (two projects may share a host's work directory, and so its records)."""
    import socket

    return f"{socket.gethostname()}:{runs_root.resolve()}"


def foreign_owner(record: ServerRecord, runs_root: Path) -> str | None:
    """Why ``record`` is another project's (None: it is this one's, or names no run
    directory to write into). A record without a project (an older variantctl) is
    judged by its run directory: outside this project's ``runs/``, it is another's."""
    if record.project is not None:
        return None if record.project == project_id(runs_root) else (
            f"it was launched by another project ({record.project})")
    if record.run_dir is None:
        return None
    run_dir = Path(record.run_dir)
    if run_dir.resolve().parent == runs_root.resolve():
        return None
    return f"its run directory {run_dir} is not in this project's {runs_root}"


def refuse_foreign(record: ServerRecord, runs_root: Path, what: str) -> None:
    """Raise (exit 3) when ``record`` is another project's: ``what`` would write into
    its runs/ through the record."""
    owner = foreign_owner(record, runs_root)
    if owner is not None:
        raise VariantctlError(
            f"{record.variant} on host {record.host}: {owner}; not {what} from this project "
            "(nothing written)",
            hint="run it from the project that launched it, or give this project its own "
            "host workdir in hosts.yaml", exit_code=ExitCode.CONFLICT)


def save_record(target: Target, layout: HostLayout, record: ServerRecord) -> None:
    target.makedirs(layout.run)
    data = json.dumps(record.to_dict(), indent=2).encode()
    target.write_atomic(layout.record(record.variant), data)


def load_record(target: Target, layout: HostLayout, variant: str) -> ServerRecord | None:
    try:
        raw = target.read_bytes(layout.record(variant))
    except TargetError as exc:
        if exc.kind == "not-found":
            return None
        raise
    return _parse(raw)


def _parse(raw: bytes) -> ServerRecord | None:
    try:
        return ServerRecord.from_dict(json.loads(raw))
    except (ValueError, KeyError, TypeError):
        return None  # a torn or foreign file: treated as absent


def list_records(target: Target, layout: HostLayout) -> list[ServerRecord]:
    try:
        names = target.listdir(layout.run)
    except TargetError as exc:
        if exc.kind == "not-found":
            return []
        raise
    out = []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            rec = _parse(target.read_bytes(f"{layout.run}/{name}"))
        except TargetError:
            continue
        if rec is not None:
            out.append(rec)
    return out


def remove_record(target: Target, layout: HostLayout, record: ServerRecord) -> None:
    target.remove(layout.record(record.variant))
    target.remove(record.pid_file)


@dataclass(frozen=True)
class ServerStatus:
    record: ServerRecord
    #: live pids of its process group / session
    members: tuple[int, ...]
    listening: bool
    #: HTTP status of /health, None when nothing answered (or not asked)
    health: int | None
    #: the SLURM job behind the record (None for a process started on the host)
    job: JobInfo | None = None
    #: who listens on the record's port when it is not the server's process group
    #: (``pid 812 (python3 other.py)``): another server, never called healthy or measured
    foreign: str | None = None

    @property
    def alive(self) -> bool:
        return bool(self.members)

    @property
    def state(self) -> str:
        if not self.alive:
            return "stale"
        if self.job is not None and self.job.waiting:
            return "pending"
        if self.foreign is not None:
            return FOREIGN
        if self.job is not None and self.health != 200:
            # the job runs; its node's ports are not read, only /health is asked
            return f"unhealthy ({self.health})" if self.health else "starting"
        if self.health == 200:
            return "healthy"
        if self.listening:
            return f"unhealthy ({self.health})" if self.health else "listening"
        return "starting"


#: the state of a record whose port another process serves
FOREIGN = "port-taken"


def record_identity(record: ServerRecord) -> ProcIdentity | None:
    """The identity a record gives its process (None: it carries none)."""
    if record.boot_id is None:
        return None
    return ProcIdentity(record.boot_id, record.proc_start)


def members_of(table: list[ProcInfo], pgid: int, identity: ProcIdentity | None = None,
               boot: str | None = None) -> tuple[int, ...]:
    """Live pids of group/session ``pgid``; none when its leader is alive but another
    process than ``identity`` names (the server ended and its pid was reused)."""
    if identity is not None:
        leader = next((p for p in table if p.pid == pgid), None)
        if occupant_of(leader, identity, boot):
            return ()
    return tuple(sorted(p.pid for p in table if p.alive and pgid in (p.pgid, p.sid)))


def statuses(
    target: Target, records: list[ServerRecord], *, probe: bool = True
) -> list[ServerStatus]:
    """Status of each record, with one process-table and one port read for all."""
    if not records:
        return []
    table = process_table(target)
    ports = listening_ports(target)
    boot = boot_id(target) if any(r.boot_id is not None for r in records) else None
    out = []
    for rec in records:
        # a SLURM job's record (no pid) has no process on this host
        members = (members_of(table, rec.pid, record_identity(rec), boot)
                   if rec.pid is not None else ())
        listening = bool(members) and rec.port in ports
        # the port counts only when the server's own process group listens there (what
        # launch's watch checks): another process's /health is not this server's
        other = (foreign_listener(target, rec.pid, rec.port)
                 if probe and listening and rec.pid is not None else None)
        health = http_status(target, rec.port) if (probe and listening) else None
        out.append(ServerStatus(rec, members, listening, health,
                                foreign=other.describe_listener() if other else None))
    return out


@dataclass(frozen=True)
class StopOutcome:
    record: ServerRecord
    result: StopResult
    port_free: bool
    was_stale: bool
    #: the SLURM job as it ended (None for a process started on the host)
    job: JobInfo | None = None

    @property
    def ok(self) -> bool:
        return self.result.ok and self.port_free


def stop_server(
    target: Target, layout: HostLayout, record: ServerRecord, *, grace: float = 10.0,
    python: str = "python3",
) -> StopOutcome:
    """Stop the whole group, verify no process remains and the port is free,
    then remove the record (kept when something survived, so a retry can see it)."""
    if record.pid is None:
        raise VariantctlError(
            f"{record.variant} on host {record.host} is a SLURM job ({record.ident}), but "
            "the host no longer submits jobs (no slurm: in variants/hosts.yaml)",
            hint=f"scancel {record.job} on the login node, or restore the host's slurm: "
            "section and stop again", exit_code=ExitCode.CONFLICT)
    # verified on the host just before any signal: a pid reused by another process is
    # never signalled (a record without an identity is not trusted with a live pid)
    result = stop_group(target, record.pid, grace=grace, python=python,
                        verify=record_identity(record) or UNVERIFIABLE)
    port_free = record.port not in listening_ports(target)
    if result.ok and not port_free:
        # the port may close a moment after the last process dies
        import time

        for _ in range(20):
            time.sleep(0.1)
            port_free = record.port not in listening_ports(target)
            if port_free:
                break
    outcome = StopOutcome(record, result, port_free, was_stale=result.found == 0)
    if result.ok:
        remove_record(target, layout, record)
    return outcome


def stop_dict(host: str, s: StopOutcome) -> JsonObject:
    """What a stop did, as JSON (``stop --json`` and run.json)."""
    return {
        "host": host,
        "variant": s.record.variant,
        "pid": s.record.pid,
        "port": s.record.port,
        "stale": s.was_stale,
        "processes": s.result.found,
        "killed": s.result.killed,
        "remaining": list(s.result.remaining),
        "port_free": s.port_free,
        "seconds": round(s.result.seconds, 3),
        "ok": s.ok,
        **({"occupant": {"pid": s.result.occupant.pid, "command": s.result.occupant.cmdline
                         or s.result.occupant.comm, "verified": s.result.occupant.foreign}}
           if s.result.occupant is not None else {}),
        **({"job": {"id": s.job.job_id, "state": s.job.state, "exit_code": s.job.exit_code}}
           if s.job is not None else {}),
    }
