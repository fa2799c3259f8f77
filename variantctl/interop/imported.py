"""What another tool's result file says, in variantctl's terms (PURE).

Each reader (``vllm_result``, ``guidellm``, ``aiperf``) turns its tool's file into
:class:`ImportedBench`: levels with the tool's own figures, mapped onto the metric of
the same *definition* (docs/report.md "Import" lists the mapping), and, where the file
keeps them, the requests. :func:`bench_result` makes the stored benchmark of it.

The figures are the tool's, never recomputed: a figure the file does not hold (vLLM's
p90 when it was run with ``--metric-percentiles 99``) is NaN — shown as ``nan`` in the
report, empty in an export — not a guess.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from variantctl.bench.arrival import Profile
from variantctl.bench.model import (
    BenchResult,
    Imported,
    LevelMetrics,
    LevelResult,
    RequestResult,
    Stats,
    Target,
)
from variantctl.benchparams import BenchParams
from variantctl.jsonfields import Fields

NAN = math.nan
#: the tools ``runs import --from`` reads
TOOLS = ("vllm", "guidellm", "aiperf")


@dataclass(frozen=True)
class ImportedLevel:
    """One level of another tool's benchmark."""

    concurrency: int
    duration_s: float
    completed: int
    failed: int
    input_tokens: int
    output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    ttft_ms: Stats
    tpot_ms: Stats
    itl_ms: Stats
    e2el_ms: Stats
    output_tps: Stats
    #: requests/s the tool sent at (inf: as fast as the concurrency allowed)
    rate: float = math.inf
    requests: tuple[RequestResult, ...] = ()
    max_output_tokens_per_s: float = NAN
    max_concurrent_requests: int = 0
    errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ImportedBench:
    """A whole result file: the tool, its version when the file says, and the levels."""

    tool: str
    version: str | None
    model: str | None
    url: str | None
    started_at: str
    levels: tuple[ImportedLevel, ...]
    input_len: int | None = None
    output_len: int | None = None
    endpoint: str = "chat"


def stats_of(get: Callable[[str], float | None], count: int, *, scale: float = 1.0,
             keys: Mapping[str, str]) -> Stats:
    """A :class:`Stats` from a tool's summary: ``keys`` maps each Stats field (mean,
    median, std, min, max, p10, p50, p90, p99) to the tool's key; a key the file lacks
    is NaN. ``median`` and ``p50`` stand in for each other (the same figure)."""
    def value(name: str) -> float:
        key = keys.get(name)
        v = get(key) if key is not None else None
        if v is None and name in ("median", "p50"):
            other = keys.get("p50" if name == "median" else "median")
            v = get(other) if other is not None else None
        return NAN if v is None else v * scale

    return Stats(count=count, mean=value("mean"), median=value("median"), std=value("std"),
                 min=value("min"), max=value("max"), p10=value("p10"), p50=value("p50"),
                 p90=value("p90"), p99=value("p99"))


def number_getter(f: Fields | None) -> Callable[[str], float | None]:
    """``key -> number`` of an object (None when absent or null; a value that is not a
    number is an error naming the field)."""
    def get(key: str) -> float | None:
        return None if f is None else f.opt_number(key)

    return get


def bench_result(b: ImportedBench, file: str) -> BenchResult:
    """The stored benchmark of an imported file (``imported`` names the tool)."""
    levels = []
    for i, lv in enumerate(b.levels):
        m = LevelMetrics(
            concurrency=lv.concurrency, duration_s=lv.duration_s, completed=lv.completed,
            failed=lv.failed, total_input_tokens=lv.input_tokens,
            total_output_tokens=lv.output_tokens, total_cached_tokens=0,
            total_reasoning_tokens=0, request_throughput=lv.request_throughput,
            request_goodput=None, output_throughput=lv.output_throughput,
            total_token_throughput=lv.total_token_throughput, ttft_ms=lv.ttft_ms,
            tpot_ms=lv.tpot_ms, itl_ms=lv.itl_ms, e2el_ms=lv.e2el_ms,
            output_tps=lv.output_tps, max_output_tokens_per_s=lv.max_output_tokens_per_s,
            max_concurrent_requests=lv.max_concurrent_requests,
            peak_concurrency=lv.max_concurrent_requests or lv.concurrency, steady=None)
        profile = Profile("concurrency" if math.isinf(lv.rate) else "rate", rate=lv.rate)
        repeat = sum(1 for other in b.levels[:i] if other.concurrency == lv.concurrency
                     and other.rate == lv.rate)
        levels.append(LevelResult(lv.concurrency, m, lv.requests, lv.errors, repeat=repeat,
                                  profile=profile))
    conc = tuple(dict.fromkeys(lv.concurrency for lv in b.levels)) or (1,)
    params = BenchParams(endpoint=b.endpoint, model=b.model,
                         prompt="random" if b.input_len is not None else "short",
                         input_len=b.input_len, output_len=b.output_len or 128,
                         concurrency=conc, warmup="off",
                         repeat=max((lv.repeat for lv in levels), default=0) + 1)
    return BenchResult(params, Target(b.url or "(imported)", None, None, b.model),
                       b.started_at, tuple(levels),
                       imported=Imported(b.tool, b.version or "unknown", file))
