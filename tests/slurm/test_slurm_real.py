"""The real vLLM CPU server submitted as a SLURM job through the real sshd.

The login node is the SSH lab's gpu1; the job runs on this machine's slurmd; its
/health is reached through the login node's SSH connection. A healthy launch
with the log's facts, then the batched-tokens failure diagnosed from the job's
log (two real server starts, about a minute each on 2 shared cores).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.slurm.conftest import Project, slurm_hosts_yaml
from tests.ssh.launchkit import run_json
from tests.support.realvllm import VARIANT_ENV, StartBudget
from tests.support.slurm import SlurmCluster, free_port_block, port_open
from tests.support.sshd import SshLab
from variantctl.exitcodes import ExitCode

pytestmark = [pytest.mark.slurm, pytest.mark.ssh, pytest.mark.vllm]


def tiny_variants(project: Path, model: Path, budget: StartBudget, host: str = "cluster"
                  ) -> None:
    """A tiny-model variant, budgets from this machine's start time. On vLLM's
    single-process engine (tests/support/realvllm.py): these tests are about the job
    (submission, its log, its node, its cancellation), not vLLM's processes, and a
    start without the engine's worker process is one import of vLLM fewer."""
    (project / "variants" / "tiny-slurm.yaml").write_text(
        "description: tiny Llama on the CPU build, as a SLURM job\n"
        f"host: {host}\n"
        f"model: {model}\n"
        # below the kernel's ephemeral range and apart from the host's job-port block: a
        # kernel-picked port (free_port) was once taken by another connection before the
        # job bound it ("Address already in use", both tests of this module failed)
        f"port: {free_port_block(1, first=27000)[0]}\n"
        "args:\n  load-format: dummy\n  max-model-len: 512\n  dtype: bfloat16\n"
        "  enforce-eager: true\n"
        + VARIANT_ENV + budget.startup_yaml() +
        "expect:\n  enforce_eager: true\n")
    (project / "variants" / "tiny-slurm-batched.yaml").write_text(
        "extends: tiny-slurm\n"
        "args:\n  max-num-batched-tokens: 64\n  enable-chunked-prefill: false\n")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab,
            slurm_cluster: SlurmCluster, vllm_python: Path, tiny_model: Path,
            start_budget: StartBudget) -> Iterator[Project]:
    base = tmp_path_factory.mktemp("slurm-real")
    root = base / "project"
    (root / "variants").mkdir(parents=True)
    (root / "patchsets").mkdir()
    (root / "variants" / "hosts.yaml").write_text(
        slurm_hosts_yaml(ssh_lab, slurm_cluster, base / "shared", python=str(vllm_python)))
    tiny_variants(root, tiny_model, start_budget)
    p = Project(root, base / "cache")
    yield p
    p.cli("stop", "--all", "--host", "cluster", "--grace", "5")
    slurm_cluster.cancel_all()


def test_real_server_as_a_job(project: Project, slurm_cluster: SlurmCluster) -> None:
    res = project.cli("launch", "tiny-slurm", "--json", "--grace", "5")
    out = json.loads(res.stdout)
    try:
        assert res.code == 0 and out["verdict"] == "ready", res.output
        assert out["facts"]["vllm_version"] == "0.32.0"
        assert out["facts"]["config"]["enforce_eager"] is True and out["expect_ok"]
        assert out["facts"]["slurm"]["state"] == "RUNNING"
        assert out["facts"]["slurm"]["node"] == slurm_cluster.node
        run = run_json(project.path, "tiny-slurm")
        assert run["timings"]["time_to_ready_s"] > 1
        # the job's log (on the shared filesystem) was archived with the run
        archived = (Path(run["server"]["run_dir"]) / "server.log").read_text()
        assert "Application startup complete" in archived
        assert Path(out["log"]).read_text().startswith(archived[:200])
        ps = json.loads(project.cli("ps", "--host", "cluster", "--json").stdout)
        (srv,) = ps["servers"]
        assert srv["state"] == "healthy" and srv["job"]["id"] == out["job"]
    finally:
        stop = project.cli("stop", "tiny-slurm", "--host", "cluster", "--grace", "10")
    assert stop.code == 0, stop.output
    assert not port_open(out["port"])
    assert (out["job"], "tiny-slurm", "CANCELLED") in slurm_cluster.jobs()


def test_batched_tokens_failure_in_a_job(project: Project, slurm_cluster: SlurmCluster
                                         ) -> None:
    refused = project.cli("launch", "tiny-slurm-batched")
    assert refused.code == ExitCode.FAILED and "batched-tokens-below-model-len" in refused.stderr
    assert all(j[1] != "tiny-slurm-batched" for j in slurm_cluster.jobs())  # none submitted

    res = project.cli("launch", "tiny-slurm-batched", "--force", "--json", "--grace", "5")
    out = json.loads(res.stdout)
    assert res.code == ExitCode.FAILED and out["verdict"] == "failed", res.output
    assert out["signature"] == "batched-tokens-below-model-len"
    assert any("max_num_batched_tokens (64) is smaller than max_model_len (512)" in e["text"]
               for e in out["evidence"])
    assert out["facts"]["slurm"]["node"] == slurm_cluster.node
    # the job ended (by itself or cancelled after the verdict): nothing left queued/running
    states = {j[2] for j in slurm_cluster.jobs() if j[1] == "tiny-slurm-batched"}
    assert states and states <= {"FAILED", "CANCELLED", "COMPLETED"}, states
