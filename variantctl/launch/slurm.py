"""The SLURM launcher: a server is a batch job submitted from the host (a login node).

- start: the rendered launch script is the batch script (``sbatch --parsable``, job
  name = variant, output to the usual log path under the host's work directory,
  which must be on the filesystem the nodes share); the job id is the record's id;
- probe: ``scontrol show job`` gives the state; while PENDING the reason is the
  phase; once RUNNING ``/health`` is asked on the job's node *through the login
  node* (a direct-tcpip channel of its SSH connection to the node's NodeAddr);
- place: every job gets a port no other recorded job of this host uses, so two
  jobs landing on one node never clash;
- stop: ``scancel``, then verify the job ended (``--signal=KILL`` after ``grace``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from variantctl.errors import TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host, SlurmSpec
from variantctl.launch.launcher import Probe
from variantctl.runs.record import HostLayout, ServerRecord
from variantctl.targets.base import Target
from variantctl.targets.slurm import JobInfo, cancel, job_info, node_address, submit

if TYPE_CHECKING:
    from variantctl.launch.servers import ServerStatus, StopOutcome
    from variantctl.variants.model import ResolvedVariant


def slurm_identity(spec: SlurmSpec) -> dict[str, Any]:
    """What of a SLURM host decides a run (the resources a job asks for); how many jobs
    a sweep queues and which ports are handed out do not."""
    return {"partition": spec.partition, "gres": spec.gres, "time": spec.time,
            "account": spec.account, "qos": spec.qos, "sbatch": list(spec.sbatch),
            "patch_roots": spec.patch_roots}


def waiting_phase(info: JobInfo) -> str:
    """What the watch shows while a job waits: ``queued (Resources)``."""
    return f"queued ({info.reason})" if info.reason else "queued"


@dataclass
class SlurmLauncher:
    host: Host
    spec: SlurmSpec
    kind: str = "slurm"

    def __post_init__(self) -> None:
        # node name -> address, asked once per node (it does not change under a job)
        self._addresses: dict[str, str] = {}

    # -- start ------------------------------------------------------------------------

    def place(self, target: Target, layout: HostLayout, variant: ResolvedVariant
              ) -> ResolvedVariant:
        from variantctl.launch.servers import list_records

        taken = {r.port for r in list_records(target, layout) if r.variant != variant.name}
        if variant.port not in taken:
            return variant
        first, last = self.spec.ports
        for port in range(first, last + 1):
            if port not in taken:
                return variant.with_overrides(port=port)
        raise VariantctlError(
            f"no free port for {variant.name} on host {self.host.name}: ports {first}-{last} "
            "are all held by recorded jobs",
            hint="variantctl ps lists them; widen slurm.ports in hosts.yaml",
            exit_code=ExitCode.FAILED,
        )

    def start(self, target: Target, *, name: str, script: str, log: str, pid_file: str,
              cwd: str) -> int:
        # SLURM creates the output file only when the job starts: an empty log now (the
        # job appends to it) lets the watch follow a job still waiting in the queue
        target.write_new(log, b"")
        job = submit(target, self.spec, name=name, script=script, log=log, cwd=cwd)
        # the pid file holds the job id: `ls run/` on the login node tells what runs
        target.write_atomic(pid_file, f"{job}\n".encode())
        return int(job)

    # -- look -------------------------------------------------------------------------

    def job(self, target: Target, record: ServerRecord) -> JobInfo:
        return job_info(target, self.spec, str(record.pid))

    def _address_of(self, target: Target, node: str) -> str:
        if node not in self._addresses:
            self._addresses[node] = node_address(target, self.spec, node)
        return self._addresses[node]

    def _health(self, target: Target, info: JobInfo, port: int) -> int | None:
        from variantctl.targets.process import http_status

        if info.state != "RUNNING" or not info.node:
            return None
        return http_status(target, port, address=self._address_of(target, info.node))

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
            out.append(ServerStatus(rec, (rec.pid,) if info.active else (), listening=False,
                                    health=status, job=info))
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

        res = cancel(target, self.spec, str(record.pid), grace=grace)
        port_free = True
        if res.ok and res.job.node:
            # verify on the node too: nothing may answer on the job's port any more
            with contextlib.suppress(OSError, EOFError, TargetError):
                sock = target.open_tcp(record.port, self._address_of(target, res.job.node), 2.0)
                sock.close()
                port_free = False
        remaining = () if res.ok else (record.pid,)
        outcome = StopOutcome(record, StopResult(record.pid, int(res.found), res.killed,
                                                 remaining, res.seconds),
                              port_free=port_free, was_stale=not res.found, job=res.job)
        if res.ok:
            remove_record(target, layout, record)
        return outcome

    def facts(self, target: Target, record: ServerRecord) -> dict[str, Any] | None:
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
