"""The SLURM launcher: a server is a batch job submitted from the host (a login node).

- start: the rendered launch script is the batch script (``sbatch --parsable``, job
  name = variant, output to the usual log path under the host's work directory,
  which must be on the filesystem the nodes share); the job id is the record's id;
- probe: ``scontrol show job`` gives the state; while PENDING the reason is the
  phase; once RUNNING ``/health`` is asked on the job's node *through the login
  node* (a direct-tcpip channel of its SSH connection to the node's NodeAddr);
- place: every job gets a port no other recorded job of this host uses, so two
  jobs landing on one node never clash; the port is *claimed* on the login node
  (``run/port-N.claim``, created exclusively) before the job's record exists, so
  points a sweep launches at once, or two variantctl processes, never pick the same
  one (a claim lapses after :data:`CLAIM_TTL_S` or when its job is stopped);
- stop: ``scancel``, then verify the job ended (``--signal=KILL`` after ``grace``).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from variantctl.errors import TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host, SlurmSpec
from variantctl.jsontypes import JsonObject
from variantctl.launch.probe import Probe
from variantctl.runs.record import HostLayout, ServerId, ServerRecord
from variantctl.targets.activity import HostConditions, TreeSample
from variantctl.targets.base import Target
from variantctl.targets.slurm import JobInfo, cancel, job_info, node_address, submit

if TYPE_CHECKING:
    from variantctl.launch.servers import ServerStatus, StopOutcome
    from variantctl.targets.process import ProcIdentity
    from variantctl.variants.model import ResolvedVariant


def waiting_phase(info: JobInfo) -> str:
    """What the watch shows while a job waits: ``queued (Resources)``."""
    return f"queued ({info.reason})" if info.reason else "queued"


#: how long a port claim holds without a record: far longer than the seconds to minutes
#: between choosing the port and recording the submitted job (pre-flight, patches,
#: sbatch); a claim a killed variantctl left lapses after it
CLAIM_TTL_S = 15 * 60


def job_id(record: ServerRecord) -> str:
    """The SLURM job of a SLURM launcher's record: its ``job``; a record written before
    that field existed kept the job id in ``pid``."""
    return record.job if record.job is not None else str(record.pid)


def job_number(record: ServerRecord) -> int:
    """The job id as a number, where a process id would go (``ps``'s process count, a
    stop's remaining list)."""
    return int(job_id(record))


def claim_path(layout: HostLayout, port: int) -> str:
    """The claim file of ``port`` (beside the records; not a ``.json``, so never one)."""
    return f"{layout.run}/port-{port}.claim"


@dataclass
class SlurmLauncher:
    host: Host
    spec: SlurmSpec
    kind: str = "slurm"
    #: wall clock of the claims (the login node's files carry this machine's times)
    clock: Callable[[], float] = field(default=time.time, repr=False)

    def __post_init__(self) -> None:
        # node name -> address, asked once per node (it does not change under a job)
        self._addresses: dict[str, str] = {}

    # -- start ------------------------------------------------------------------------

    def place(self, target: Target, layout: HostLayout, variant: ResolvedVariant
              ) -> ResolvedVariant:
        from variantctl.launch.servers import list_records

        taken = {r.port for r in list_records(target, layout) if r.variant != variant.name}
        first, last = self.spec.ports
        # its own port first, then the host's range
        for port in dict.fromkeys([variant.port, *range(first, last + 1)]):
            if port not in taken and self._claim(target, layout, port, variant.name):
                return variant if port == variant.port else variant.with_overrides(port=port)
        raise VariantctlError(
            f"no free port for {variant.name} on host {self.host.name}: ports {first}-{last} "
            "are all held by recorded jobs or claimed by launches in progress",
            hint="variantctl ps lists them; widen slurm.ports in hosts.yaml",
            exit_code=ExitCode.FAILED,
        )

    def _claim(self, target: Target, layout: HostLayout, port: int, variant: str) -> bool:
        """Claim ``port`` for ``variant``: True when it is now ours. Created exclusively,
        so of two launches choosing at once exactly one gets it; a lapsed claim or one of
        the same variant (a relaunch) is taken over."""
        path = claim_path(layout, port)
        payload = json.dumps({"variant": variant, "at": self.clock()}).encode()
        target.makedirs(layout.run)
        try:
            target.write_new(path, payload)
            return True
        except TargetError as exc:
            if exc.kind != "exists":
                raise
        holder, at = _read_claim(target, path)
        if holder != variant and at is not None and self.clock() - at < CLAIM_TTL_S:
            return False
        # take it over: remove and create again, so a third launch racing for the same
        # lapsed claim still meets the exclusive create
        target.remove(path)
        try:
            target.write_new(path, payload)
        except TargetError as exc:
            if exc.kind != "exists":
                raise
            return False
        return True

    def _release(self, target: Target, layout: HostLayout, port: int, variant: str) -> None:
        """Drop the claim of ``port`` (a stopped job's, or a launch's that never got a
        job) when it is still ``variant``'s."""
        path = claim_path(layout, port)
        holder, _ = _read_claim(target, path)
        if holder == variant:
            target.remove(path)

    def unplace(self, target: Target, layout: HostLayout, variant: ResolvedVariant) -> None:
        self._release(target, layout, variant.port, variant.name)

    def start(self, target: Target, *, name: str, script: str, log: str, pid_file: str,
              cwd: str) -> ServerId:
        # SLURM creates the output file only when the job starts: an empty log now (the
        # job appends to it) lets the watch follow a job still waiting in the queue
        target.write_new(log, b"")
        job = submit(target, self.spec, name=name, script=script, log=log, cwd=cwd)
        # the pid file holds the job id: `ls run/` on the login node tells what runs
        target.write_atomic(pid_file, f"{job}\n".encode())
        return ServerId(job=str(job))

    # -- look -------------------------------------------------------------------------

    def job(self, target: Target, record: ServerRecord) -> JobInfo:
        return job_info(target, self.spec, job_id(record))

    def _address_of(self, target: Target, node: str) -> str:
        if node not in self._addresses:
            self._addresses[node] = node_address(target, self.spec, node)
        return self._addresses[node]

    def _health(self, target: Target, info: JobInfo, port: int) -> int | None:
        from variantctl.targets.process import http_status

        if info.state != "RUNNING" or not info.node:
            return None
        return http_status(target, port, address=self._address_of(target, info.node))

    def identity(self, target: Target, pid: int) -> ProcIdentity | None:
        return None  # the record's id is the job's, never reused by another job soon

    def probe(self, target: Target, record: ServerRecord, *, health: bool = True) -> Probe:
        info = self.job(target, record)
        if info.waiting:
            return Probe(True, None, waiting_phase(info))
        status = self._health(target, info, record.port) if health else None
        return Probe(info.active, status)

    def address(self, target: Target, record: ServerRecord) -> str:
        info = self.job(target, record)
        if not info.node:
            raise VariantctlError(
                f"{record.variant} on host {self.host.name} has no node yet "
                f"({info.describe()})", exit_code=ExitCode.FAILED)
        return self._address_of(target, info.node)

    def statuses(self, target: Target, records: list[ServerRecord], *, probe: bool = True
                 ) -> list[ServerStatus]:
        from variantctl.launch.servers import ServerStatus

        out = []
        for rec in records:
            info = self.job(target, rec)
            status = self._health(target, info, rec.port) if probe else None
            # the job's number stands for its processes (on a node this host cannot see)
            out.append(ServerStatus(rec, (job_number(rec),) if info.active else (),
                                    listening=False, health=status, job=info))
        return out

    def port_in_use(self, target: Target, layout: HostLayout, port: int) -> bool:
        # the node is not known before the job runs; `place` already gave this job a
        # port no other job of this host holds
        return False

    # -- stop -------------------------------------------------------------------------

    def stop(self, target: Target, layout: HostLayout, record: ServerRecord, *,
             grace: float) -> StopOutcome:
        from variantctl.launch.servers import StopOutcome, remove_record
        from variantctl.targets.process import StopResult

        res = cancel(target, self.spec, job_id(record), grace=grace)
        port_free = True
        if res.ok and res.job.node:
            # verify on the node too: nothing may answer on the job's port any more
            with contextlib.suppress(OSError, EOFError, TargetError):
                sock = target.open_tcp(record.port, self._address_of(target, res.job.node), 2.0)
                sock.close()
                port_free = False
        remaining = () if res.ok else (job_number(record),)
        outcome = StopOutcome(record, StopResult(pgid=job_number(record), found=int(res.found),
                                                 killed=res.killed, remaining=remaining,
                                                 seconds=res.seconds),
                              port_free=port_free, was_stale=not res.found, job=res.job)
        if res.ok:
            remove_record(target, layout, record)
            self._release(target, layout, record.port, record.variant)
        return outcome

    def facts(self, target: Target, record: ServerRecord) -> JsonObject | None:
        info = self.job(target, record)
        return {"slurm": {"job_id": info.job_id, "state": info.state, "reason": info.reason,
                          "node": info.node, "exit_code": info.exit_code,
                          "active": info.active}}

    def check_patches(self, variant: ResolvedVariant) -> bool:
        if self.spec.patch_roots == "shared":
            return True
        if variant.requires:
            raise VariantctlError(
                f"variant {variant.name} requires {', '.join(variant.requires)}, but host "
                f"{self.host.name} runs vLLM from the node image (slurm.patch_roots: image), "
                "where variantctl can neither apply nor check patches",
                hint="put vLLM on the shared filesystem and set slurm.patch_roots: shared, "
                "or bake the patch into the image and drop `requires`",
                exit_code=ExitCode.CONFLICT,
            )
        return False

    def cpu_times(self, target: Target, record: ServerRecord) -> TreeSample | None:
        from variantctl.targets.slurm import job_cpu_times

        return job_cpu_times(target, self.spec, job_id(record))

    def conditions(self, target: Target, record: ServerRecord) -> HostConditions:
        # the node's load is not visible from the login node; GPUs are what the job asks
        gres = (self.spec.gres or "").lower()
        declared = self.host.gpu is not None or self.host.gpu_monitor is not None
        return HostConditions(gpus=True if "gpu" in gres or declared else None)


def _read_claim(target: Target, path: str) -> tuple[str | None, float | None]:
    """Who holds a claim and since when; (None, None) for a missing or unreadable one
    (a damaged claim is treated as lapsed: it cannot block a port for ever)."""
    try:
        data = json.loads(target.read_from(path, 0, 4096))
    except (TargetError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    holder, at = data.get("variant"), data.get("at")
    return (holder if isinstance(holder, str) else None,
            float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None)
