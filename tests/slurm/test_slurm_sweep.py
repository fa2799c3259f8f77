"""A sweep on the SLURM host: each point its own job, ``max_jobs: 2`` at once, and a
``--resume`` after variantctl was killed that reattaches to the job still running
instead of submitting it again (real vLLM CPU servers as jobs, through the
real sshd and the real cluster)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.slurm.conftest import Project, slurm_hosts_yaml
from tests.slurm.test_slurm_real import tiny_variants
from tests.support.realvllm import StartBudget
from tests.support.slurm import SlurmCluster
from tests.support.sshd import SshLab

pytestmark = [pytest.mark.slurm, pytest.mark.ssh, pytest.mark.vllm]

SWEEP = """\
description: two points, two jobs at once
base: tiny-slurm
hosts: [cluster]
grid:
  args:
    max-num-seqs: [1, 2]
bench:
  prompts: [random]
  input_len: 16
  output_len: 4
  ignore_eos: true
  concurrency: [1]
  requests: 2
  warmup: "off"
"""

#: one point is enough to show a resume reattaching (each point is a real start)
AGAIN = SWEEP.replace("two points, two jobs at once", "one point, resumed").replace(
    "max-num-seqs: [1, 2]", "max-num-seqs: [1]")


@pytest.fixture
def project(tmp_path: Path, ssh_lab: SshLab, slurm_cluster: SlurmCluster, vllm_python: Path,
            tiny_model: Path, start_budget: StartBudget) -> Iterator[Project]:
    root = tmp_path / "project"
    (root / "variants").mkdir(parents=True)
    (root / "patchsets").mkdir()
    (root / "sweeps").mkdir()
    (root / "variants" / "hosts.yaml").write_text(slurm_hosts_yaml(
        ssh_lab, slurm_cluster, tmp_path / "shared", python=str(vllm_python),
        extra="    max_jobs: 2\n"))
    tiny_variants(root, tiny_model, start_budget)
    (root / "sweeps" / "pair.yaml").write_text(SWEEP)
    (root / "sweeps" / "again.yaml").write_text(AGAIN)
    p = Project(root, tmp_path / "cache")
    yield p
    p.cli("stop", "--all", "--host", "cluster", "--grace", "5")
    slurm_cluster.cancel_all()


def job_times(cluster: SlurmCluster, sweep: str) -> dict[str, tuple[datetime, datetime]]:
    """name -> (start, end) of every job of ``sweep`` the controller knows."""
    out = {}
    for job, name, _ in cluster.jobs():
        if f"@{sweep}-" not in name:
            continue
        text = cluster.run("scontrol", "show", "job", "-o", job).stdout
        fields = dict(w.split("=", 1) for w in text.split() if "=" in w)
        out[name] = (datetime.fromisoformat(fields["StartTime"]),
                     datetime.fromisoformat(fields["EndTime"]))
    return out


def measured(doc: dict[str, object]) -> list[str]:
    return sorted(p["name"] for p in doc["points"] if p["status"] == "measured")  # type: ignore[attr-defined,index]


def test_sweep_points_run_as_parallel_jobs(project: Project, slurm_cluster: SlurmCluster
                                           ) -> None:
    res = project.cli("sweep", "pair", "--json")
    doc = json.loads(res.stdout)
    assert res.code == 0, res.output
    assert measured(doc) == ["tiny-slurm@pair-01", "tiny-slurm@pair-02"], doc
    times = job_times(slurm_cluster, "pair")
    assert sorted(times) == ["tiny-slurm@pair-01", "tiny-slurm@pair-02"]
    (s1, e1), (s2, e2) = times.values()
    assert s1 < e2 and s2 < e1, times  # both jobs ran at the same time (max_jobs: 2)
    for point in doc["points"]:
        assert point["benchmarks"], point
    # the jobs shared the node: each had a port of its own, and stopping released it
    ports = re.findall(r"started tiny-slurm@pair-0\d on cluster: job \d+, port (\d+)",
                       res.output)
    assert len(ports) == 2 and len(set(ports)) == 2, res.output
    run_dir = project.path.parent / "shared" / "cluster" / "run"
    assert not list(run_dir.glob("*.claim")), sorted(p.name for p in run_dir.iterdir())
    # every job was cancelled after its benchmark: nothing left in the queue
    assert all(s == "CANCELLED" for _, n, s in slurm_cluster.jobs() if "@pair-" in n)


def test_resume_reattaches_to_running_jobs(project: Project, slurm_cluster: SlurmCluster
                                           ) -> None:
    env = {**os.environ, "VARIANTCTL_PROJECT": str(project.path),
           "VARIANTCTL_CACHE": str(project.cache), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "variantctl", "sweep", "again"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            jobs = [j for j in slurm_cluster.jobs() if "@again-" in j[1]]
            if len(jobs) == 1 and all(s == "RUNNING" for _, _, s in jobs):
                break
            assert proc.poll() is None, "the sweep ended before its job ran"
            time.sleep(0.5)
        else:
            pytest.fail(f"the job never ran: {slurm_cluster.jobs()}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # variantctl dies; its jobs keep running
        proc.wait(10)
    submitted = sorted(j for j, n, _ in slurm_cluster.jobs() if "@again-" in n)

    res = project.cli("sweep", "again", "--resume", "--json")
    doc = json.loads(res.stdout)
    assert res.code == 0, res.output
    assert measured(doc) == ["tiny-slurm@again-01"], doc
    assert "reattaching to SLURM job" in res.stderr, res.output
    # no point was submitted twice: the same job, now cancelled after its bench
    after = sorted((j, s) for j, n, s in slurm_cluster.jobs() if "@again-" in n)
    assert [j for j, _ in after] == submitted
    assert {s for _, s in after} == {"CANCELLED"}
