"""SLURM's commands on a Target (the login node): submit, look at a job, cancel.

Everything goes through :meth:`Target.run` (no shell), so it works the same on
the login node over SSH and on this machine. Parsing is pure and kept apart
(:func:`parse_fields`, :func:`job_from_fields`, :func:`parse_sacct`).

A job's state comes from ``scontrol show job -o`` (one line of ``Key=Value``:
state, reason, node, exit code), which also answers for ended jobs until
``MinJobAge``; after that ``sacct`` (which needs the cluster's accounting
database) is asked.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from variantctl.errors import TargetError
from variantctl.hostmodel import SlurmSpec
from variantctl.targets.activity import TreeSample
from variantctl.targets.base import RunResult, Target

#: states in which a job still holds (or waits for) resources
ACTIVE_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
    "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED",
    "RESV_DEL_HOLD",
})
#: a job of this state has no node yet
WAITING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "RESV_DEL_HOLD"})


@dataclass(frozen=True)
class JobInfo:
    """What SLURM says about one job."""

    job_id: str
    #: PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, CANCELLED…;
    #: ``UNKNOWN`` when neither scontrol nor sacct knows the job any more
    state: str
    reason: str | None = None
    #: the node running the batch script
    node: str | None = None
    #: ``EXIT:SIGNAL`` as SLURM reports it (``0:0``, ``1:0``, ``0:9``)
    exit_code: str | None = None
    name: str | None = None

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def waiting(self) -> bool:
        return self.state in WAITING_STATES

    def describe(self) -> str:
        """``job 12 FAILED (exit code 1:0)``: for notes and stop lines."""
        out = f"job {self.job_id} {self.state}"
        if self.waiting and self.reason:
            out += f" ({self.reason})"
        elif self.exit_code and not self.active:
            out += f" (exit code {self.exit_code})"
        return out


def slurm_env(spec: SlurmSpec) -> dict[str, str] | None:
    return {"SLURM_CONF": spec.conf} if spec.conf else None


def slurm_filename(path: str) -> str:
    """``path`` as sbatch's ``--output``/``--error`` take it literally: SLURM reads
    ``%`` as the start of a filename pattern (``%j``, ``%40s``: a step id padded to 40
    digits), and a sweep point's log name holds ``%40`` (``@``); ``%%`` is one ``%``."""
    return path.replace("%", "%%")


def sbatch_argv(spec: SlurmSpec, *, name: str, log: str, script: str, cwd: str) -> list[str]:
    """The submission: the launch script is the batch script, stdout+stderr to ``log``."""
    out = slurm_filename(log)
    argv = ["sbatch", "--parsable", f"--job-name={name}", f"--output={out}",
            f"--error={out}", f"--chdir={cwd}", "--open-mode=append"]
    for flag, value in (("partition", spec.partition), ("gres", spec.gres),
                        ("time", spec.time), ("account", spec.account), ("qos", spec.qos)):
        if value:
            argv.append(f"--{flag}={value}")
    argv += list(spec.sbatch)
    argv.append(script)
    return argv


def _run(target: Target, spec: SlurmSpec, argv: list[str], timeout: float = 30) -> RunResult:
    try:
        return target.run(argv, env=slurm_env(spec), timeout=timeout)
    except TargetError as exc:
        if exc.kind == "not-found":  # the command itself is missing on the login node
            raise TargetError(f"{argv[0]} not found on host {target.name}: is it a SLURM "
                              "login node?", kind="other", host=target.name) from exc
        raise


def submit(target: Target, spec: SlurmSpec, *, name: str, script: str, log: str,
           cwd: str) -> str:
    """``sbatch --parsable``: the job id (``123``, or ``123;cluster`` cut to the id)."""
    res = _run(target, spec, sbatch_argv(spec, name=name, log=log, script=script, cwd=cwd),
               timeout=60)
    job = res.stdout.strip().split(";", 1)[0]
    if not res.ok or not job.isdigit():
        said = res.stderr.strip() or res.stdout.strip() or "no job id"
        bad = refused_setting(spec, said)
        if bad is not None:
            # a value of hosts.yaml the cluster does not know: bad input (exit 2)
            key, value = bad
            where = dict(spec.origins).get(key)
            raise TargetError(
                f"slurm.{key} {value!r}"
                + (f" ({where})" if where else "")
                + f" is refused by the cluster: {_last_line(said)}",
                kind="config", host=target.name,
                hint=f"fix slurm.{key} of host {target.name} in hosts.yaml "
                "(`sinfo -s` on the login node lists the partitions)")
        raise TargetError(f"sbatch refused {name}: {said}", kind="other", host=target.name)
    return job


#: words in sbatch's refusal -> the hosts.yaml ``slurm:`` key it is about
_REFUSALS = (("account", "account"), ("qos", "qos"), ("gres", "gres"),
             ("generic resource", "gres"), ("time limit", "time"), ("partition", "partition"))


def refused_setting(spec: SlurmSpec, said: str) -> tuple[str, str] | None:
    """(key, value) of the ``slurm:`` setting sbatch refused as invalid, when its
    message names one that hosts.yaml set (``invalid partition specified: gpux``)."""
    text = said.lower()
    if "invalid" not in text:
        return None
    values = {"partition": spec.partition, "account": spec.account, "qos": spec.qos,
              "gres": spec.gres, "time": spec.time}
    for words, key in _REFUSALS:
        value = values[key]
        if words in text and value:
            return key, value
    return None


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else text


def parse_fields(text: str) -> dict[str, str]:
    """``Key=Value Key=Value …`` of ``scontrol show … -o`` (values may hold ``=``)."""
    out: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep and key and key not in out:
            out[key] = value
    return out


def _value(fields: Mapping[str, str], key: str) -> str | None:
    value = fields.get(key)
    return None if value in (None, "", "(null)", "None") else value


def job_from_fields(job_id: str, fields: Mapping[str, str]) -> JobInfo:
    state = (fields.get("JobState") or "UNKNOWN").split()[0]
    node = _value(fields, "BatchHost") or _value(fields, "NodeList")
    return JobInfo(job_id=job_id, state=state, reason=_value(fields, "Reason"),
                   node=node, exit_code=_value(fields, "ExitCode"),
                   name=_value(fields, "JobName"))


def parse_sacct(job_id: str, text: str) -> JobInfo | None:
    """The job's line of ``sacct -X -n -P -o JobID,State,ExitCode,NodeList,JobName``."""
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) >= 5 and parts[0] == job_id:
            # sacct writes ``CANCELLED by 0``: the state is the first word
            return JobInfo(job_id=job_id, state=parts[1].split()[0] if parts[1] else "UNKNOWN",
                           exit_code=parts[2] or None,
                           node=None if parts[3] in ("", "None assigned") else parts[3],
                           name=parts[4] or None)
    return None


def job_info(target: Target, spec: SlurmSpec, job_id: str) -> JobInfo:
    """The job's state, reason, node and exit code."""
    res = _run(target, spec, ["scontrol", "show", "job", "-o", job_id])
    if res.ok and "JobId=" in res.stdout:
        return job_from_fields(job_id, parse_fields(res.stdout))
    if not res.ok and "Invalid job id" not in res.stderr:
        raise TargetError(f"scontrol show job {job_id} failed: {res.stderr.strip()}",
                          kind="other", host=target.name)
    acct = _run(target, spec, ["sacct", "-X", "-n", "-P", "-j", job_id,
                               "-o", "JobID,State,ExitCode,NodeList,JobName"])
    found = parse_sacct(job_id, acct.stdout) if acct.ok else None
    return found or JobInfo(job_id=job_id, state="UNKNOWN")


def node_address(target: Target, spec: SlurmSpec, node: str) -> str:
    """The address the login node reaches ``node`` at (its NodeAddr, else its name)."""
    res = _run(target, spec, ["scontrol", "show", "node", "-o", node])
    return (_value(parse_fields(res.stdout), "NodeAddr") if res.ok else None) or node


@dataclass(frozen=True)
class CancelResult:
    job: JobInfo
    #: the job was active when asked to stop
    found: bool
    #: TERM (scancel's own escalation) was not enough within grace: KILL was sent
    killed: bool
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.job.active


def cancel(target: Target, spec: SlurmSpec, job_id: str, *, grace: float = 10.0,
           poll: float = 0.5) -> CancelResult:
    """``scancel`` (SLURM sends TERM, then KILL after its KillWait), wait up to ``grace``,
    then ``scancel --signal=KILL`` for what is left, and verify the job ended."""
    t0 = time.monotonic()
    info = job_info(target, spec, job_id)
    if not info.active:
        return CancelResult(info, False, False, time.monotonic() - t0)
    _run(target, spec, ["scancel", job_id])
    killed = False
    deadline = t0 + grace
    while True:
        info = job_info(target, spec, job_id)
        if not info.active:
            break
        now = time.monotonic()
        if now >= deadline:
            if killed:
                break
            killed = True
            _run(target, spec, ["scancel", "--signal=KILL", "--full", job_id])
            deadline = now + 30.0
        time.sleep(poll)
    return CancelResult(info, True, killed, time.monotonic() - t0)


def parse_slurm_duration(text: str) -> float | None:
    """Seconds of a SLURM duration (``[DD-][HH:]MM:SS[.mmm]``, as sstat's TotalCPU)."""
    text = text.strip()
    if not text:
        return None
    days = 0
    if "-" in text:
        d, _, text = text.partition("-")
        if not d.isdigit():
            return None
        days = int(d)
    parts = text.split(":")
    if not 2 <= len(parts) <= 3:
        return None
    try:
        secs = float(parts[-1])
        mins = int(parts[-2])
        hours = int(parts[0]) if len(parts) == 3 else 0
    except ValueError:
        return None
    return ((days * 24 + hours) * 60 + mins) * 60 + secs


def job_cpu_times(target: Target, spec: SlurmSpec, job_id: str) -> TreeSample | None:
    """CPU seconds each step of the running job used so far (``sstat``'s TotalCPU, by step
    id); None where the cluster does not gather job accounting (then a quiet log is judged
    by its silence alone)."""
    try:
        res = _run(target, spec, ["sstat", "--noheader", "--parsable2", "--allsteps",
                                  "--format=JobID,TotalCPU", "-j", job_id], timeout=10)
    except TargetError as exc:
        if exc.kind == "unreachable":
            raise
        return None  # no sstat on the login node, or it did not answer: cannot tell
    if not res.ok:
        return None
    out: dict[str, float] = {}
    for line in res.stdout.splitlines():
        step, sep, total = line.partition("|")
        seconds = parse_slurm_duration(total) if sep else None
        if seconds is None:
            continue
        out[step.strip()] = seconds
    return TreeSample(out) if out else None
