"""`variantctl list` on deep and wide catalogs: time linear in the number of files.

Issue 8: an `extends` chain of 400 took 37 s (every variant re-resolved all its
ancestors), one of 1,000 exited 70 (recursion). Target: resolving is linear, so
the time per variant stays flat as the catalog grows (the ratio of the largest
catalog's per-variant time to the smallest's must stay below 3).

    .venv/bin/python benchmarks/bench_catalog.py [--sizes 250,500,1000,2000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def chain(root: Path, n: int) -> Path:
    vdir = root / "variants"
    vdir.mkdir(parents=True)
    (root / "patchsets").mkdir()
    (vdir / "v0.yaml").write_text("args:\n  max-model-len: 100\n")
    for i in range(1, n):
        (vdir / f"v{i}.yaml").write_text(f"extends: v{i - 1}\nargs:\n  max-num-seqs: {i}\n")
    return root


def timed_list(project: Path) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "variantctl", "--project", str(project), "list",
                    "--json"], capture_output=True, check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="250,500,1000,2000")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    per: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = timed_list(chain(Path(tmp) / "base", 1))  # interpreter and imports
        for n in sizes:
            t = timed_list(chain(Path(tmp) / str(n), n))
            per.append(max(t - base, 1e-6) / n)
            print(f"list, extends chain of {n:5d}: {t:6.2f} s "
                  f"({per[-1] * 1000:.2f} ms per variant)")
    ratio = per[-1] / per[0]
    print(f"per-variant time, largest / smallest: {ratio:.2f} (target < 3): "
          f"{'ok' if ratio < 3 else 'MISSED'}")
    if ratio >= 3:
        sys.exit(1)


if __name__ == "__main__":
    main()
