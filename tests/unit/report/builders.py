"""Hand-made benchmark results and run records for the report tests.

The values are chosen so every table cell can be checked by hand: e.g. a level's
aggregate TPS is exactly what the test passes in.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any

from variantctl.bench import metrics
from variantctl.bench.gpu import GpuDevice, GpuSummary, Stat
from variantctl.bench.model import (
    BenchResult,
    LevelMetrics,
    LevelResult,
    RequestResult,
    Stats,
    SteadyWindow,
    Target,
)
from variantctl.benchparams import BenchParams
from variantctl.runs.run import Evidence, RunRecord, RunVerdict
from variantctl.runs.store import RunStore

WHEN = datetime(2026, 7, 14, 10, 15, tzinfo=timezone.utc)


def st(mean: float = 0.0, p10: float | None = None, p50: float | None = None,
       p90: float | None = None, count: int = 4) -> Stats:
    return Stats(count=count, mean=mean, median=p50 if p50 is not None else mean, std=0.0,
                 min=mean, max=mean, p10=p10 if p10 is not None else mean,
                 p50=p50 if p50 is not None else mean, p90=p90 if p90 is not None else mean,
                 p99=p90 if p90 is not None else mean)


def gpu(util: float, util_max: float, mem: float, power: float, index: int = 0,
        limit: float = 250.0) -> GpuDevice:
    return GpuDevice(index=index, samples=10, busy_samples=8, stats={
        "util_gpu_pct": Stat(util, util_max, util),
        "mem_used_mib": Stat(mem, mem + 100, mem),
        "power_w": Stat(power, power + 10, power),
    }, mem_total_mib=32768.0, power_limit_w=limit)


def level(c: int, *, agg: float, ttft_p90_ms: float, tps_p10: float, tps_p50: float,
          tpot_ms: float = 100.0, completed: int = 4, failed: int = 0, repeat: int = 0,
          devices: Sequence[GpuDevice] | None = None, no_gpu_reason: str = "no GPU monitor",
          input_tokens: int = 32) -> LevelResult:
    steady = SteadyWindow(threshold=c, start_s=1.0, end_s=11.0, output_tokens=agg * 10,
                          requests_started=completed, requests_completed=completed,
                          ttft_ms=st(ttft_p90_ms, p90=ttft_p90_ms), tpot_ms=st(tpot_ms),
                          short=True)
    metrics = LevelMetrics(
        concurrency=c, duration_s=10.0, completed=completed, failed=failed,
        total_input_tokens=input_tokens * completed, total_output_tokens=int(agg * 10),
        total_cached_tokens=0, total_reasoning_tokens=0,
        request_throughput=completed / 10.0, request_goodput=None, output_throughput=agg,
        total_token_throughput=agg, ttft_ms=st(ttft_p90_ms / 2, p90=ttft_p90_ms),
        tpot_ms=st(tpot_ms), itl_ms=st(tpot_ms), e2el_ms=st(1000.0),
        output_tps=st(tps_p50, p10=tps_p10, p50=tps_p50), max_output_tokens_per_s=agg,
        max_concurrent_requests=c, peak_concurrency=c, steady=steady)
    summary = (GpuSummary(True, "nvidia-smi", None, 1.0, 10, tuple(devices))
               if devices else GpuSummary(False, None, no_gpu_reason))
    return LevelResult(c, metrics, (), MappingProxyType({}), repeat=repeat, gpu=summary)


def measured_level(c: int, seed: int, *, n: int = 40, slow: float = 1.0, repeat: int = 0
           ) -> LevelResult:
    """A level with real-shaped requests (the statistics resample them): ``n`` requests,
    ``c`` at a time, 16 tokens each at ~10 ms × ``slow`` per token, TTFT ~50 ms × ``slow``."""
    rng = random.Random(seed)
    reqs = []
    slots = [0.0] * c
    for i in range(n):
        k = min(range(c), key=lambda j: slots[j])
        start = slots[k]
        ttft = rng.uniform(0.04, 0.06) * slow
        gaps = [rng.uniform(0.008, 0.012) * slow for _ in range(15)]
        offs = [ttft]
        for g in gaps:
            offs.append(offs[-1] + g)
        reqs.append(RequestResult(index=i, ok=True, start_s=start, ttft_s=ttft,
                                  latency_s=offs[-1], chunk_offsets_s=tuple(offs),
                                  output_tokens=16, usage_seen=True))
        slots[k] = start + offs[-1]
    duration = max(r.end_s for r in reqs)
    m = metrics.compute(reqs, concurrency=c, duration_s=duration)
    return LevelResult(c, m, tuple(reqs), MappingProxyType({}), repeat=repeat)


def result(levels: Sequence[LevelResult], *, prompt: str = "random", output_len: int = 16,
           input_len: int | None = 32, variant: str = "v") -> BenchResult:
    conc = tuple(dict.fromkeys(lv.concurrency for lv in levels))
    params = BenchParams(prompt=prompt, input_len=input_len if prompt == "random" else None,
                         output_len=output_len, concurrency=conc,
                         repeat=max(lv.repeat for lv in levels) + 1)
    return BenchResult(params, Target("http://127.0.0.1:8000", variant, "cpu"),
                       WHEN.isoformat(), tuple(levels))


def record(run_id: str, variant: str, *, verdict: str = "ready", args: Mapping[str, Any]
           | None = None, env: Mapping[str, str] | None = None, host: str = "cpu",
           patches: Mapping[str, Any] | None = None, signature: str | None = None,
           evidence: tuple[tuple[int, str], ...] = (), remediation: str = "",
           model: str | None = None, facts: Mapping[str, Any] | None = None) -> RunRecord:
    key = run_id.rsplit("-", 1)[0]
    return RunRecord(
        run_id=run_id, key=key, variant_name=variant, created_at=WHEN.isoformat(),
        variant={"name": variant, "host": host, "model": model, "port": 8100,
                 "args": dict(args or {}), "env": dict(env or {}), "requires": [],
                 "log": "{workdir}/logs/{name}.log"},
        host={"name": host, "ssh": None, "python": "/usr/bin/python3", "workdir": "/w",
              "env": {"VLLM_CPU_KVCACHE_SPACE": "1"}},
        script="#!/bin/sh\n", server=None, patches=dict(patches or {}),
        verdict=RunVerdict(kind=verdict, signature=signature, remediation=remediation,
                           message=f"{verdict} start",
                           evidence=tuple(Evidence(n, t) for n, t in evidence)),
        facts=dict(facts or {"vllm_version": "0.32.0"}), timings={"time_to_ready_s": 42.5},
    )


def store_run(store: RunStore, rec: RunRecord, results: Sequence[BenchResult] = ()) -> Path:
    """Write ``rec`` into the store under its own id, with ``results`` attached."""
    d = store.create(key=rec.key, variant=rec.variant_name, when=WHEN)
    assert d.run_id == rec.run_id, (d.run_id, rec.run_id)
    store.write(d.path, rec)
    for i, r in enumerate(results):
        store.attach_benchmark(d.path, r, WHEN.replace(second=i))
    return d.path


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path
