"""End to end over a real OpenSSH server with the real vLLM CPU server.

The seed's story on real code: a host whose PYTHONPATH holds two copies of vLLM
with a hard-coded ``enforce_eager=True`` in arg_utils.py. A launch without
``--enforce-eager`` still reports ``enforce_eager=True`` (its ``expect`` fails);
``apply eager-allreduce`` over SSH fixes both copies; the same launch then
reports ``enforce_eager=False``. Plus the batched-tokens failure diagnosed from
the log, and a launch refused because the port is taken.

Three real server starts in total, on vLLM's single-process engine
(tests/support/realvllm.py): the story is variantctl's, not vLLM's processes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult, make_env
from tests.ssh.launchkit import run_json
from tests.support.realvllm import VARIANT_ENV, StartBudget
from tests.support.sshd import SshLab, free_port
from tests.support.vllm_roots import make_corex_roots
from variantctl.cli import run
from variantctl.exitcodes import ExitCode
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import group_members, port_in_use

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]


class Lab:
    def __init__(self, project: Path, roots: list[Path], port: int, cache: Path,
                 budget: StartBudget):
        self.project, self.roots, self.port, self.cache = project, roots, port, cache
        self.budget = budget

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.project, self.cache)
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        vllm_site_packages: Path, tiny_model: Path, start_budget: StartBudget
        ) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("seed")
    roots = make_corex_roots(vllm_site_packages, base / "corex")
    project = base / "project"
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", project / "patchsets")
    (project / "variants" / "hosts.yaml").write_text(
        "gpu1:\n"
        f"  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n"
        f"  python: {vllm_python}\n"
        f"  workdir: {base / 'gpu1-work'}\n"
        "  vllm_version: 0.32.0\n"
        f"  site_roots: [{roots[0]}, {roots[1]}]\n"
        f"  env:\n    PYTHONPATH: {roots[0]}:{roots[1]}\n"
    )
    port = free_port()
    common = (
        "host: gpu1\n"
        f"model: {tiny_model}\n"
        f"port: {port}\n"
        "args:\n  load-format: dummy\n  max-model-len: 512\n  dtype: bfloat16\n"
        "  gpu-memory-utilization: 0.3\n"
        + VARIANT_ENV + start_budget.startup_yaml()
    )
    (project / "variants" / "tiny-graphs.yaml").write_text(
        "description: tiny Llama without --enforce-eager (CUDA graphs / compilation wanted)\n"
        + common + "expect:\n  enforce_eager: false\n")
    (project / "variants" / "tiny-batched.yaml").write_text(
        "extends: tiny-graphs\n"
        "args:\n  max-num-batched-tokens: 64\n  enable-chunked-prefill: false\n"
        "expect:\n  enforce_eager: null\n")
    (project / "variants" / "tiny-other.yaml").write_text(
        "extends: tiny-graphs\ndescription: same port, another variant\n")
    lab = Lab(project, roots, port, base / "cache", start_budget)
    yield lab
    lab.cli("stop", "--all", "--host", "gpu1", "--grace", "5")


def test_seed_story_over_ssh(lab: Lab) -> None:
    # which copies exist and which one runs
    loc = lab.cli("locate", "vllm.engine.arg_utils", "--host", "gpu1", "--json")
    assert loc.code == 0, loc.output
    (found,) = json.loads(loc.stdout)["results"]
    mine = [str(r / "vllm" / "engine" / "arg_utils.py") for r in lab.roots]
    assert [c["path"] for c in found["copies"]][:2] == mine
    assert found["imported"] == mine[0]

    status = lab.cli("status", "eager-allreduce", "--host", "gpu1", "--json")
    assert "pristine" in status.stdout, status.output

    # 1. hard-coded eager: the log says enforce_eager=True although the flag is absent
    first = lab.cli("launch", "tiny-graphs", "--json", "--grace", "5")
    out = json.loads(first.stdout)
    assert out["verdict"] == "ready", first.output
    assert first.code == ExitCode.FAILED  # ready, but its expect failed
    assert out["facts"]["config"]["enforce_eager"] is True
    assert out["facts"]["vllm_version"] == "0.32.0"
    assert out["expect"] == [{"key": "enforce_eager", "expected": False, "actual": True,
                              "source": "expect.enforce_eager", "reason": "differs"}]
    ps = lab.cli("ps", "--host", "gpu1", "--json")
    (srv,) = json.loads(ps.stdout)["servers"]
    assert srv["state"] == "healthy" and srv["port"] == lab.port and srv["processes"] >= 2

    # a second server on the same port is refused before anything starts
    other = lab.cli("launch", "tiny-other")
    assert other.code == ExitCode.FAILED
    assert f"port {lab.port} is already in use on host gpu1" in other.stderr

    stop = lab.cli("stop", "tiny-graphs", "--host", "gpu1", "--grace", "10")
    assert stop.code == 0 and f"port {lab.port} is free" in stop.stdout, stop.output
    assert group_members(LocalTarget(), srv["pid"]) == []

    # 2. patch both copies over SSH
    applied = lab.cli("apply", "eager-allreduce", "--host", "gpu1")
    assert applied.code == 0, applied.output
    for path in mine:
        text = Path(path).read_text()
        assert "enforce_eager=self.enforce_eager," in text
        assert "disable_custom_all_reduce=self.disable_custom_all_reduce," in text

    # 3. the same launch now honours the (absent) flag
    second = lab.cli("launch", "tiny-graphs", "--json", "--grace", "5")
    out2 = json.loads(second.stdout)
    try:
        assert second.code == 0, second.output
        assert out2["verdict"] == "ready"
        assert out2["facts"]["config"]["enforce_eager"] is False
        assert out2["expect_ok"] is True
        run = run_json(lab.project, "tiny-graphs")
        assert run["host"]["name"] == "gpu1" and run["script"].startswith("#!/bin/sh")
        assert "export PYTHONPATH=" in run["script"]
        assert run["verdict"]["verdict"] == "ready"
        assert run["timings"]["time_to_ready_s"] > 1
        assert "enforce_eager=False" in (Path(run["server"]["run_dir"]) / "server.log"
                                         ).read_text()
        # the patch state is part of what decides a run: a new configuration, a new key
        assert out2["run_id"].split("-")[0] != out["run_id"].split("-")[0]
        listed = json.loads(lab.cli("runs", "--variant", "tiny-graphs", "--json").stdout)
        assert [(r["run_id"], r["verdict"], r["expect_ok"]) for r in listed["runs"]] == [
            (out["run_id"], "ready", False), (out2["run_id"], "ready", True)]
        shown = lab.cli("runs", "show", out["run_id"])
        assert "expect FAIL enforce_eager" in shown.stdout, shown.output
    finally:
        lab.cli("stop", "tiny-graphs", "--host", "gpu1", "--grace", "10")
    assert not port_in_use(LocalTarget(), lab.port)


def test_batched_tokens_failure_is_diagnosed(lab: Lab) -> None:
    refused = lab.cli("launch", "tiny-batched")
    assert refused.code == ExitCode.FAILED
    assert "pre-flight" in refused.stderr and "batched-tokens-below-model-len" in refused.stderr
    assert not list((lab.project / "runs").glob("*-tiny-batched-*"))  # nothing started

    res = lab.cli("launch", "tiny-batched", "--force", "--json", "--grace", "5")
    out = json.loads(res.stdout)
    assert res.code == ExitCode.FAILED, res.output
    assert out["verdict"] == "failed"
    assert out["signature"] == "batched-tokens-below-model-len"
    assert any("max_num_batched_tokens (64) is smaller than max_model_len (512)" in e["text"]
               for e in out["evidence"])
    # decided by its decisive line, long before the silence could have been a stall
    assert out["seconds"] < lab.budget.stall
    data = run_json(lab.project, "tiny-batched")
    assert group_members(LocalTarget(), data["server"]["pid"]) == []
    assert not port_in_use(LocalTarget(), lab.port)
