"""Frozen benchmark result values and their JSON form (schema ``variantctl.bench/1``).

Times inside a level are seconds on the client's monotonic clock, relative to the
level's start (``RequestResult.start_s``) or to the request's own start (TTFT, chunk
offsets, E2EL), so results from different machines and runs compare directly. The JSON
keeps every per-request value needed to recompute the metrics (``metrics.compute``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from variantctl.benchparams import BenchParams

if TYPE_CHECKING:  # the attachments (bench.gpu, bench.promscrape): types only here
    from variantctl.bench.gpu import GpuSummary
    from variantctl.bench.promscrape import ServerMetricsSummary

SCHEMA = "variantctl.bench/1"


def _num(value: float | None) -> float | str | None:
    """JSON has no inf/nan: write them as strings so a reader sees them, never a crash."""
    if value is None:
        return None
    if math.isinf(value) or math.isnan(value):
        return str(value)
    return value


@dataclass(frozen=True)
class RequestResult:
    """One request as the client saw it."""

    index: int
    ok: bool
    start_s: float  # sent, seconds since the level started
    queue_s: float = 0.0  # waited for the concurrency limit before being sent
    ttft_s: float = 0.0  # first content chunk − start (vLLM: first chunk with `choices`)
    latency_s: float = 0.0  # E2EL: last content chunk − start (vLLM's `latency`)
    chunk_offsets_s: tuple[float, ...] = ()  # every content chunk's arrival − start
    prompt_tokens: int = 0  # usage.prompt_tokens (the real input length)
    output_tokens: int = 0  # usage.completion_tokens (chunk count when usage is absent)
    cached_tokens: int = 0  # usage.prompt_tokens_details.cached_tokens
    reasoning_tokens: int = 0  # usage.completion_tokens_details.reasoning_tokens
    usage_seen: bool = False  # False: output_tokens is the chunk count, not the server's
    error: str | None = None  # short reason, counted per level ("http 500", "timeout", ...)
    error_detail: str | None = None  # the server's message or exception text, shortened

    @property
    def itl_s(self) -> tuple[float, ...]:
        """Inter-token latencies per chunk, as vLLM records them (gaps between content chunks)."""
        offs = self.chunk_offsets_s
        return tuple(offs[i] - offs[i - 1] for i in range(1, len(offs)))

    @property
    def tpot_s(self) -> float | None:
        """(E2EL − TTFT) / (tokens − 1); undefined for one token (vLLM leaves those out)."""
        if not self.ok or self.output_tokens <= 1:
            return None
        return (self.latency_s - self.ttft_s) / (self.output_tokens - 1)

    @property
    def output_tps(self) -> float | None:
        """The first seed's per-request "Output TPS": output tokens / (E2EL − TTFT)."""
        decode = self.latency_s - self.ttft_s
        if not self.ok or self.output_tokens < 1 or decode <= 0:
            return None
        return self.output_tokens / decode

    @property
    def end_s(self) -> float:
        return self.start_s + self.latency_s

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "ok": self.ok,
            "start_s": self.start_s,
            "queue_s": self.queue_s,
            "ttft_s": self.ttft_s,
            "latency_s": self.latency_s,
            "chunk_offsets_s": list(self.chunk_offsets_s),
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "usage_seen": self.usage_seen,
            "error": self.error,
            "error_detail": self.error_detail,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RequestResult:
        return cls(
            index=int(data["index"]),
            ok=bool(data["ok"]),
            start_s=float(data["start_s"]),
            queue_s=float(data.get("queue_s", 0.0)),
            ttft_s=float(data["ttft_s"]),
            latency_s=float(data["latency_s"]),
            chunk_offsets_s=tuple(float(x) for x in data.get("chunk_offsets_s", ())),
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cached_tokens=int(data.get("cached_tokens", 0)),
            reasoning_tokens=int(data.get("reasoning_tokens", 0)),
            usage_seen=bool(data.get("usage_seen", False)),
            error=data.get("error"),
            error_detail=data.get("error_detail"),
        )


@dataclass(frozen=True)
class Stats:
    """Summary of one metric over a level, in milliseconds (or tok/s for output TPS).

    ``numpy`` semantics as vLLM uses them: population std, linear-interpolated percentiles;
    an empty sample gives zeros (vLLM's ``np.mean(x or 0)``) with ``count`` 0.
    """

    count: int = 0
    mean: float = 0.0
    median: float = 0.0
    std: float = 0.0
    min: float = 0.0
    max: float = 0.0
    p10: float = 0.0
    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stats:
        return cls(count=int(data["count"]), **{
            k: float(data[k]) for k in cls.__dataclass_fields__ if k != "count"
        })


@dataclass(frozen=True)
class SteadyWindow:
    """The time when in-flight requests ≥ threshold (⌈0.95 × concurrency⌉).

    From the first up-crossing of the threshold to the last down-crossing; output
    tokens are counted by emission time inside the window, TTFT/TPOT over requests
    that started in it.
    """

    threshold: int
    start_s: float
    end_s: float
    output_tokens: float
    requests_started: int
    requests_completed: int
    ttft_ms: Stats
    tpot_ms: Stats
    short: bool  # shorter than max(10 s, 10 % of the run): the warning the seed asked for

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def output_throughput(self) -> float:
        return self.output_tokens / self.duration_s if self.duration_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "duration_s": self.duration_s,
            "output_tokens": self.output_tokens,
            "output_throughput": self.output_throughput,
            "requests_started": self.requests_started,
            "requests_completed": self.requests_completed,
            "ttft_ms": self.ttft_ms.to_json(),
            "tpot_ms": self.tpot_ms.to_json(),
            "short": self.short,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SteadyWindow:
        return cls(
            threshold=int(data["threshold"]),
            start_s=float(data["start_s"]),
            end_s=float(data["end_s"]),
            output_tokens=float(data["output_tokens"]),
            requests_started=int(data["requests_started"]),
            requests_completed=int(data["requests_completed"]),
            ttft_ms=Stats.from_json(data["ttft_ms"]),
            tpot_ms=Stats.from_json(data["tpot_ms"]),
            short=bool(data["short"]),
        )


@dataclass(frozen=True)
class LevelMetrics:
    """Per-level metrics; every vLLM-named field has vLLM's definition and unit."""

    concurrency: int
    duration_s: float  # vLLM's benchmark_duration: first send → last request done
    completed: int
    failed: int
    total_input_tokens: int
    total_output_tokens: int
    total_cached_tokens: int
    total_reasoning_tokens: int
    request_throughput: float  # completed / duration
    request_goodput: float | None  # requests meeting every SLO / duration; None without SLOs
    output_throughput: float  # the seeds' "aggregate output TPS"
    total_token_throughput: float
    ttft_ms: Stats
    tpot_ms: Stats
    itl_ms: Stats
    e2el_ms: Stats
    output_tps: Stats  # per request, tok/s (the first seed's "Output TPS")
    max_output_tokens_per_s: float  # vLLM: most content chunks in one 1-s bucket
    max_concurrent_requests: int  # vLLM: most requests active in one 1-s bucket
    peak_concurrency: int  # exact: the sweep line over [start, end) intervals
    steady: SteadyWindow | None
    warnings: tuple[str, ...] = ()

    @property
    def success_rate(self) -> float:
        total = self.completed + self.failed
        return self.completed / total if total else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "duration_s": self.duration_s,
            "completed": self.completed,
            "failed": self.failed,
            "success_rate": self.success_rate,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "total_cached_tokens": self.total_cached_tokens,
            "total_reasoning_tokens": self.total_reasoning_tokens,
            "request_throughput": self.request_throughput,
            "request_goodput": self.request_goodput,
            "output_throughput": self.output_throughput,
            "total_token_throughput": self.total_token_throughput,
            "ttft_ms": self.ttft_ms.to_json(),
            "tpot_ms": self.tpot_ms.to_json(),
            "itl_ms": self.itl_ms.to_json(),
            "e2el_ms": self.e2el_ms.to_json(),
            "output_tps": self.output_tps.to_json(),
            "max_output_tokens_per_s": self.max_output_tokens_per_s,
            "max_concurrent_requests": self.max_concurrent_requests,
            "peak_concurrency": self.peak_concurrency,
            "steady": self.steady.to_json() if self.steady else None,
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LevelMetrics:
        goodput = data.get("request_goodput")
        return cls(
            concurrency=int(data["concurrency"]),
            duration_s=float(data["duration_s"]),
            completed=int(data["completed"]),
            failed=int(data["failed"]),
            total_input_tokens=int(data["total_input_tokens"]),
            total_output_tokens=int(data["total_output_tokens"]),
            total_cached_tokens=int(data["total_cached_tokens"]),
            total_reasoning_tokens=int(data["total_reasoning_tokens"]),
            request_throughput=float(data["request_throughput"]),
            request_goodput=None if goodput is None else float(goodput),
            output_throughput=float(data["output_throughput"]),
            total_token_throughput=float(data["total_token_throughput"]),
            ttft_ms=Stats.from_json(data["ttft_ms"]),
            tpot_ms=Stats.from_json(data["tpot_ms"]),
            itl_ms=Stats.from_json(data["itl_ms"]),
            e2el_ms=Stats.from_json(data["e2el_ms"]),
            output_tps=Stats.from_json(data["output_tps"]),
            max_output_tokens_per_s=float(data["max_output_tokens_per_s"]),
            max_concurrent_requests=int(data["max_concurrent_requests"]),
            peak_concurrency=int(data["peak_concurrency"]),
            steady=SteadyWindow.from_json(data["steady"]) if data.get("steady") else None,
            warnings=tuple(data.get("warnings", ())),
        )


@dataclass(frozen=True)
class WarmupResult:
    """What the warm-up sent before a level (not part of the level's metrics)."""

    requests: int
    concurrency: int
    failed: int
    duration_s: float
    errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "concurrency": self.concurrency,
            "failed": self.failed,
            "duration_s": self.duration_s,
            "errors": dict(self.errors),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WarmupResult:
        return cls(
            requests=int(data["requests"]),
            concurrency=int(data["concurrency"]),
            failed=int(data["failed"]),
            duration_s=float(data["duration_s"]),
            errors=MappingProxyType({str(k): int(v) for k, v in data.get("errors", {}).items()}),
        )


@dataclass(frozen=True)
class LevelResult:
    """One level of a ladder (one concurrency, one repeat)."""

    concurrency: int
    metrics: LevelMetrics
    requests: tuple[RequestResult, ...]
    errors: Mapping[str, int]  # reason → count
    partial: bool = False  # stopped early (Ctrl-C, server gone): the metrics cover what finished
    partial_reason: str | None = None
    repeat: int = 0
    warmup: WarmupResult | None = None
    # Attachments set by the command (E2) with dataclasses.replace.
    gpu: GpuSummary | None = None
    #: the GPUs over the steady-state window only (None: no window, or not sampled)
    gpu_steady: GpuSummary | None = None
    server_metrics: ServerMetricsSummary | None = None

    @property
    def all_failed(self) -> bool:
        return bool(self.requests) and self.metrics.completed == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "repeat": self.repeat,
            "partial": self.partial,
            "partial_reason": self.partial_reason,
            "errors": dict(self.errors),
            "warmup": self.warmup.to_json() if self.warmup else None,
            "metrics": self.metrics.to_json(),
            "requests": [r.to_json() for r in self.requests],
            "gpu": _attachment_json(self.gpu),
            "gpu_steady": _attachment_json(self.gpu_steady),
            "server_metrics": _attachment_json(self.server_metrics),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LevelResult:
        return cls(
            concurrency=int(data["concurrency"]),
            metrics=LevelMetrics.from_json(data["metrics"]),
            requests=tuple(RequestResult.from_json(r) for r in data["requests"]),
            errors=MappingProxyType({str(k): int(v) for k, v in data.get("errors", {}).items()}),
            partial=bool(data.get("partial", False)),
            partial_reason=data.get("partial_reason"),
            repeat=int(data.get("repeat", 0)),
            warmup=WarmupResult.from_json(data["warmup"]) if data.get("warmup") else None,
            gpu=_gpu_from_json(data.get("gpu")),
            gpu_steady=_gpu_from_json(data.get("gpu_steady")),
            server_metrics=_server_metrics_from_json(data.get("server_metrics")),
        )


def _attachment_json(value: GpuSummary | ServerMetricsSummary | None) -> Any:
    return None if value is None else value.to_json()


def _gpu_from_json(data: Mapping[str, Any] | None) -> GpuSummary | None:
    if data is None:
        return None
    from variantctl.bench.gpu import GpuSummary  # imported late: model.py stays light

    return GpuSummary.from_json(data)


def _server_metrics_from_json(data: Mapping[str, Any] | None) -> ServerMetricsSummary | None:
    if data is None:
        return None
    from variantctl.bench.promscrape import ServerMetricsSummary

    return ServerMetricsSummary.from_json(data)


@dataclass(frozen=True)
class Target:
    """What was measured: the URL the client used, and the variant/host when known."""

    url: str
    variant: str | None = None
    host: str | None = None
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "variant": self.variant, "host": self.host, "model": self.model}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Target:
        return cls(url=data["url"], variant=data.get("variant"), host=data.get("host"),
                   model=data.get("model"))


@dataclass(frozen=True)
class BenchResult:
    """A whole run: the parameters, the target and every level in the order run."""

    params: BenchParams
    target: Target
    started_at: str  # ISO 8601 UTC
    levels: tuple[LevelResult, ...]

    @property
    def tpot_increase(self) -> dict[int, float | None]:
        """The second seed's "TPOT 增量" per concurrency: mean TPOT / mean TPOT at c=1 − 1.

        ``None`` for every level when the ladder has no concurrency-1 level (or its TPOT is
        undefined); with ``--repeat`` the levels of one concurrency are averaged first.
        """
        return tpot_increase(self.levels)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "started_at": self.started_at,
            "target": self.target.to_json(),
            "params": self.params.to_json(),
            "tpot_increase": {str(c): _num(v) for c, v in self.tpot_increase.items()},
            "levels": [level.to_json() for level in self.levels],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BenchResult:
        from variantctl.errors import VariantctlError

        if data.get("schema") != SCHEMA:
            raise VariantctlError(
                f"not a {SCHEMA} result (schema: {data.get('schema')!r})"
            )
        return cls(
            params=BenchParams.from_json(data["params"]),
            target=Target.from_json(data["target"]),
            started_at=str(data["started_at"]),
            levels=tuple(LevelResult.from_json(level) for level in data["levels"]),
        )


def tpot_increase(levels: tuple[LevelResult, ...]) -> dict[int, float | None]:
    by_c: dict[int, list[float]] = {}
    for level in levels:
        if level.metrics.tpot_ms.count:
            by_c.setdefault(level.concurrency, []).append(level.metrics.tpot_ms.mean)
    means = {c: sum(v) / len(v) for c, v in by_c.items()}
    base = means.get(1)
    out: dict[int, float | None] = {}
    for level in levels:
        c = level.concurrency
        if c in out:
            continue
        out[c] = None if not base or c not in means else means[c] / base - 1.0
    return out


__all__ = [
    "SCHEMA",
    "BenchResult",
    "LevelMetrics",
    "LevelResult",
    "RequestResult",
    "Stats",
    "SteadyWindow",
    "Target",
    "WarmupResult",
]
