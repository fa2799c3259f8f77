"""A slow start is not a hang, on the real vLLM CPU server (issue 20.1).

A CPU server is silent for tens of seconds at a time while it imports torch and vLLM and
configures its engine (a busy 2-core machine was seen silent for 68 s in engine
configuration). With a stall of 10 s that used to be ``engine-start-hang``; its processes
work all the while, so the start now ends ready, and the live display says why.

One real server start (--enforce-eager: no compilation; about a minute on 2 cores).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.ssh.launchkit import run_json
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode

pytestmark = [pytest.mark.vllm]


def test_a_silent_but_working_cpu_server_is_not_a_hang(
        tmp_path: Path, run_cli, vllm_python: Path, tiny_model: Path) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    (project / "variants" / "hosts.yaml").write_text(
        f"local:\n  python: {vllm_python}\n  workdir: {tmp_path / 'work'}\n")
    (project / "variants" / "tiny.yaml").write_text(
        f"model: {tiny_model}\n"
        f"port: {free_port()}\n"
        "args:\n  load-format: dummy\n  max-model-len: 512\n  dtype: bfloat16\n"
        "  gpu-memory-utilization: 0.3\n  enforce-eager: true\n"
        "env:\n  VLLM_CPU_KVCACHE_SPACE: '1'\n"
        # the stall is far shorter than the server's silent stretches: only its CPU work
        # keeps it from being a hang; the timeout bounds a real one
        "startup:\n  ready_timeout: 500\n  stall: 10\n")
    res: CliResult = run_cli(["launch", "tiny", "--grace", "5"], project=project)
    try:
        assert res.code == ExitCode.OK, res.output
        data = run_json(project, "tiny")
        assert data["verdict"]["verdict"] == "ready"
        # it was silent for more than half the stall, and judged by its work
        assert "still working" in res.stderr, res.stderr
    finally:
        stop = run_cli(["stop", "tiny"], project=project)
        print(stop.output, file=sys.stderr)
