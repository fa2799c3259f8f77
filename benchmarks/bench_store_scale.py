"""The run store at the scale of a year of nightly runs (issue 27 item 8): figures.

Builds a synthetic store of copies of one real-shaped run — ``run.json`` as the current
release writes it (the store-compat fixture's record, with a launch's usual script,
last log lines and engine config) and a benchmark of two levels of 64 requests each,
every request with its chunk offsets — then times, each in its own ``variantctl``
process, and prints wall seconds and peak RSS:

- ``runs --json`` over 1,000 / 4,000 / 10,000 runs (target: 10,000 in ≤ 1 s; memory
  should grow little with the number listed),
- ``runs trend KEY --json`` over 100 / 300 / 1,000 runs of one configuration
  (target: 1,000 in ≤ 2 s),
- ``report`` of 200 runs (target: ≤ 10 s).

Usage: .venv/bin/python benchmarks/bench_store_scale.py [--quick] [--keep DIR]
[--baseline CHECKOUT] [--repeat N] [--only runs|trend|report]
(``--quick``: the smaller sizes only). Prints one line per figure; exit 0.

``--baseline CHECKOUT`` (another checkout's code, e.g. ``git archive main | tar -x -C
/tmp/main``) times each figure with that code and with this checkout's, alternately,
``--repeat`` times each (default 3), on the same store, and prints the median, the
spread (min–max) and the ratio baseline / this checkout: on a shared machine the ratio
means more than either time. Every process runs from a directory outside any checkout
with ``PYTHONPATH`` set to the code it times (``python -m`` puts the current directory
first).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "store-v2" / "runs" / "2026-07-14-cpu-base-aaaaaaaaaa-1"
TREND_KEY = "aaaaaaaaaa"  # the configuration the trend follows


def template_run() -> tuple[dict[str, Any], dict[str, Any]]:
    """A real-shaped run.json (schema 3) and benchmark document."""
    record = json.loads((FIXTURE / "run.json").read_text())
    record["schema"] = 3
    record["profiles"] = []
    record["script"] = "#!/bin/sh\n" + "".join(
        f"export VLLM_SETTING_{i}=value-{i}\n" for i in range(12)) + \
        "exec python -m vllm.entrypoints.openai.api_server --model /models/m --port 8100\n"
    record["verdict"]["last_lines"] = [
        f"INFO 07-14 10:15:{i:02d} [engine.py:{100 + i}] a line of the server's log {i}"
        for i in range(40)]
    record["facts"]["config"] = {f"setting_{i}": i for i in range(40)}
    record["facts"].update(engine="v1", attention_backend="TORCH_SDPA", kv_cache_tokens=8192)
    bench = json.loads((FIXTURE / "bench-20260714T101500Z.json").read_text())
    rng = random.Random(1)
    proto = bench["levels"][0]["requests"][0]
    for lv in bench["levels"]:
        reqs = []
        for i in range(64):
            ttft = rng.uniform(0.03, 0.09)
            offsets = [ttft + k * rng.uniform(0.01, 0.03) for k in range(16)]
            reqs.append({**proto, "index": i, "start_s": i * 0.1, "ttft_s": ttft,
                         "latency_s": offsets[-1], "chunk_offsets_s": offsets,
                         "output_tokens": 16})
        lv["requests"] = reqs
    return record, bench


def build(root: Path, runs: int, trend_runs: int) -> list[str]:
    """``runs`` run directories (the first ``trend_runs`` of configuration TREND_KEY);
    their ids in creation order."""
    record, bench = template_run()
    store = root / "runs"
    store.mkdir(parents=True)
    (root / "variants").mkdir()
    bench_file = root / "bench.json"
    bench_file.write_text(json.dumps(bench, indent=2))
    ids = []
    for n in range(runs):
        key = TREND_KEY if n < trend_runs else f"{n:010x}"
        seq = n + 1 if n < trend_runs else 1
        run_id = f"{key}-{seq}"
        day = f"2026-{1 + n // 28 % 12:02d}-{1 + n % 28:02d}"
        d = store / f"{day}-cpu-base-{run_id}"
        d.mkdir()
        name = "bench-20260714T101500Z.json"
        os.link(bench_file, d / name)  # the same measurement: a link, not a copy
        doc = {**record, "run_id": run_id, "key": key, "benchmarks": [name],
               "created_at": f"{day}T{n % 24:02d}:00:00+00:00"}
        (d / "run.json").write_text(json.dumps(doc, indent=2))
        ids.append(run_id)
    return ids


def timed(root: Path, *args: str, code: Path = REPO) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one ``variantctl`` process running ``code``."""
    env = {**os.environ, "VARIANTCTL_PROJECT": str(root), "COLUMNS": "200",
           "PYTHONPATH": str(code)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-W", "ignore", "-m", "variantctl", *args],
                            env=env, cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"variantctl {' '.join(args[:3])} failed: {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024.0


def _spread(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(ordered):6.2f} s ({ordered[0]:.2f}–{ordered[-1]:.2f})"


def figure(what: str, root: Path, args: list[str], baseline: Path | None,
           repeat: int) -> None:
    """One figure: this checkout's time and peak RSS; with a baseline, both codes'
    medians over ``repeat`` alternate runs and their ratio."""
    if baseline is None:
        wall, rss = timed(root, *args)
        print(f"{what}: {wall:6.2f} s, peak {rss:6.0f} MB")
        return
    walls: dict[str, list[float]] = {"baseline": [], "this": []}
    peaks: dict[str, list[float]] = {"baseline": [], "this": []}
    for _ in range(repeat):
        for who, code in (("baseline", baseline), ("this", REPO)):
            wall, rss = timed(root, *args, code=code)
            walls[who].append(wall)
            peaks[who].append(rss)
    ratio = statistics.median(walls["baseline"]) / statistics.median(walls["this"])
    print(f"{what}: this {_spread(walls['this'])}, peak {max(peaks['this']):4.0f} MB | "
          f"baseline {_spread(walls['baseline'])}, peak {max(peaks['baseline']):4.0f} MB | "
          f"{ratio:4.1f}x faster (n={repeat} each)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the smaller sizes only")
    ap.add_argument("--keep", type=Path, help="build the stores under DIR and keep them")
    ap.add_argument("--baseline", type=Path,
                    help="a checkout of the code to compare with (its repository root)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="with --baseline: runs of each code per figure (default 3)")
    ap.add_argument("--only", choices=("runs", "trend", "report"), action="append",
                    help="only these figures (repeatable; default: all)")
    opts = ap.parse_args()
    base = opts.keep or Path(tempfile.mkdtemp(prefix="variantctl-scale-"))
    sizes = (1000, 4000) if opts.quick else (1000, 4000, 10000)
    trends = (100, 300) if opts.quick else (100, 300, 1000)
    only = set(opts.only or ("runs", "trend", "report"))
    baseline = opts.baseline.resolve() if opts.baseline else None
    try:
        for n in sizes if "runs" in only else ():
            root = base / f"list-{n}"
            if not root.exists():
                build(root, n, min(n, 200))
            if baseline is None:  # the first listing builds the index
                figure(f"runs --json over {n:>6,} runs (index cold)", root,
                       ["runs", "--json"], None, 1)
            else:
                timed(root, "runs", "--json")  # the index warm for both codes
            figure(f"runs --json over {n:>6,} runs (index warm)", root, ["runs", "--json"],
                   baseline, opts.repeat)
        for n in trends if "trend" in only else ():
            root = base / f"trend-{n}"
            if not root.exists():
                build(root, n + 100, n)
            figure(f"runs trend over {n:>6,} runs", root,
                   ["runs", "trend", TREND_KEY, "--json"], baseline, opts.repeat)
        if "report" in only:
            root = base / "report-200"
            if not root.exists():  # (--keep: a store built before, its ids beside it)
                (base / "report-200.ids").write_text(" ".join(build(root, 200, 200)))
            ids = (base / "report-200.ids").read_text().split()
            figure("report of 200 runs", root,
                   ["report", *ids, "--out", str(root / "report")], baseline, opts.repeat)
    finally:
        if opts.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
