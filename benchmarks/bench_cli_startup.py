"""`variantctl --help` start-up: time and heavy imports.

Target (DEVELOPERS.md / issue 2): `variantctl --help` <= 1.5x a bare
`python -c "import click"`, and it must not import libcst, fabric or deepdiff.
Also shows `status` answered from the content-hash cache (no libcst import).

    .venv/bin/python benchmarks/bench_cli_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("libcst", "fabric", "deepdiff", "paramiko")


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, env=env)
    return time.perf_counter() - t


def imported(argv_tail: list[str]) -> list[str]:
    code = (
        "import sys\nfrom variantctl.cli import run\n"
        f"run({argv_tail!r})\n"
        f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, env=dict(os.environ, VARIANTCTL_PROJECT=str(REPO)))
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("HEAVY="), out.stdout + out.stderr
    return [m for m in last.removeprefix("HEAVY=").split(",") if m]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    click_t = [timed([sys.executable, "-c", "import click"]) for _ in range(args.runs)]
    help_t = [timed([sys.executable, "-m", "variantctl", "--help"]) for _ in range(args.runs)]
    c, h = statistics.median(click_t), statistics.median(help_t)
    heavy = imported(["--help"])
    print(f"python -c 'import click'   {c * 1000:6.1f} ms (median of {args.runs})")
    print(f"variantctl --help          {h * 1000:6.1f} ms ({h / c:.2f}x, target <= 1.5x): "
          f"{'ok' if h / c <= 1.5 else 'MISSED'}")
    print(f"heavy modules imported by --help: {', '.join(heavy) or 'none'}")
    if heavy:
        sys.exit(1)


if __name__ == "__main__":
    main()
