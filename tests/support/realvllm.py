"""What the real-vLLM tests share: the single-process engine, and start budgets measured
on this machine rather than written down.

**Single process.** ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` makes vLLM CPU 0.32 keep its
default ``uni`` executor for one worker (with multiprocessing on, the CPU platform
switches to ``mp`` and spawns a worker process that imports vLLM again): a start has
one process fewer to spawn and import — measured on this 2-core machine, 28 s instead
of 39 s when quiet, 65 s instead of 116 s at load 9. ``OMP_NUM_THREADS=1`` goes with
it: the ``mp`` worker binds OpenMP to one core itself, the ``uni`` engine cannot
("doesn't allow to use torch.set_num_threads after the thread binding") and spins two
OpenMP threads against the API server — decoding 16 x 32 tokens took 11-33 s instead
of 3-5 s; with one thread, 2.3 s. Tests whose subject is a sweep, a benchmark, a
report, a profile or a launch's bookkeeping use it (a profile's model-runner points
then run in the engine-core process, as under vLLM's ``uni`` executor on a one-GPU
host); the classifier's captured logs (tests/vllm/test_classify_real.py) keep vLLM's
default engine, whose log is what CPU users see.

**Budgets.** How long a start may take before a test gives up, or before a launch in a
test calls the silence a stall, is scaled from one measurement per run: the time the
vLLM venv takes to import the API server's module, the first phase of every start,
which slows down with the machine like the rest of it. On a quiet machine the floors
apply (the figures the tests used before); on a loaded one the budgets grow with it.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: hosts.yaml ``env:`` entries of a real-vLLM test host (YAML flow mapping body)
HOST_ENV = ("VLLM_CPU_KVCACHE_SPACE: '1', VLLM_ENABLE_V1_MULTIPROCESSING: '0', "
            "OMP_NUM_THREADS: '1'")
#: the same as a variant's ``env:`` block
VARIANT_ENV = ("env:\n  VLLM_CPU_KVCACHE_SPACE: '1'\n  VLLM_ENABLE_V1_MULTIPROCESSING: '0'\n"
               "  OMP_NUM_THREADS: '1'\n")


@dataclass(frozen=True)
class StartBudget:
    """Seconds a real start may take on this machine, from one measurement."""

    import_s: float  # measured: importing vLLM's API server module
    ready_timeout: int  # a launch's ``startup.ready_timeout``
    stall: int  # a launch's ``startup.stall``
    wait: int  # a test's own deadline for a server or a sweep phase

    @classmethod
    def scaled(cls, import_s: float) -> StartBudget:
        # Quiet 2-core machine: the import takes 8-10 s and a whole start 30-60 s; the
        # floors below leave room for four starts at once. A loaded machine slows both
        # alike, so the budgets follow the measured import past the floor's ratio.
        def at_least(floor: int, ratio: float) -> int:
            return max(floor, math.ceil(import_s * ratio))

        return cls(import_s, ready_timeout=at_least(400, 40), stall=at_least(240, 24),
                   wait=at_least(420, 42))

    def startup_yaml(self) -> str:
        """A variant's ``startup:`` block with these budgets."""
        return f"startup:\n  ready_timeout: {self.ready_timeout}\n  stall: {self.stall}\n"


def measure(python: Path) -> StartBudget:
    """Time one import of vLLM's API server module in the vLLM venv."""
    t0 = time.monotonic()
    proc = subprocess.run([str(python), "-c", "import vllm.entrypoints.openai.api_server"],
                          capture_output=True, text=True, timeout=900, check=False)
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    return StartBudget.scaled(took)


def copy_cpu_variants(repo: Path, project: Path, budget: StartBudget,
                      names: tuple[str, ...] = ("cpu-base", "cpu-eager")) -> None:
    """Copy the repository's CPU variants into a test project, ``cpu-base``'s startup
    budgets replaced by ``budget`` (the others extend it)."""
    (project / "variants").mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(repo / "variants" / f"{name}.yaml", project / "variants")
    base = project / "variants" / "cpu-base.yaml"
    text = base.read_text()
    block = text[text.index("startup:\n"):]
    block = block[:block.index("tags:")]
    base.write_text(text.replace(block, budget.startup_yaml()))
