"""Frozen benchmark result values and their JSON form (schema ``variantctl.bench/1``).

Times inside a level are seconds on the client's monotonic clock, relative to the
level's start (``RequestResult.start_s``) or to the request's own start (TTFT, chunk
offsets, E2EL), so results from different machines and runs compare directly. The JSON
keeps every per-request value needed to recompute the metrics (``metrics.compute``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from variantctl.bench.arrival import Profile
from variantctl.bench.searchresult import SearchResult
from variantctl.benchparams import BenchParams
from variantctl.jsonfields import Fields
from variantctl.jsontypes import JsonMapping, JsonObject

if TYPE_CHECKING:  # the attachments (bench.gpu, bench.promscrape): types only here
    from variantctl.bench.gpu import GpuSummary
    from variantctl.bench.promscrape import ServerMetricsSummary

SCHEMA = "variantctl.bench/1"
#: a field with no default (``Fields.objs(key, _MISSING)``: the list must be there)
_MISSING: Any = Fields.REQUIRED


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

    def to_json(self) -> JsonObject:
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
    def from_json(cls, data: JsonMapping) -> RequestResult:
        return cls.from_fields(Fields(data, "request"))

    @classmethod
    def from_fields(cls, f: Fields) -> RequestResult:
        fast = _request_as_written(f.data)
        if fast is not None:
            return fast
        return cls(
            index=f.integer("index"),
            ok=f.flag("ok"),
            start_s=f.number("start_s"),
            queue_s=f.number("queue_s", 0.0),
            ttft_s=f.number("ttft_s"),
            latency_s=f.number("latency_s"),
            chunk_offsets_s=f.numbers("chunk_offsets_s"),
            prompt_tokens=f.integer("prompt_tokens", 0),
            output_tokens=f.integer("output_tokens", 0),
            cached_tokens=f.integer("cached_tokens", 0),
            reasoning_tokens=f.integer("reasoning_tokens", 0),
            usage_seen=f.flag("usage_seen", False),
            error=f.opt_text("error"),
            error_detail=f.opt_text("error_detail"),
        )


_FLOAT: set[type] = {float}
_new = object.__new__
#: RequestResult's fields, in order
_REQUEST_FIELDS = tuple(RequestResult.__dataclass_fields__)


def _request_as_written(d: Mapping[str, Any]) -> RequestResult | None:
    """A request as ``to_json`` writes it — every field there with its own JSON type —
    read without the per-field checks (a year of runs holds millions of requests); None
    for anything else (a missing field, an int for a float, a ``"nan"``), which
    :meth:`RequestResult.from_fields` then reads field by field, naming what is wrong."""
    g: Callable[[str], Any] = d.get  # what json.loads gave; checked below
    index, ok, offsets = g("index"), g("ok"), g("chunk_offsets_s")
    start, queue, ttft, latency = g("start_s"), g("queue_s"), g("ttft_s"), g("latency_s")
    prompt, output = g("prompt_tokens"), g("output_tokens")
    cached, reasoning = g("cached_tokens"), g("reasoning_tokens")
    usage, error, detail = g("usage_seen"), g("error"), g("error_detail")
    # exact types (a bool is not an int here, an int not a float): what to_json writes
    if not (type(index) is int and type(prompt) is int and type(output) is int
            and type(cached) is int and type(reasoning) is int
            and type(start) is float and type(queue) is float and type(ttft) is float
            and type(latency) is float and type(ok) is bool and type(usage) is bool
            and (error is None or type(error) is str)
            and (detail is None or type(detail) is str)
            and type(offsets) is list and {*map(type, offsets)} <= _FLOAT):
        return None
    # every field checked above: the instance's dict filled at once, not field by field
    # through the frozen dataclass's __init__ (half the cost of reading a request); in
    # field order from an iterator, so it keeps the class's shared keys (a dict of its
    # own, or one assigned whole, costs 2.5 times the memory: 40 MB a 1,000-run trend)
    r: RequestResult = _new(RequestResult)
    vars(r).update(zip(_REQUEST_FIELDS, (
        index, ok, start, queue, ttft, latency, tuple(offsets), prompt, output, cached,
        reasoning, usage, error, detail), strict=True))
    return r


def _requests_of(level: Fields) -> tuple[RequestResult, ...]:
    """A level's requests: each as written read at once, else field by field (so a bad
    one is named with its path, ``levels[0].requests[3].ttft_s``)."""
    items = level.items("requests", _MISSING)
    fast = [_request_as_written(r) if type(r) is dict else None for r in items]
    if None not in fast:
        return tuple(r for r in fast if r is not None)
    return tuple(RequestResult.from_fields(r) for r in level.objs("requests", _MISSING))


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

    def to_json(self) -> JsonObject:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Stats:
        return cls.from_fields(Fields(data, "stats"))

    @classmethod
    def from_fields(cls, f: Fields) -> Stats:
        d = f.data
        values = [d.get(k) for k in _STATS_FLOATS]
        if type(d.get("count")) is int and {*map(type, values)} == _FLOAT:
            # as to_json writes it (a count, nine floats): the dict filled at once, as a
            # request's is (each level has seven of these)
            st: Stats = _new(cls)
            vars(st).update(zip(_STATS_FIELDS, (d["count"], *values), strict=True))
            return st
        return cls(count=f.integer("count"), **{
            k: f.number(k) for k in cls.__dataclass_fields__ if k != "count"
        })


#: a Stats' fields, in order, and those after its count
_STATS_FIELDS = tuple(Stats.__dataclass_fields__)
_STATS_FLOATS = _STATS_FIELDS[1:]


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

    def to_json(self) -> JsonObject:
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
    def from_json(cls, data: JsonMapping) -> SteadyWindow:
        return cls.from_fields(Fields(data, "steady"))

    @classmethod
    def from_fields(cls, f: Fields) -> SteadyWindow:
        return cls(
            threshold=f.integer("threshold"),
            start_s=f.number("start_s"),
            end_s=f.number("end_s"),
            output_tokens=f.number("output_tokens"),
            requests_started=f.integer("requests_started"),
            requests_completed=f.integer("requests_completed"),
            ttft_ms=Stats.from_fields(f.obj("ttft_ms")),
            tpot_ms=Stats.from_fields(f.obj("tpot_ms")),
            short=f.flag("short"),
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

    def to_json(self) -> JsonObject:
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
    def from_json(cls, data: JsonMapping) -> LevelMetrics:
        return cls.from_fields(Fields(data, "metrics"))

    @classmethod
    def from_fields(cls, f: Fields) -> LevelMetrics:
        steady = f.opt_obj("steady")
        return cls(
            concurrency=f.integer("concurrency"),
            duration_s=f.number("duration_s"),
            completed=f.integer("completed"),
            failed=f.integer("failed"),
            total_input_tokens=f.integer("total_input_tokens"),
            total_output_tokens=f.integer("total_output_tokens"),
            total_cached_tokens=f.integer("total_cached_tokens"),
            total_reasoning_tokens=f.integer("total_reasoning_tokens"),
            request_throughput=f.number("request_throughput"),
            request_goodput=f.opt_number("request_goodput"),
            output_throughput=f.number("output_throughput"),
            total_token_throughput=f.number("total_token_throughput"),
            ttft_ms=Stats.from_fields(f.obj("ttft_ms")),
            tpot_ms=Stats.from_fields(f.obj("tpot_ms")),
            itl_ms=Stats.from_fields(f.obj("itl_ms")),
            e2el_ms=Stats.from_fields(f.obj("e2el_ms")),
            output_tps=Stats.from_fields(f.obj("output_tps")),
            max_output_tokens_per_s=f.number("max_output_tokens_per_s"),
            max_concurrent_requests=f.integer("max_concurrent_requests"),
            peak_concurrency=f.integer("peak_concurrency"),
            steady=SteadyWindow.from_fields(steady) if steady and steady.data else None,
            warnings=f.texts("warnings"),
        )


@dataclass(frozen=True)
class WarmupResult:
    """What the warm-up sent before a level (not part of the level's metrics)."""

    requests: int
    concurrency: int
    failed: int
    duration_s: float
    errors: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> JsonObject:
        return {
            "requests": self.requests,
            "concurrency": self.concurrency,
            "failed": self.failed,
            "duration_s": self.duration_s,
            "errors": dict(self.errors),
        }

    @classmethod
    def from_json(cls, data: JsonMapping) -> WarmupResult:
        return cls.from_fields(Fields(data, "warmup"))

    @classmethod
    def from_fields(cls, f: Fields) -> WarmupResult:
        return cls(
            requests=f.integer("requests"),
            concurrency=f.integer("concurrency"),
            failed=f.integer("failed"),
            duration_s=f.number("duration_s"),
            errors=MappingProxyType(f.counts("errors")),
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
    #: what produced the level's arrivals (None: a result from before profiles)
    profile: Profile | None = None

    @property
    def all_failed(self) -> bool:
        return bool(self.requests) and self.metrics.completed == 0

    def to_json(self) -> JsonObject:
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
            "profile": self.profile.to_json() if self.profile else None,
        }

    @classmethod
    def from_json(cls, data: JsonMapping) -> LevelResult:
        return cls.from_fields(Fields(data, "level"))

    @classmethod
    def from_fields(cls, f: Fields) -> LevelResult:
        warmup = f.opt_obj("warmup")
        return cls(
            concurrency=f.integer("concurrency"),
            metrics=LevelMetrics.from_fields(f.obj("metrics")),
            requests=_requests_of(f),
            errors=MappingProxyType(f.counts("errors")),
            partial=f.flag("partial", False),
            partial_reason=f.opt_text("partial_reason"),
            repeat=f.integer("repeat", 0),
            warmup=WarmupResult.from_fields(warmup) if warmup and warmup.data else None,
            gpu=_gpu_from_fields(f.opt_obj("gpu")),
            gpu_steady=_gpu_from_fields(f.opt_obj("gpu_steady")),
            server_metrics=_server_metrics_from_fields(f.opt_obj("server_metrics")),
            profile=_profile_from_fields(f.opt_obj("profile")),
        )


def _search_from_fields(f: Fields | None) -> SearchResult | None:
    return None if f is None or not f.data else SearchResult.from_fields(f)


def _imported_from_fields(f: Fields | None) -> Imported | None:
    return None if f is None or not f.data else Imported.from_fields(f)


def _profile_from_fields(f: Fields | None) -> Profile | None:
    return None if f is None or not f.data else Profile.from_fields(f)


def _attachment_json(value: GpuSummary | ServerMetricsSummary | None) -> JsonObject | None:
    return None if value is None else value.to_json()


def _gpu_from_fields(f: Fields | None) -> GpuSummary | None:
    if f is None:
        return None
    from variantctl.bench.gpu import GpuSummary  # imported late: model.py stays light

    return GpuSummary.from_fields(f)


def _server_metrics_from_fields(f: Fields | None) -> ServerMetricsSummary | None:
    if f is None:
        return None
    from variantctl.bench.promscrape import ServerMetricsSummary

    return ServerMetricsSummary.from_fields(f)


@dataclass(frozen=True)
class Target:
    """What was measured: the URL the client used, and the variant/host when known."""

    url: str
    variant: str | None = None
    host: str | None = None
    model: str | None = None

    def to_json(self) -> JsonObject:
        return {"url": self.url, "variant": self.variant, "host": self.host, "model": self.model}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Target:
        return cls.from_fields(Fields(data, "target"))

    @classmethod
    def from_fields(cls, f: Fields) -> Target:
        return cls(url=f.text("url"), variant=f.opt_text("variant"), host=f.opt_text("host"),
                   model=f.opt_text("model"))


@dataclass(frozen=True)
class Imported:
    """Where a result ``runs import`` brought in came from: the tool that measured it, its
    version (``unknown`` when the file does not say and nobody told) and the file."""

    tool: str
    version: str
    file: str

    def to_json(self) -> JsonObject:
        return {"tool": self.tool, "version": self.version, "file": self.file}

    @classmethod
    def from_fields(cls, f: Fields) -> Imported:
        return cls(tool=f.text("tool"), version=f.text("version"), file=f.text("file", ""))


@dataclass(frozen=True)
class BenchResult:
    """A whole run: the parameters, the target and every level in the order run."""

    params: BenchParams
    target: Target
    started_at: str  # ISO 8601 UTC
    levels: tuple[LevelResult, ...]
    #: ``bench --search``: the capacity found and every probe (the probes are ``levels``)
    search: SearchResult | None = None
    #: ``runs import``: measured by another tool (None: measured by variantctl)
    imported: Imported | None = None

    @property
    def tpot_increase(self) -> dict[int, float | None]:
        """The second seed's "TPOT 增量" per concurrency: mean TPOT / mean TPOT at c=1 − 1.

        ``None`` for every level when the ladder has no concurrency-1 level (or its TPOT is
        undefined); with ``--repeat`` the levels of one concurrency are averaged first.
        """
        return tpot_increase(self.levels)

    def to_json(self) -> JsonObject:
        return {
            "schema": SCHEMA,
            "started_at": self.started_at,
            "target": self.target.to_json(),
            "params": self.params.to_json(),
            "tpot_increase": {str(c): _num(v) for c, v in self.tpot_increase.items()},
            "levels": [level.to_json() for level in self.levels],
            **({"search": self.search.to_json()} if self.search is not None else {}),
            **({"imported": self.imported.to_json()} if self.imported is not None else {}),
        }

    @classmethod
    def from_json(cls, data: object, source: str = "bench result") -> BenchResult:
        """Validate and build; a :class:`~variantctl.jsonfields.StoredFileError` (exit 2)
        names ``source`` and the bad field."""
        return cls.from_fields(Fields(data, source))

    @classmethod
    def from_fields(cls, f: Fields) -> BenchResult:
        schema = f.data.get("schema")
        if schema != SCHEMA:
            raise f.error("schema", f"is {schema!r}: not a {SCHEMA} result")
        return cls(
            params=BenchParams.from_fields(f.obj("params")),
            target=Target.from_fields(f.obj("target")),
            started_at=f.text("started_at"),
            levels=tuple(LevelResult.from_fields(level) for level in f.objs("levels", _MISSING)),
            search=_search_from_fields(f.opt_obj("search")),
            imported=_imported_from_fields(f.opt_obj("imported")),
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
    "Imported",
    "LevelMetrics",
    "LevelResult",
    "RequestResult",
    "Stats",
    "SteadyWindow",
    "Target",
    "WarmupResult",
]
