"""Per-level metrics from request results — pure, no I/O, no clock.

Every field that ``vllm bench serve`` also reports is computed exactly as its
``calculate_metrics`` does (vllm/benchmarks/serve.py): only successful requests
count; TPOT = (E2EL − TTFT) / (output tokens − 1) for requests with more than one
token; ITL is every gap between content chunks; throughputs divide by the level's
duration; peak output tok/s and "max concurrent requests" use vLLM's 1-second
buckets. numpy's semantics (population std, linear percentiles, zeros for an empty
sample) are reimplemented here so the package needs no numpy.

The seeds' own additions: per-request output TPS, the exact peak of in-flight
requests (a sweep line), the steady-state window and goodput counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from variantctl.bench.model import LevelMetrics, LevelResult, RequestResult, Stats, SteadyWindow

STEADY_FRACTION = 0.95
STEADY_MIN_S = 10.0
STEADY_MIN_SHARE = 0.10
# A request whose tokens after the first came faster than this each was not streamed
# as it decoded: the server held its output back and sent it at once (no decode step
# takes 0.1 ms; speculative decoding lowers TPOT a few-fold, not a hundred-fold).
BURST_TPOT_S = 1e-4
BURST_MIN_TOKENS = 8


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """numpy's default ("linear") percentile of an already sorted sample."""
    if not sorted_values:
        return 0.0
    rank = (len(sorted_values) - 1) * p / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = rank - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def stats(values: Iterable[float], scale: float = 1.0) -> Stats:
    """Summary like vLLM's ``np.mean/median/std/percentile(x or 0) * scale``."""
    xs = sorted(v * scale for v in values)
    if not xs:
        return Stats()
    n = len(xs)
    mean = math.fsum(xs) / n
    var = math.fsum((x - mean) ** 2 for x in xs) / n
    return Stats(
        count=n,
        mean=mean,
        median=percentile(xs, 50),
        std=math.sqrt(var),
        min=xs[0],
        max=xs[-1],
        p10=percentile(xs, 10),
        p50=percentile(xs, 50),
        p90=percentile(xs, 90),
        p99=percentile(xs, 99),
    )


def in_flight_steps(requests: Sequence[RequestResult]) -> list[tuple[float, int]]:
    """(time, in-flight count from this time on), one entry per distinct event time.

    A request is in flight over [start, end). At equal times ends are applied before
    starts, so back-to-back requests at concurrency 1 never count as 2.
    """
    events: list[tuple[float, int]] = []
    for r in requests:
        events.append((r.start_s, 1))
        events.append((r.end_s, -1))
    events.sort(key=lambda e: (e[0], e[1]))
    steps: list[tuple[float, int]] = []
    level = 0
    for t, delta in events:
        level += delta
        if steps and steps[-1][0] == t:
            steps[-1] = (t, level)
        else:
            steps.append((t, level))
    return steps


def peak_in_flight(requests: Sequence[RequestResult]) -> int:
    return max((n for _, n in in_flight_steps(requests)), default=0)


def _token_times(r: RequestResult) -> list[tuple[float, float]]:
    """(emission time since level start, tokens) per content chunk.

    A chunk may carry several tokens; usage's total is spread evenly over the chunks so
    the window's token count adds up to the server's count.
    """
    if not r.chunk_offsets_s:
        return []
    weight = r.output_tokens / len(r.chunk_offsets_s)
    return [(r.start_s + off, weight) for off in r.chunk_offsets_s]


def steady_window(
    requests: Sequence[RequestResult], concurrency: int, run_s: float
) -> SteadyWindow | None:
    """The window where in-flight ≥ ⌈0.95 × concurrency⌉: first up- to last down-crossing."""
    threshold = math.ceil(STEADY_FRACTION * concurrency)
    steps = in_flight_steps(requests)
    start: float | None = None
    end: float | None = None
    prev = 0
    for t, n in steps:
        if start is None and prev < threshold <= n:
            start = t
        if prev >= threshold > n:
            end = t
        prev = n
    if start is None or end is None or end <= start:
        return None
    ok = [r for r in requests if r.ok]
    tokens = math.fsum(
        w for r in ok for t, w in _token_times(r) if start <= t <= end
    )
    started = [r for r in ok if start <= r.start_s <= end]
    completed = sum(1 for r in ok if start <= r.end_s <= end)
    tpots = [t for t in (r.tpot_s for r in started) if t is not None]
    short = (end - start) < max(STEADY_MIN_S, STEADY_MIN_SHARE * run_s)
    return SteadyWindow(
        threshold=threshold,
        start_s=start,
        end_s=end,
        output_tokens=tokens,
        requests_started=len(started),
        requests_completed=completed,
        ttft_ms=stats((r.ttft_s for r in started), 1000.0),
        tpot_ms=stats(tpots, 1000.0),
        short=short,
    )


def vllm_buckets(ok: Sequence[RequestResult]) -> tuple[float, int]:
    """vLLM's (max output tokens per 1-s bucket, max concurrent requests per 1-s bucket).

    As in serve.py: one token per content chunk at start + ttft + cumulative ITL,
    buckets from the earliest successful start; a request counts as active in every
    second bucket from its start's to its end's, inclusive.
    """
    if not ok:
        return 0.0, 0
    t0 = min(r.start_s for r in ok)
    t_end = max(r.end_s for r in ok)
    n = math.ceil(t_end - t0) + 1
    tokens = [0] * n
    active = [0] * n
    for r in ok:
        for off in r.chunk_offsets_s:
            b = int(r.start_s + off - t0)
            if 0 <= b < n:
                tokens[b] += 1
        for b in range(int(r.start_s - t0), int(r.end_s - t0) + 1):
            active[b] += 1
    return float(max(tokens)), max(active)


def delivered_in_burst(r: RequestResult) -> bool:
    """True when a request's output arrived in one burst rather than token by token."""
    tpot = r.tpot_s
    return tpot is not None and r.output_tokens >= BURST_MIN_TOKENS and tpot < BURST_TPOT_S


#: what a level whose tokens arrived in one burst shows for TPOT and per-user TPS
NOT_MEASURABLE = "not measurable (tokens in one burst)"
#: the figures a burst makes meaningless (decode pace per token, per user)
BURST_FIGURES = frozenset({"tpot_mean", "tpot_p50", "tpot_p90", "tpot_p99", "tps_p10",
                           "tps_p50"})


def burst_point(levels: Sequence[LevelResult]) -> bool:
    """Every request of every level received its output in one burst (the server held
    the stream back): TPOT is ~0 and per-user TPS unbounded — not measured, so shown
    as :data:`NOT_MEASURABLE`, never "0.0 ±0.0"."""
    tpot = [lv.metrics.tpot_ms for lv in levels]
    return bool(tpot) and all(t.count > 0 and t.max < BURST_TPOT_S * 1000 for t in tpot)


def goodput_count(ok: Sequence[RequestResult], slo_ms: Mapping[str, float]) -> int:
    """Requests meeting every SLO; a one-token request's TPOT counts as 0 (as in vLLM)."""
    good = 0
    for r in ok:
        values = {"ttft": r.ttft_s, "tpot": r.tpot_s or 0.0, "e2el": r.latency_s}
        if all(slo / 1000.0 >= values[key] for key, slo in slo_ms.items()):
            good += 1
    return good


def compute(
    requests: Sequence[RequestResult],
    *,
    concurrency: int,
    duration_s: float,
    goodput: Mapping[str, float] | None = None,
) -> LevelMetrics:
    """All metrics of one level from its requests and its duration."""
    ok = [r for r in requests if r.ok]
    failed = len(requests) - len(ok)
    total_in = sum(r.prompt_tokens for r in ok)
    total_out = sum(r.output_tokens for r in ok)
    dur = duration_s if duration_s > 0 else math.inf
    tpots = [t for t in (r.tpot_s for r in ok) if t is not None]
    itls = [gap for r in ok for gap in r.itl_s]
    max_tok_s, max_conc = vllm_buckets(ok)
    steady = steady_window(requests, concurrency, duration_s)
    warnings: list[str] = []
    if steady is None and ok:
        warnings.append(
            f"no steady-state window: in-flight requests never reached "
            f"{math.ceil(STEADY_FRACTION * concurrency)} (0.95 x {concurrency})"
        )
    elif steady is not None and steady.short:
        warnings.append(
            f"steady-state window is {steady.duration_s:.1f} s, shorter than "
            f"max({STEADY_MIN_S:.0f} s, {STEADY_MIN_SHARE:.0%} of the run): "
            "use more requests or --duration"
        )
    bursts = sum(1 for r in ok if delivered_in_burst(r))
    if bursts:
        # Seen on vLLM's CPU server on 2 cores (docs/bench.md): TTFT then measures when
        # the server let the output go, not prefill; TPOT is near zero.
        warnings.append(
            f"{bursts} of {len(ok)} request(s) received all their tokens in one burst at "
            f"the end (TPOT < {BURST_TPOT_S * 1000:g} ms): the server held the stream back,"
            " so their TTFT and TPOT describe delivery, not prefill and decode"
        )
    no_usage = sum(1 for r in ok if not r.usage_seen)
    if no_usage:
        warnings.append(
            f"{no_usage} request(s) had no usage block: their output tokens are chunk counts"
        )
    return LevelMetrics(
        concurrency=concurrency,
        duration_s=duration_s,
        completed=len(ok),
        failed=failed,
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        total_cached_tokens=sum(r.cached_tokens for r in ok),
        total_reasoning_tokens=sum(r.reasoning_tokens for r in ok),
        request_throughput=len(ok) / dur,
        request_goodput=goodput_count(ok, goodput) / dur if goodput else None,
        output_throughput=total_out / dur,
        total_token_throughput=(total_in + total_out) / dur,
        ttft_ms=stats((r.ttft_s for r in ok), 1000.0),
        tpot_ms=stats(tpots, 1000.0),
        itl_ms=stats(itls, 1000.0),
        e2el_ms=stats((r.latency_s for r in ok), 1000.0),
        output_tps=stats(t for t in (r.output_tps for r in ok) if t is not None),
        max_output_tokens_per_s=max_tok_s,
        max_concurrent_requests=max_conc,
        peak_concurrency=peak_in_flight(requests),
        steady=steady,
        warnings=tuple(warnings),
    )


def error_counts(requests: Iterable[RequestResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in requests:
        if not r.ok:
            reason = r.error or "unknown"
            counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
