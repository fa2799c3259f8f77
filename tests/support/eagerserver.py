"""One real ``cpu-eager`` server for the whole session, shared by the modules that only
read it (benchmark it, report on it): a real start costs tens of seconds on 2 cores, and
these modules need a healthy server, not a start of their own.

Shared by tests/vllm/test_bench_real.py (``bench`` by variant name, locally and over
the real sshd), test_report_real.py (the runs ``report`` and ``compare`` read) and
test_workloads_real.py (``bench --url`` with its datasets). The fixture
(``eager_server`` in tests/vllm/conftest.py) is session-scoped; with pytest-xdist's
``--dist loadgroup`` a session fixture is per worker, so those modules carry the same
``pytest.mark.xdist_group(GROUP)`` and run on one worker, one server.

One project holds the server's launch, so ``bench`` stores into the launch's run (a
launch of another project is never written through): the repository's CPU variants on
vLLM's single-process engine (tests/support/realvllm.py), host ``cpu`` (this machine;
``gpu:`` peaks declared, labelled, only so the report's roofline has numbers) and host
``cpu-ssh`` (the same machine through the SSH lab's ``gpu1``, same work directory, GPUs
sampled by the labelled stand-in nvidia-smi). The launch is ``--no-wait``: a module may
start its own servers while this one loads, then :meth:`SharedServer.ready` waits for
the verdict (once). Each module keeps what it adds apart: its own variants' servers,
its own run records; none stops, relaunches or reconfigures ``cpu-eager``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, CliResult, make_env
from tests.support.bench_project import STANDIN_SMI
from tests.support.realvllm import HOST_ENV, StartBudget, copy_cpu_variants
from tests.support.sshd import SshLab, free_port
from variantctl.cli import run

#: the xdist group of every module using the shared server
GROUP = "cpu-eager-server"
VARIANT = "cpu-eager"


class SharedServer:
    """The project holding the shared ``cpu-eager`` launch, and its CLI."""

    def __init__(self, base: Path, port: int):
        self.base, self.port = base, port
        self.project, self.cache, self.work = base / "project", base / "cache", base / "work"
        self.url = f"http://127.0.0.1:{port}"
        self._verdict: CliResult | None = None

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.project, self.cache)
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]

    def ready(self) -> None:
        """Wait for the server's verdict (``watch``, the first time only): ready."""
        if self._verdict is None:
            self._verdict = self.cli("watch", VARIANT)
        assert self._verdict.code == 0, self._verdict.output

    def record(self, variant: str = VARIANT) -> dict[str, Any]:
        """The host's record of ``variant``'s running server (work/run/VARIANT.json)."""
        data: dict[str, Any] = json.loads((self.work / "run" / f"{variant}.json").read_text())
        return data


def shared_server(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab,
                  vllm_python: Path, tiny_model: Path, start_budget: StartBudget
                  ) -> Iterator[SharedServer]:
    """Set up the project, launch ``cpu-eager`` (not waiting), stop it at the end."""
    server = SharedServer(tmp_path_factory.mktemp("eagerserver"), free_port())
    project = server.project
    copy_cpu_variants(REPO, project, start_budget,
                      ("cpu-base", "cpu-eager", "cpu-batched-tokens"))
    (project / "patchsets").mkdir()
    common = (f"  python: {vllm_python}\n  workdir: {server.work}\n"
              f"  env: {{{HOST_ENV}}}\n  vllm_version: 0.32.0\n")
    monitor = json.dumps(f"env STANDIN_SMI_STATE={server.base / 'smi'} {STANDIN_SMI}")
    (project / "variants" / "hosts.yaml").write_text(
        "cpu:\n" + common
        + "  gpu: {name: test-declared, peak_bandwidth_gbs: 50, peak_tflops: 1, count: 1}\n"
        + f"cpu-ssh:\n  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n" + common
        + f"  gpu_monitor: {monitor}\n")
    mp = pytest.MonkeyPatch()
    mp.setenv("VARIANTCTL_TINY_MODEL", str(tiny_model))
    try:
        res = server.cli("launch", VARIANT, "--port", str(server.port), "--no-wait")
        assert res.code == 0, res.output
        yield server
    finally:
        server.cli("stop", "--all", "--host", "cpu", "--grace", "5")
        mp.undo()
