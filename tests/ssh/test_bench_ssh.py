"""``variantctl bench`` over the real sshd: the server of a variant launched on gpu1 is
reached through the SSH connection's forward (a local listener relaying direct-tcpip
channels), its GPUs sampled with the labelled stand-in nvidia-smi run over SSH, its
death noticed over SSH. The server is the labelled FAKE OpenAI server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.bench_project import make_bench_project
from tests.support.sshd import SshLab, free_port
from variantctl.exitcodes import ExitCode

pytestmark = pytest.mark.ssh
Run = Callable[..., CliResult]


@pytest.fixture
def project(tmp_path: Path, ssh_lab: SshLab, run_cli: Run) -> Iterator[Path]:
    root = make_bench_project(tmp_path / "proj", ssh_lab)
    yield root
    run_cli(["stop", "--all", "--host", "gpu1", "--grace", "2"], project=root)


def launch(run_cli: Run, project: Path, variant: str) -> int:
    port = free_port()
    res = run_cli(["launch", variant, "--host", "gpu1", "--port", str(port), "--grace", "2"],
                  project=project)
    assert res.code == 0, res.output
    return port


def test_ladder_through_the_ssh_forward(run_cli: Run, project: Path) -> None:
    port = launch(run_cli, project, "fake-openai")
    res = run_cli(["bench", "fake-openai", "--host", "gpu1", "--concurrency", "1,2",
                   "--requests", "5", "--output-len", "10", "--warmup", "1", "--json"],
                  project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["target"]["host"] == "gpu1"
    # the client talked to the forward's local port, not to the server's port
    assert not doc["target"]["url"].endswith(f":{port}")
    for lv in doc["levels"]:
        m = lv["metrics"]
        assert (m["completed"], m["failed"], m["total_output_tokens"]) == (5, 0, 50)
        assert lv["warmup"]["requests"] == 1
        assert lv["gpu"]["available"] and len(lv["gpu"]["devices"]) == 2
    assert (project / "smi-gpu1").is_file()  # the stand-in ran on gpu1 (through SSH)
    assert Path(doc["stored"]).is_file()


def test_the_server_dying_mid_level_over_ssh(run_cli: Run, project: Path) -> None:
    launch(run_cli, project, "fake-openai-dies")
    res = run_cli(["bench", "fake-openai-dies", "--host", "gpu1", "--requests", "30",
                   "--output-len", "40", "--warmup", "off", "--concurrency", "2", "--json"],
                  project=project)
    assert res.code == ExitCode.FAILED, res.output
    doc = json.loads(res.stdout)
    assert doc["levels"][0]["partial"]
    assert doc["server_death"]["variant"] == "fake-openai-dies"
    assert "died during the level" in res.stderr


def test_not_running_on_the_remote_host(run_cli: Run, project: Path) -> None:
    res = run_cli(["bench", "fake-openai", "--host", "gpu1"], project=project)
    assert res.code == ExitCode.USAGE
    assert "fake-openai is not running on host gpu1" in res.stderr
