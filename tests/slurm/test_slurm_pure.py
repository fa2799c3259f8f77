"""The SLURM host kind without a cluster: hosts.yaml schema and errors, what SLURM's
commands print (parsed), the sbatch command line, port placement, the launcher
selection, ps cells, and the watch loop's queue handling (no stall while PENDING)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.support.slurm import free_port_block, port_bindable
from variantctl.config.catalog import default_catalog
from variantctl.config.hosts import load_hosts
from variantctl.errors import ConfigError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host, SlurmSpec
from variantctl.launch.classify import ClassifierAdapter
from variantctl.launch.launcher import Probe, ProcessLauncher, launcher_for
from variantctl.launch.servers import ServerStatus
from variantctl.launch.slurm import SlurmLauncher
from variantctl.launch.watch import HANG, READY, watch
from variantctl.render.servers import ps_blocks, ps_rows
from variantctl.runs.record import HostLayout, ServerRecord
from variantctl.runs.run import RunVerdict
from variantctl.targets.connect import HostOutcome
from variantctl.targets.local import LocalTarget
from variantctl.targets.slurm import (
    JobInfo,
    job_from_fields,
    parse_fields,
    parse_sacct,
    sbatch_argv,
)
from variantctl.variants.model import ResolvedVariant

# what Debian's slurm 22.05 prints (abridged): a job waiting in a down partition, one
# that failed, and a node
PENDING = ("JobId=2 JobName=tiny UserId=root(0) JobState=PENDING Reason=PartitionDown "
           "Dependency=(null) ExitCode=0:0 NodeList= Partition=held "
           "Command=/shared/scripts/tiny.sh WorkDir=/shared")
FAILED = ("JobId=7 JobName=tiny@grid-01 JobState=FAILED Reason=NonZeroExitCode "
          "ExitCode=1:0 NodeList=gpu-a07 BatchHost=gpu-a07 TRES=cpu=1,mem=4G,node=1")
NODE = "NodeName=gpu-a07 Arch=x86_64 NodeAddr=10.1.0.7 NodeHostName=gpu-a07 State=MIXED"

SLURM_HOST = """\
cluster:
  ssh: {alias: login1}
  workdir: /shared/variantctl
  slurm:
    partition: gpu
    gres: gpu:4
    time: "02:00:00"
    account: proj42
    qos: high
    sbatch: [--exclusive, --mem=64G]
    patch_roots: shared
    max_jobs: 8
    ports: [8100, 8199]
"""


def write_hosts(tmp_path: Path, text: str) -> Path:
    (tmp_path / "variants").mkdir(exist_ok=True)
    (tmp_path / "variants" / "hosts.yaml").write_text(text)
    return tmp_path


def test_slurm_host_loads(tmp_path: Path) -> None:
    host = load_hosts(write_hosts(tmp_path, SLURM_HOST), environ={})["cluster"]
    assert host.slurm == SlurmSpec(partition="gpu", gres="gpu:4", time="02:00:00",
                                   account="proj42", qos="high",
                                   sbatch=("--exclusive", "--mem=64G"), patch_roots="shared",
                                   max_jobs=8, ports=(8100, 8199))
    assert launcher_for(host).kind == "slurm"
    assert launcher_for(load_hosts(tmp_path, environ={})["local"]).kind == "process"


@pytest.mark.parametrize(("line", "replacement", "message"), [
    ("    partition: gpu\n", "    partiton: gpu\n",
     "hosts.yaml:5:5: cluster.slurm.partiton: unknown key 'partiton' in slurm"),
    ("    patch_roots: shared\n", "    patch_roots: nfs\n",
     "hosts.yaml:11:18: cluster.slurm.patch_roots: expected one of 'shared', 'image', got 'nfs'"),
    ("    ports: [8100, 8199]\n", "    ports: [8199, 8100]\n",
     "hosts.yaml:13:12: cluster.slurm.ports: expected [FIRST, LAST] with FIRST <= LAST"),
    ("    sbatch: [--exclusive, --mem=64G]\n", "    sbatch: exclusive\n",
     "hosts.yaml:10:13: cluster.slurm.sbatch: 'exclusive' is not an sbatch option such as "
     "--mem=64G"),
    ("    max_jobs: 8\n", "    max_jobs: 0\n",
     "hosts.yaml:12:15: cluster.slurm.max_jobs: must be at least 1, got 0"),
])
def test_slurm_schema_errors_name_file_and_line(tmp_path: Path, line: str, replacement: str,
                                                message: str) -> None:
    write_hosts(tmp_path, SLURM_HOST.replace(line, replacement))
    with pytest.raises(ConfigError) as err:
        load_hosts(tmp_path, environ={})
    assert message in str(err.value)


def test_schema_error_through_the_cli(run_cli: object, tmp_path: Path) -> None:
    write_hosts(tmp_path, SLURM_HOST.replace("    qos: high\n", "    qos: high\n    gress: x\n"))
    (tmp_path / "patchsets").mkdir()
    res = run_cli(["ps", "--host", "cluster"], project=tmp_path)  # type: ignore[operator]
    assert res.code == ExitCode.USAGE
    assert res.stderr == (f"error: {tmp_path}/variants/hosts.yaml:10:5: cluster.slurm.gress: "
                          "unknown key 'gress' in slurm\nhint: did you mean 'gres'?\n")
    assert "Traceback" not in res.output


def test_scontrol_output_parsed() -> None:
    pending = job_from_fields("2", parse_fields(PENDING))
    assert pending == JobInfo("2", "PENDING", reason="PartitionDown", node=None,
                              exit_code="0:0", name="tiny")
    assert pending.waiting and pending.active
    assert pending.describe() == "job 2 PENDING (PartitionDown)"
    failed = job_from_fields("7", parse_fields(FAILED))
    assert (failed.state, failed.node, failed.exit_code) == ("FAILED", "gpu-a07", "1:0")
    assert not failed.active and failed.describe() == "job 7 FAILED (exit code 1:0)"
    assert parse_fields(NODE)["NodeAddr"] == "10.1.0.7"
    # values holding `=` keep them (TRES)
    assert parse_fields(FAILED)["TRES"] == "cpu=1,mem=4G,node=1"


def test_sacct_output_parsed() -> None:
    text = "7|OUT_OF_MEMORY|0:125|gpu-a07|tiny\n8|CANCELLED by 0|0:15|None assigned|x\n"
    assert parse_sacct("7", text) == JobInfo("7", "OUT_OF_MEMORY", node="gpu-a07",
                                             exit_code="0:125", name="tiny")
    cancelled = parse_sacct("8", text)
    assert cancelled is not None and cancelled.state == "CANCELLED" and cancelled.node is None
    assert parse_sacct("9", text) is None


def test_sbatch_command_line() -> None:
    spec = SlurmSpec(partition="gpu", gres="gpu:4", time="02:00:00", account="proj42",
                     qos=None, sbatch=("--exclusive",))
    assert sbatch_argv(spec, name="tiny@grid-01", log="/shared/logs/t.log",
                       script="/shared/scripts/t.sh", cwd="/shared") == [
        "sbatch", "--parsable", "--job-name=tiny@grid-01", "--output=/shared/logs/t.log",
        "--error=/shared/logs/t.log", "--chdir=/shared", "--open-mode=append",
        "--partition=gpu", "--gres=gpu:4", "--time=02:00:00", "--account=proj42",
        "--exclusive", "/shared/scripts/t.sh"]


def _record(layout: HostLayout, name: str, port: int, job: int = 1) -> ServerRecord:
    return ServerRecord(variant=name, host="cluster", pid=None, job=str(job), port=port,
                        log=f"{layout.logs}/{name}.log", script="s", pid_file="p",
                        started_at="2026-12-01T09:00:00+00:00")


def test_every_job_gets_a_port_of_its_own(tmp_path: Path) -> None:
    from variantctl.launch.servers import save_record

    target, layout = LocalTarget(), HostLayout(str(tmp_path))
    host = Host(name="cluster", slurm=SlurmSpec(ports=(9100, 9101)))
    launcher = SlurmLauncher(host, host.slurm)  # type: ignore[arg-type]
    variant = ResolvedVariant(name="a", port=9000)
    assert launcher.place(target, layout, variant).port == 9000  # free: kept
    save_record(target, layout, _record(layout, "other", 9000))
    assert launcher.place(target, layout, variant).port == 9100
    save_record(target, layout, _record(layout, "third", 9100))
    assert launcher.place(target, layout, variant).port == 9101
    # its own old record does not hold a port against it (it is replaced or refused)
    save_record(target, layout, _record(layout, "a", 9101))
    assert launcher.place(target, layout, variant).port == 9101
    save_record(target, layout, _record(layout, "fourth", 9101))
    with pytest.raises(VariantctlError, match="no free port for a on host cluster"):
        launcher.place(target, layout, variant)


def test_launches_choosing_at_once_never_share_a_port(tmp_path: Path) -> None:
    """A sweep's parallel points choose before any has a record (the CI failure of
    stop 16: two jobs on one node, both on 34209): the claim decides."""
    import threading

    target, layout = LocalTarget(), HostLayout(str(tmp_path))
    host = Host(name="cluster", slurm=SlurmSpec(ports=(9100, 9107)))
    barrier = threading.Barrier(8)
    ports: dict[str, int] = {}

    def choose(name: str) -> None:
        launcher = SlurmLauncher(host, host.slurm)  # type: ignore[arg-type]
        barrier.wait()
        ports[name] = launcher.place(target, layout, ResolvedVariant(name=name, port=9000)).port

    threads = [threading.Thread(target=choose, args=(f"p{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ports.values())) == 8, ports
    assert set(ports.values()) <= {9000, *range(9100, 9108)}


def test_a_claim_lapses_and_a_relaunch_keeps_its_own(tmp_path: Path) -> None:
    from variantctl.launch.slurm import CLAIM_TTL_S, claim_path

    now = [1000.0]
    target, layout = LocalTarget(), HostLayout(str(tmp_path))
    host = Host(name="cluster", slurm=SlurmSpec(ports=(9100, 9101)))
    launcher = SlurmLauncher(host, host.slurm, clock=lambda: now[0])  # type: ignore[arg-type]
    assert launcher.place(target, layout, ResolvedVariant(name="a", port=9000)).port == 9000
    # the same variant launched again keeps its port; another one moves on
    assert launcher.place(target, layout, ResolvedVariant(name="a", port=9000)).port == 9000
    assert launcher.place(target, layout, ResolvedVariant(name="b", port=9000)).port == 9100
    now[0] += CLAIM_TTL_S + 1  # a's launch died before recording its job
    assert launcher.place(target, layout, ResolvedVariant(name="c", port=9000)).port == 9000
    assert b'"c"' in target.read_bytes(claim_path(layout, 9000))
    # a damaged claim cannot hold a port for ever
    target.write_atomic(claim_path(layout, 9101), b"\x00garbage")
    assert launcher.place(target, layout, ResolvedVariant(name="d", port=9101)).port == 9101


def test_requires_on_a_node_image_is_refused() -> None:
    host = Host(name="cluster", slurm=SlurmSpec(patch_roots="image"))
    launcher = SlurmLauncher(host, host.slurm)  # type: ignore[arg-type]
    assert launcher.check_patches(ResolvedVariant(name="plain")) is False
    with pytest.raises(VariantctlError) as err:
        launcher.check_patches(ResolvedVariant(name="p", requires=("eager-allreduce",)))
    assert err.value.exit_code == ExitCode.CONFLICT and "node image" in err.value.message
    shared = Host(name="c", slurm=SlurmSpec())
    assert SlurmLauncher(shared, shared.slurm).check_patches(  # type: ignore[arg-type]
        ResolvedVariant(name="p", requires=("x",))) is True


def test_ps_shows_queue_reason_and_node(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    layout = HostLayout(str(tmp_path))
    host = Host(name="cluster", slurm=SlurmSpec())
    waiting = ServerStatus(_record(layout, "a", 9000, 3), (3,), False, None,
                           job=JobInfo("3", "PENDING", reason="Priority"))
    running = ServerStatus(_record(layout, "b", 9001, 4), (4,), False, 200,
                           job=JobInfo("4", "RUNNING", node="gpu-a07"))
    ended = ServerStatus(_record(layout, "c", 9002, 5), (), False, None,
                         job=JobInfo("5", "TIMEOUT", node="gpu-a07", exit_code="0:15"))
    assert [s.state for s in (waiting, running, ended)] == ["pending", "healthy", "stale"]
    outcomes = [HostOutcome(host, [waiting, running, ended], None)]
    now = datetime(2026, 12, 1, 9, 1, tzinfo=UTC)
    rows = ps_rows(outcomes, now)
    assert rows[0]["job"] == {"id": "3", "state": "PENDING", "reason": "Priority", "node": None}
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    for block in ps_blocks(outcomes, now):
        console.print(block.body)
    table = console.export_text()
    assert "pending (Priority)" in table and "healthy on gpu-a07" in table
    assert "stale (job TIMEOUT)" in table
    # the job id shows in the PID column; ps --json has it under job, pid is null
    assert any(line.split()[:3] == ["cluster", "a", "3"] for line in table.splitlines())
    assert rows[0]["pid"] is None
    json.dumps(rows)  # plain data for --json


def test_the_job_id_has_its_own_field_and_old_records_still_read(tmp_path: Path) -> None:
    """A SLURM record keeps its job id in ``job`` (``pid`` null); a process record's JSON
    is as it always was (no ``job`` key); a record written when the job id was the pid
    still names (and cancels) its job; messages say ``job N`` / ``pid N``."""
    from variantctl.launch.slurm import job_id

    layout = HostLayout(str(tmp_path))
    new = _record(layout, "a", 9000, 17)
    doc = new.to_dict()
    assert (doc["pid"], doc["job"]) == (None, "17")
    assert ServerRecord.from_dict(json.loads(json.dumps(doc))) == new
    assert new.ident == "job 17" and job_id(new) == "17"
    old_doc = {**doc, "pid": 17}
    del old_doc["job"]
    old = ServerRecord.from_dict(old_doc)
    assert (old.pid, old.job, job_id(old)) == (17, None, "17")
    process = ServerRecord(variant="p", host="local", pid=4242, port=8000, log="l",
                           script="s", pid_file="f", started_at="t")
    assert "job" not in process.to_dict() and process.ident == "pid 4242"
    assert ServerRecord.from_dict(process.to_dict()) == process
    # a process record must have its pid; a job's needs none
    with pytest.raises(KeyError):
        ServerRecord.from_dict({k: v for k, v in process.to_dict().items() if k != "pid"})
    # a job's record on a host that no longer submits jobs: nothing is signalled
    probe = ProcessLauncher(Host(name="local")).probe(LocalTarget(), new, health=False)
    assert not probe.alive
    with pytest.raises(VariantctlError) as err:
        ProcessLauncher(Host(name="local")).stop(LocalTarget(), layout, new, grace=1.0)
    assert err.value.exit_code == ExitCode.CONFLICT and "(job 17)" in err.value.message


class _Queued:
    """A launcher whose server waits ``polls`` health polls in the queue, then answers 200."""

    kind = "scripted"

    def __init__(self, polls: int):
        self.polls = polls

    def probe(self, target: object, record: ServerRecord, *, health: bool = True) -> Probe:
        self.polls -= 1
        if self.polls >= 0:
            return Probe(True, None, "queued (Resources)")
        return Probe(True, 200)


@pytest.mark.parametrize("polls", [0, 5])
def test_no_stall_is_counted_while_the_job_waits_in_the_queue(tmp_path: Path,
                                                              polls: int) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    now = [0.0]
    phases: list[str | None] = []
    classifier = ClassifierAdapter.create(stall_seconds=2.0, clock=lambda: now[0],
                                          catalog=default_catalog())
    record = _record(HostLayout(str(tmp_path)), "a", 9000)
    record = ServerRecord(**{**record.to_dict(), "log": str(log)})

    def sleep(seconds: float) -> None:
        now[0] += seconds

    out = watch(LocalTarget(), record, classifier, timeout=60, clock=lambda: now[0],
                sleep=sleep, health_poll=1.0, log_poll=1.0, launcher=_Queued(polls),  # type: ignore[arg-type]
                on_progress=lambda p: phases.append(p.phase))
    # 5 s in the queue is longer than the 2 s stall, and still no hang
    assert out.verdict == READY, out
    assert ("queued (Resources)" in phases) == bool(polls)


def test_a_silent_running_server_still_hangs(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    now = [0.0]
    classifier = ClassifierAdapter.create(stall_seconds=2.0, clock=lambda: now[0],
                                          catalog=default_catalog())
    record = ServerRecord(**{**_record(HostLayout(str(tmp_path)), "a", 9000).to_dict(),
                             "log": str(log)})

    class Silent(ProcessLauncher):
        def probe(self, target: object, record: ServerRecord, *, health: bool = True
                  ) -> Probe:
            return Probe(True, None)

    def sleep(seconds: float) -> None:
        now[0] += seconds

    out = watch(LocalTarget(), record, classifier, timeout=60, clock=lambda: now[0],
                sleep=sleep, launcher=Silent())  # type: ignore[arg-type]
    assert out.verdict == HANG


def test_the_resources_a_job_asks_for_are_part_of_the_run_key() -> None:
    from dataclasses import replace

    from variantctl.runs.identity import host_identity, launch_key

    variant = ResolvedVariant(name="a", port=9000)
    base = Host(name="cluster", workdir="/shared", slurm=SlurmSpec(gres="gpu:4"))
    key = launch_key(variant, base)
    assert key != launch_key(variant, replace(base, slurm=SlurmSpec(gres="gpu:8")))
    assert key == launch_key(variant, replace(base, slurm=SlurmSpec(gres="gpu:4", max_jobs=9,
                                                                     ports=(9000, 9100))))
    # a host without slurm keeps the identity (and so the run keys) it always had
    assert "slurm" not in host_identity(replace(base, slurm=None))


def test_a_log_path_with_percent_reaches_sbatch_literally() -> None:
    # a sweep point's log: safe_name writes `@` as %40, which SLURM would read as the
    # pattern %40s (the step id, 40 digits wide) and write somewhere else
    argv = sbatch_argv(SlurmSpec(), name="tiny@grid-01",
                       log="/shared/logs/tiny%40grid-01-20261201T090000Z.log",
                       script="/s.sh", cwd="/shared")
    assert "--output=/shared/logs/tiny%%40grid-01-20261201T090000Z.log" in argv
    assert "--error=/shared/logs/tiny%%40grid-01-20261201T090000Z.log" in argv


def test_a_setting_the_cluster_refuses_is_named() -> None:
    from variantctl.targets.slurm import refused_setting

    spec = SlurmSpec(partition="gpux", account="acct")
    said = ("sbatch: error: invalid partition specified: gpux\n"
            "sbatch: error: Batch job submission failed: Invalid partition name specified")
    assert refused_setting(spec, said) == ("partition", "gpux")
    assert refused_setting(spec, "sbatch: error: Invalid account or account/partition "
                           "combination specified") == ("account", "acct")
    assert refused_setting(spec, "sbatch: error: Socket timed out") is None


def test_a_timeout_in_the_queue_has_the_queue_as_its_phase(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    now = [0.0]
    classifier = ClassifierAdapter.create(stall_seconds=2.0, clock=lambda: now[0],
                                          catalog=default_catalog())
    record = ServerRecord(**{**_record(HostLayout(str(tmp_path)), "a", 9000).to_dict(),
                             "log": str(log)})

    class Queued:
        def probe(self, target: object, record: object, *, health: bool = True) -> Probe:
            return Probe(True, None, "queued (Resources)")

    def sleep(seconds: float) -> None:
        now[0] += seconds

    out = watch(LocalTarget(), record, classifier, timeout=10, clock=lambda: now[0],
                sleep=sleep, launcher=Queued())  # type: ignore[arg-type]
    assert out.verdict == "timeout"
    told = RunVerdict.of(out.verdict, out.decision.result, waiting=out.decision.waiting)
    assert told.phase == "queued (Resources)"


def test_the_tier_gives_its_jobs_no_port_another_server_holds() -> None:
    # the tier's node is this machine: a FAKE OpenAI server a bench test left on
    # 127.0.0.1:18100 (then the first port of the fixed range) answered a job's /health,
    # was benchmarked for it and still answered after scancel ("could not stop")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert not port_bindable(port)
        first, last = free_port_block(size=8, first=port - 3, last=port + 40)
        assert last - first == 7 and not first <= port <= last, (first, last, port)
        assert all(port_bindable(p) for p in range(first, last + 1))
