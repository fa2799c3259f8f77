"""SLURM launches of the FAKE GPU-era server (a test double, not vLLM; see
tests/support/fake_gpu_server.py) through the real sshd and the real cluster:
cheap, so every job state is covered here; tests/slurm/test_slurm_real.py runs
the real vLLM CPU server as a job."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.slurm.conftest import Project, slurm_hosts_yaml
from tests.ssh.launchkit import make_project, run_json
from tests.support.slurm import SlurmCluster, port_open
from tests.support.sshd import SshLab
from variantctl.exitcodes import ExitCode

pytestmark = [pytest.mark.slurm, pytest.mark.ssh]


@pytest.fixture
def project(tmp_path: Path, ssh_lab: SshLab, slurm_cluster: SlurmCluster) -> Iterator[Project]:
    root = make_project(tmp_path / "project", ssh_lab, pace=0.02)
    hosts = root / "variants" / "hosts.yaml"
    hosts.write_text(hosts.read_text() + slurm_hosts_yaml(ssh_lab, slurm_cluster,
                                                          tmp_path / "shared"))
    p = Project(root, tmp_path / "cache")
    yield p
    for host in ("cluster", "held"):
        p.cli("stop", "--all", "--host", host, "--grace", "2")
    slurm_cluster.cancel_all()


def job_state(cluster: SlurmCluster, job: str) -> str:
    out = cluster.run("scontrol", "show", "job", "-o", str(job)).stdout
    return out.split("JobState=", 1)[1].split()[0]


def test_healthy_job_ps_logs_stop(project: Project, slurm_cluster: SlurmCluster) -> None:
    res = project.cli("launch", "fake-healthy", "--host", "cluster", "--json")
    out = json.loads(res.stdout)
    assert res.code == 0 and out["verdict"] == "ready", res.output
    # the job id in its own field, not as a pid (docs/slurm.md)
    job = out["job"]
    assert out["pid"] is None and isinstance(job, str), out
    slurm = out["facts"]["slurm"]
    assert slurm["job_id"] == str(job) and slurm["state"] == "RUNNING"
    assert slurm["node"] == slurm_cluster.node
    # a real job of the cluster, named after the variant, logging to the usual path
    assert (str(job), "fake-healthy", "RUNNING") in slurm_cluster.jobs()
    log = Path(out["log"])
    assert log.parent.name == "logs" and "Uvicorn running" in log.read_text()
    server = run_json(project.path, "fake-healthy")["server"]
    assert (server["pid"], server["job"]) == (None, job)

    ps = project.cli("ps", "--host", "cluster", "--json")
    (srv,) = json.loads(ps.stdout)["servers"]
    assert srv["state"] == "healthy" and srv["health"] == 200, ps.output
    assert srv["job"] == {"id": str(job), "state": "RUNNING", "reason": None,
                          "node": slurm_cluster.node}
    table = project.cli("ps", "--host", "cluster")
    assert f"healthy on {slurm_cluster.node}" in table.stdout, table.output

    logs = project.cli("logs", "fake-healthy", "--host", "cluster", "-n", "3")
    assert logs.code == 0 and "Uvicorn running" in logs.stdout, logs.output

    port = out["port"]
    assert port_open(port)
    stop = project.cli("stop", "fake-healthy", "--host", "cluster", "--json")
    (stopped,) = json.loads(stop.stdout)["stopped"]
    assert stop.code == 0 and stopped["ok"], stop.output
    assert stopped["job"]["state"] == "CANCELLED"
    assert job_state(slurm_cluster, job) == "CANCELLED"
    assert not port_open(port)
    assert json.loads(project.cli("ps", "--host", "cluster", "--json").stdout)["servers"] == []


def test_failure_signature_and_exit_state(project: Project, slurm_cluster: SlurmCluster
                                          ) -> None:
    res = project.cli("launch", "fake-xformers-multistep", "--host", "cluster", "--json")
    out = json.loads(res.stdout)
    assert res.code == ExitCode.FAILED and out["verdict"] == "failed", res.output
    assert out["signature"] == "xformers-multistep-unsupported"
    assert out["facts"]["slurm"]["node"] == slurm_cluster.node
    assert not json.loads(project.cli("ps", "--host", "cluster", "--json").stdout)["servers"]

    # a server that dies with no known signature: the job's end state and exit code
    res = project.cli("launch", "fake-exit", "--host", "cluster", "--json")
    out = json.loads(res.stdout)
    assert out["verdict"] == "exited", res.output
    slurm = out["facts"]["slurm"]
    assert slurm["state"] == "FAILED" and slurm["exit_code"].split(":")[0] != "0", slurm
    assert job_state(slurm_cluster, out["job"]) == "FAILED"


def test_pending_reason_is_the_phase_and_stop_cancels(project: Project,
                                                      slurm_cluster: SlurmCluster) -> None:
    res = project.cli("launch", "fake-healthy", "--host", "held", "--timeout", "20")
    assert res.code == ExitCode.TIMEOUT, res.output
    assert "phase: queued (PartitionDown)" in res.stderr, res.output
    assert "TIMEOUT fake-healthy on held" in res.stdout, res.output
    # the verdict names the queue as the phase it timed out in (docs/slurm.md), printed
    # and archived alike
    assert "(phase: queued (PartitionDown))" in res.stdout, res.output
    data = run_json(project.path, "fake-healthy")
    assert data["verdict"]["phase"] == "queued (PartitionDown)"
    assert data["facts"]["slurm"]["state"] == "PENDING"
    assert data["facts"]["slurm"]["reason"] == "PartitionDown"
    # timed out in the queue: the job was cancelled, not left waiting
    assert job_state(slurm_cluster, data["server"]["job"]) == "CANCELLED"

    started = project.cli("launch", "fake-healthy", "--host", "held", "--no-wait", "--json")
    assert started.code == 0, started.output
    job = json.loads(started.stdout)["job"]
    ps = project.cli("ps", "--host", "held")
    assert "pending (PartitionDown)" in ps.stdout, ps.output
    stop = project.cli("stop", "fake-healthy", "--host", "held")
    assert stop.code == 0, stop.output
    assert job_state(slurm_cluster, job) == "CANCELLED"


def test_an_unknown_partition_is_bad_input_naming_its_line(project: Project,
                                                          slurm_cluster: SlurmCluster) -> None:
    hosts = project.path / "variants" / "hosts.yaml"
    text = hosts.read_text()
    # the `cluster` host's partition, renamed to one the cluster does not have
    hosts.write_text(text.replace("partition: debug", "partition: nosuchpart", 1))
    line = hosts.read_text().splitlines().index("    partition: nosuchpart") + 1
    jobs_before = slurm_cluster.jobs()
    res = project.cli("launch", "fake-healthy", "--host", "cluster")
    assert res.code == ExitCode.USAGE, res.output
    assert f"slurm.partition 'nosuchpart' (variants/hosts.yaml:{line}) is refused by the " \
        "cluster" in res.stderr, res.stderr
    assert "cluster" in res.stderr and "Traceback" not in res.output
    # the refused submission released the port it had claimed, and recorded nothing
    run_dir = project.path.parent / "shared" / "cluster" / "run"
    assert not list(run_dir.glob("port-*.claim")), list(run_dir.iterdir())
    assert not list(run_dir.glob("*.json"))
    assert slurm_cluster.jobs() == jobs_before


SWEEP = """\
base: fake-healthy
hosts: [cluster]
grid:
  args:
    enforce-eager: [true]
bench:
  prompts: [random]
  input_len: 8
  output_len: 2
  concurrency: [1]
  requests: 1
  warmup: "off"
"""


def test_a_sweep_points_log_is_the_one_slurm_writes(project: Project,
                                                    slurm_cluster: SlurmCluster) -> None:
    (project.path / "sweeps").mkdir(exist_ok=True)
    (project.path / "sweeps" / "pt.yaml").write_text(SWEEP)
    project.cli("sweep", "pt", "--json")
    state = json.loads((project.path / "runs" / "sweeps" / "pt.json").read_text())
    (point,) = state["points"]
    assert "@" in point["name"] and point["run_dir"], point
    run = json.loads((Path(point["run_dir"]) / "run.json").read_text())
    # the job wrote the log variantctl followed (named with %40 for the `@`), so the
    # verdict has the log's own signature and the archived log holds the server's lines
    assert run["verdict"]["verdict"] == "ready", run["verdict"]
    assert run["verdict"]["signature"] == "startup-ok", run["verdict"]
    assert "Uvicorn running" in (Path(point["run_dir"]) / "server.log").read_text()
    logs = project.path.parent / "shared" / "cluster" / "logs"
    assert [p.name for p in logs.iterdir() if "%40pt-01" in p.name and p.stat().st_size]
