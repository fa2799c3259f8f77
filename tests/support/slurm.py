"""A real single-node SLURM cluster on this machine for the SLURM tier.

Debian's ``munged``, ``slurmctld`` and ``slurmd`` (``scripts/ensure-slurm.sh``
installs them) run as root from a temp directory: a fresh munge key and socket,
a ``slurm.conf`` generated for this machine's CPUs and memory (``slurmd -C``),
free ports for the controller and the daemon, every state/spool/log/pid file in
that directory. Nothing touches /etc or systemd; commands find the cluster
through ``SLURM_CONF`` (the host's ``slurm.conf:`` setting in hosts.yaml does
the same for variantctl over SSH). The node registers with NodeAddr=127.0.0.1,
so a job's server is reached on this machine's loopback through the login node.

Partitions: ``debug`` (up, default) and ``held`` (down: a job submitted there
stays PENDING with reason PartitionDown).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.sshd import free_port

DAEMONS = ("munged", "slurmctld", "slurmd")


def missing() -> list[str]:
    """Programs of the cluster that are not installed."""
    need = (*DAEMONS, "sbatch", "scontrol", "scancel", "squeue", "sacct")
    return [p for p in need if shutil.which(p) is None and not Path("/usr/sbin", p).exists()]


def machine() -> tuple[str, int, int]:
    """(node name, CPUs, RealMemory MB) of this machine, as slurmd sees it."""
    out = subprocess.run(["slurmd", "-C"], check=True, capture_output=True, text=True).stdout
    fields = dict(w.split("=", 1) for w in out.split() if "=" in w)
    return fields["NodeName"], int(fields["CPUs"]), int(fields["RealMemory"])


def slurm_conf(d: Path, *, node: str, cpus: int, memory_mb: int, ctld_port: int,
               slurmd_port: int) -> str:
    """A slurm.conf for one node (this machine) with every file under ``d``."""
    return "\n".join([
        "ClusterName=variantctl-test",
        f"SlurmctldHost={node}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d / 'munge.socket'}",
        f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'slurmd.pid'}",
        f"SlurmctldLogFile={d / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SchedulerType=sched/backfill",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "ReturnToService=2",
        # ended jobs stay visible to `scontrol show job` (no accounting database here)
        "MinJobAge=3600",
        "KillWait=5",
        "SchedulerParameters=sched_interval=2",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=60",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP",
        f"PartitionName=held Nodes={node} MaxTime=INFINITE State=DOWN",
        "",
    ])


@dataclass
class SlurmCluster:
    directory: Path
    node: str = ""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              check=check, timeout=60)

    def start(self) -> None:
        d = self.directory
        for sub in ("state", "spool", "munge"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(d / "munge", 0o700)
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        self.node, cpus, memory = machine()
        self.conf.write_text(slurm_conf(d, node=self.node, cpus=cpus, memory_mb=memory,
                                        ctld_port=free_port(), slurmd_port=free_port()))
        self._spawn("munged", ["munged", "-F", "--force", f"--key-file={key}",
                               f"--socket={d / 'munge.socket'}",
                               f"--pid-file={d / 'munge' / 'munged.pid'}",
                               f"--log-file={d / 'munge' / 'munged.log'}",
                               f"--seed-file={d / 'munge' / 'munged.seed'}"])
        _wait_for(lambda: (d / "munge.socket").exists(), 10, "munged did not start")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        _wait_for(lambda: self.run("scontrol", "ping", check=False).stdout.count("UP") > 0,
                  30, "slurmctld did not answer")
        self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", self.node])
        _wait_for(self._node_idle, 60, "the node did not become idle")

    def _node_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-p", "debug", "-o", "%t", check=False).stdout
        return out.strip() in ("idle", "mix", "alloc")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.directory / f"{name}.stderr", "ab")  # noqa: SIM115 - owned by child
        self.procs[name] = subprocess.Popen(
            argv, env=self.env, stdout=log, stderr=log, start_new_session=True,
            preexec_fn=_die_with_parent)

    def jobs(self) -> list[tuple[str, str, str]]:
        """(job id, name, state) of every job the controller knows."""
        out = self.run("squeue", "-h", "-t", "all", "-o", "%i|%j|%T", check=False).stdout
        return [tuple(line.split("|")) for line in out.splitlines()  # type: ignore[misc]
                if line.count("|") == 2]

    def cancel_all(self) -> None:
        for job, _, state in self.jobs():
            if state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
                self.run("scancel", "--signal=KILL", "--full", job, check=False)
                self.run("scancel", job, check=False)

    def stop(self) -> None:
        """Cancel every job, then stop the daemons (slurmd first) and all they forked."""
        with contextlib.suppress(Exception):
            if "slurmctld" in self.procs:
                self.cancel_all()
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline and any(
                        s in ("RUNNING", "COMPLETING") for _, _, s in self.jobs()):
                    time.sleep(0.5)
        for name in reversed(DAEMONS):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        # slurmstepd of a job runs in its own session: nothing of the cluster may survive
        for pid in _procs_named("slurmstepd", str(self.directory)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _wait_for(cond: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise RuntimeError(what)


def _procs_named(comm: str, marker: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            name = Path(f"/proc/{entry}/comm").read_text().strip()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if name == comm and marker.encode() in environ:
            out.append(int(entry))
    return out


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


#: where the SLURM tier's job ports are looked for: above 18100, the fixed port of the
#: bench tests' FAKE OpenAI server (tests/support/bench_project.py), and below the
#: kernel's ephemeral range, so no outgoing connection takes one meanwhile
JOB_PORTS_FROM, JOB_PORTS_TO = 18200, 29999


def port_bindable(port: int) -> bool:
    """Nothing on this machine holds ``port``: a bind on every address succeeds (it
    fails while anything listens on it, loopback included)."""
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
        return True


def free_port_block(size: int = 100, first: int = JOB_PORTS_FROM,
                    last: int = JOB_PORTS_TO) -> tuple[int, int]:
    """``(FIRST, LAST)`` of the first ``size`` consecutive ports from ``first`` on that
    nothing on this machine holds now: a host's ``slurm.ports``.

    The cluster's one node is this machine (NodeAddr 127.0.0.1), shared with every
    other test run on it. A job given a port another process already serves — a
    test double some run left behind — cannot bind it, while that process answers
    the job's ``/health``, is benchmarked in its place and still answers after the
    job is cancelled (variantctl's stop then rightly reports "could not stop")."""
    start = first
    while start + size - 1 <= last:
        busy = next((p for p in range(start, start + size) if not port_bindable(p)), None)
        if busy is None:
            return start, start + size - 1
        start = busy + 1
    raise RuntimeError(f"no {size} free consecutive ports in {first}-{last} on this machine")
