"""What the real-vLLM sweep modules share (tests/vllm/test_sweep_real.py, local;
test_sweep_resume_real.py, over the real sshd): the bench settings of their sweep files
and a project whose host ``cpu`` is this machine and ``cpu-ssh`` the same machine through
the SSH lab's ``gpu1`` with the same work directory, on vLLM's single-process engine
(tests/support/realvllm.py: these tests are about the sweep, not vLLM's processes).

Two modules, not one: each point is a real start (tens of seconds on 2 cores) and
pytest-xdist runs a module's tests one after another on one worker; split, the local
and the over-SSH halves run at once. Each module has its own project and work
directory (``lab``), so one's server records never show in the other's.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, CliResult, make_env
from tests.support.interruptible import variantctl_argv
from tests.support.realvllm import HOST_ENV, StartBudget, copy_cpu_variants
from tests.support.sshd import SshLab
from variantctl.cli import run

BENCH = ("bench:\n  prompts: [random]\n  input_len: 32\n  output_len: 8\n  ignore_eos: true\n"
         "  concurrency: [1, 2]\n  requests: 4\n  warmup: '1'\nstop:\n  min_success_pct: 100\n")
#: a benchmark long enough (a few seconds) to be caught mid-level
LONGER = BENCH.replace("requests: 4", "requests: 40").replace("output_len: 8", "output_len: 32")
PREDICTED = "include:\n  - {args.max-num-batched-tokens: 64, args.enable-chunked-prefill: false}\n"


class Lab:
    def __init__(self, project: Path, base: Path, budget: StartBudget):
        self.project, self.base, self.budget = project, base, budget

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.project, self.base / "cache")
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]

    def sweep_file(self, name: str, text: str) -> None:
        (self.project / "sweeps" / f"{name}.yaml").write_text(text)

    def state(self, name: str) -> dict[str, Any]:
        return json.loads((self.project / "runs" / "sweeps" / f"{name}.json").read_text())

    def records(self) -> list[str]:
        run_dir = self.base / "work" / "run"
        return sorted(p.name for p in run_dir.glob("*.json")) if run_dir.is_dir() else []

    def spawn(self, *args: str, via: Path | None = None) -> subprocess.Popen[bytes]:
        """A real variantctl process; ``via``: a command it runs under (``via`` ARGV…), as
        the first process of a session of its own."""
        argv = variantctl_argv("--project", str(self.project), *args)
        return subprocess.Popen([str(via), *argv] if via else argv, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=via is not None)

    def wait_phase(self, name: str, index: int, phase: str, proc: subprocess.Popen[bytes]
                   ) -> None:
        deadline = time.monotonic() + self.budget.wait
        while time.monotonic() < deadline:
            try:
                entry = self.state(name)["points"][index - 1]
                if entry["phase"] == phase:
                    return
            except (FileNotFoundError, ValueError, KeyError, IndexError):
                pass
            if proc.poll() is not None:
                pytest.fail(f"variantctl ended early: {proc.communicate()}")
            time.sleep(0.2)
        pytest.fail(f"point {index} never reached phase {phase}")

    def wait_record(self, path: Path, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
        """The server record at ``path`` once the launch has written it (its server
        spawned, maybe still starting)."""
        deadline = time.monotonic() + self.budget.wait
        while time.monotonic() < deadline:
            try:
                record: dict[str, Any] = json.loads(path.read_text())
                if record.get("pid"):
                    return record
            except (FileNotFoundError, ValueError):
                pass  # not yet written (records are replaced whole, never half-written)
            if proc.poll() is not None:
                pytest.fail(f"variantctl ended early: {proc.communicate()}")
            time.sleep(0.1)
        pytest.fail(f"no server record at {path}")


def sweep_lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
              tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    """A module's project (its own work directory); every server on ``cpu`` stopped at
    the end."""
    base = tmp_path_factory.mktemp("sweepreal")
    project = base / "project"
    for d in ("variants", "patchsets", "sweeps"):
        (project / d).mkdir(parents=True)
    copy_cpu_variants(REPO, project, start_budget)
    # the single-process engine: these tests are about the sweep, not vLLM's processes
    common = (f"  python: {vllm_python}\n  workdir: {base / 'work'}\n"
              f"  env: {{{HOST_ENV}}}\n  vllm_version: 0.32.0\n")
    (project / "variants" / "hosts.yaml").write_text(
        "cpu:\n" + common
        + f"cpu-ssh:\n  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n" + common)
    mp = pytest.MonkeyPatch()
    mp.setenv("VARIANTCTL_TINY_MODEL", str(tiny_model))
    lab = Lab(project, base, start_budget)
    try:
        yield lab
    finally:
        lab.cli("stop", "--all", "--host", "cpu", "--grace", "5")
        mp.undo()


def bench_doc(run_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((run_dir / name).read_text())  # type: ignore[no-any-return]
