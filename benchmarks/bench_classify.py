"""Classifier speed: whole-file MB/s on one core and streaming time per line.

Builds a realistic log in memory: every era fixture under tests/fixtures/logs
(startups, failures with their tracebacks, the real CPU-server logs) interleaved
with the request and metrics lines a running server prints, about 60 MB in all.
Prints the figures quoted in docs/classify.md; exits non-zero if the targets
(>= 50 MB/s whole file, < 1 ms per streamed line) are missed.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from variantctl.config.catalog import default_catalog  # noqa: E402
from variantctl.logs.classify import classify_text  # noqa: E402
from variantctl.logs.stream import StreamClassifier  # noqa: E402

TARGET_MB = 60
WHOLE_FILE_TARGET = 50.0  # MB/s
STREAM_TARGET_US = 1000.0  # per line


def build_log(size_mb: int) -> str:
    rng = random.Random(42)
    fixtures = sorted((REPO / "tests/fixtures/logs").glob("*/*.log"))
    startups = [p.read_text("utf-8") for p in fixtures]
    chunks: list[str] = []
    total = 0
    while total < size_mb * 1_000_000:
        block = rng.choice(startups)
        runtime = []
        for _ in range(rng.randint(200, 2000)):
            if rng.random() < 0.7:
                runtime.append(
                    "(APIServer pid=31) INFO:     "
                    f"10.0.{rng.randint(0, 255)}.{rng.randint(1, 254)}:"
                    f'{rng.randint(1024, 65535)} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
                )
            else:
                runtime.append(
                    "(APIServer pid=31) INFO 10-20 04:30:12 [loggers.py:123] Engine 000: "
                    "Avg prompt "
                    f"throughput: {rng.random() * 900:.1f} tokens/s, Avg generation throughput: "
                    f"{rng.random() * 300:.1f} tokens/s, Running: {rng.randint(0, 64)} reqs, "
                    f"Waiting: 0 reqs, GPU KV cache usage: {rng.random() * 100:.1f}%, "
                    "Prefix cache hit rate: "
                    f"{rng.random() * 100:.1f}%"
                )
        text = block + "\n".join(runtime) + "\n"
        chunks.append(text)
        total += len(text)
    return "".join(chunks)


def bench_whole_file(text: str) -> float:
    catalog = default_catalog()
    classify_text(text[:100_000], catalog)  # warm caches (regex compilation)
    size = len(text.encode("utf-8")) / 1e6
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        classify_text(text, catalog)
        runs.append(time.perf_counter() - t0)
    return size / min(runs)


def bench_stream(lines: list[str]) -> tuple[float, float]:
    catalog = default_catalog()
    per_line: list[float] = []
    clf = StreamClassifier(catalog, stall_seconds=60, clock=time.monotonic)
    t_all = time.perf_counter()
    for line in lines:
        t0 = time.perf_counter()
        clf.feed(line)
        per_line.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - t_all
    per_line.sort()
    mean_us = elapsed / len(lines) * 1e6
    p99_us = per_line[int(len(per_line) * 0.99)] * 1e6
    return mean_us, max(p99_us, statistics.median(per_line) * 1e6)


def main() -> int:
    text = build_log(TARGET_MB)
    mbps = bench_whole_file(text)
    startup_only = "".join(
        p.read_text("utf-8") for p in sorted((REPO / "tests/fixtures/logs").glob("*/*.log"))
    ) * 40
    mbps_startup = bench_whole_file(startup_only)
    lines = text.splitlines()[:300_000]
    mean_us, p99_us = bench_stream(lines)
    print(f"whole file, mixed log ({len(text) / 1e6:.0f} MB): {mbps:.0f} MB/s on one core")
    size = len(startup_only) / 1e6
    print(f"whole file, startup lines only ({size:.0f} MB): {mbps_startup:.0f} MB/s")
    print(f"streaming ({len(lines):,} lines): {mean_us:.1f} us/line mean, {p99_us:.1f} us p99")
    ok = mbps >= WHOLE_FILE_TARGET and p99_us < STREAM_TARGET_US
    if not ok:
        print("TARGET MISSED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
