"""How reliably the real CPU tune of tests/vllm/test_tune_real.py names its winner and
how its written variant's later launch compares with the tune's interval: figures.

Runs that test module ``--runs`` times (pytest, one after another, real vLLM CPU server;
about 2 minutes a run alone on 2 cores), optionally beside ``--load`` busy loops (the
load a shared machine or the suite's other workers put beside it, each loop a session
of its own), and with the measured processes raised to the test's niceness, their
sessions' autogroups and themselves (``--nice -10``, the default, as the suite runs them
under root), or as they are (``--nice 0``). "passed" is the test's verdict (the
reproduction's lower side); "within" is the two-sided check. For each run it prints
whether it passed, the best's mean and 95 % CI over its launches, the base's mean,
the written variant's figure launched again and whether that lies within the
prediction interval for one launch; then how many runs named the winner and how many reproduced it.

Usage (the environment of ``make test``: VARIANTCTL_VLLM_PYTHON, VARIANTCTL_TINY_MODEL,
VARIANTCTL_CACHE):
    .venv/bin/python benchmarks/bench_tune_real.py [--runs 3] [--load 4] [--nice 0]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODULE = "tests/vllm/test_tune_real.py"
BEST = re.compile(r"best (\d+) tok/s over (\d+) launches \(95 % CI (\d+) … (\d+); "
                  r"one launch: ± (\d+)\), base (\d+) over (\d+); "
                  r"the written variant launched again: (\d+)")


def _busy(n: int) -> list[subprocess.Popen[bytes]]:
    """Busy loops, each a session of its own like a test worker's server: Linux's
    autogroups share the CPU between sessions, so four loops in one session would weigh
    as one."""
    loop = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", loop], start_new_session=True)
            for _ in range(n)]


def one_run(nice: int) -> dict[str, object]:
    env = dict(os.environ, VARIANTCTL_TEST_NICE=str(nice))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                           MODULE], cwd=REPO, env=env, capture_output=True, text=True)
    out: dict[str, object] = {"passed": proc.returncode == 0,
                              "seconds": round(time.monotonic() - started)}
    for line in proc.stdout.splitlines():
        if line.startswith("tune: "):
            out["verdict"] = json.loads(line[len("tune: "):])["verdict"]
        if m := BEST.search(line):
            best, n, lo, hi, reach, base, m_base, again = (int(g) for g in m.groups())
            out.update(best=best, n=n, ci=(lo, hi), reach=reach, base=base, base_n=m_base,
                       again=again, within=abs(again - best) <= reach)
    if not out["passed"] and "verdict" not in out:
        out["tail"] = proc.stdout[-600:]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--load", type=int, default=0, help="busy loops beside each run")
    ap.add_argument("--nice", type=int, default=-10,
                    help="the measured processes' niceness (0: as they are)")
    args = ap.parse_args()
    loops = _busy(args.load)
    results = []
    try:
        for i in range(1, args.runs + 1):
            r = one_run(args.nice)
            results.append(r)
            print(f"run {i}: {json.dumps(r, ensure_ascii=False)}", flush=True)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    named = sum(1 for r in results if r.get("best") is not None)
    within = sum(1 for r in results if r.get("within"))
    print(f"{args.runs} runs, nice {args.nice}, {args.load} busy loops beside: "
          f"passed {sum(1 for r in results if r['passed'])}, winner named {named}, "
          f"written variant within the prediction interval {within} of {named}; "
          f"seconds a run {[r['seconds'] for r in results]}")


if __name__ == "__main__":
    main()
