"""Level metrics from hand-built request results, every value computed by hand."""

from __future__ import annotations

import sys

import pytest

from variantctl.bench.metrics import compute, percentile, stats
from variantctl.bench.model import (
    BenchResult,
    LevelResult,
    RequestResult,
    Target,
    tpot_increase,
)
from variantctl.benchparams import BenchParams

# r0: sent at 0, chunks at +0.1 +0.2 +0.4 (3 tokens); r1: sent at 0.05, chunks at +0.2
# +0.3 (2 tokens); r2: HTTP 500 after 0.1 s.
R0 = RequestResult(index=0, ok=True, start_s=0.0, ttft_s=0.1, latency_s=0.4,
                   chunk_offsets_s=(0.1, 0.2, 0.4), prompt_tokens=10, output_tokens=3,
                   cached_tokens=4, reasoning_tokens=1, usage_seen=True)
R1 = RequestResult(index=1, ok=True, start_s=0.05, ttft_s=0.2, latency_s=0.3,
                   chunk_offsets_s=(0.2, 0.3), prompt_tokens=20, output_tokens=2,
                   usage_seen=True)
R2 = RequestResult(index=2, ok=False, start_s=0.5, latency_s=0.1, error="http 500")
REQS = (R0, R1, R2)


def approx(x: float) -> object:
    return pytest.approx(x, rel=1e-9, abs=1e-9)


def test_percentile_is_numpy_linear() -> None:
    xs = [1.0, 2.0, 4.0, 8.0]
    assert percentile(xs, 0) == 1.0
    assert percentile(xs, 100) == 8.0
    assert percentile(xs, 50) == approx(3.0)
    assert percentile(xs, 90) == approx(4.0 + 0.7 * 4.0)  # rank 2.7
    assert stats([]).mean == 0.0 and stats([]).count == 0
    s = stats([1.0, 3.0])
    assert (s.mean, s.std, s.median) == (2.0, 1.0, 2.0)  # population std, like np.std


def test_vllm_defined_fields() -> None:
    m = compute(REQS, concurrency=2, duration_s=1.0)
    assert (m.completed, m.failed) == (2, 1)
    assert m.success_rate == approx(2 / 3)
    assert (m.total_input_tokens, m.total_output_tokens) == (30, 5)
    assert (m.total_cached_tokens, m.total_reasoning_tokens) == (4, 1)
    assert m.request_throughput == approx(2.0)
    assert m.output_throughput == approx(5.0)
    assert m.total_token_throughput == approx(35.0)
    assert m.request_goodput is None
    # TTFT 100, 200 ms
    assert (m.ttft_ms.mean, m.ttft_ms.median, m.ttft_ms.std) == (approx(150), approx(150),
                                                                 approx(50))
    assert m.ttft_ms.p10 == approx(110) and m.ttft_ms.p90 == approx(190)
    # TPOT (0.4-0.1)/2 = 150 ms, (0.3-0.2)/1 = 100 ms
    assert m.tpot_ms.mean == approx(125) and m.tpot_ms.p99 == approx(149.5)
    # ITL 100, 200, 100 ms
    assert m.itl_ms.count == 3
    assert m.itl_ms.mean == approx(400 / 3) and m.itl_ms.median == approx(100)
    assert m.itl_ms.p90 == approx(180)
    assert m.e2el_ms.mean == approx(350)
    # per-request output TPS: 3/0.3 and 2/0.1
    assert m.output_tps.mean == approx(15) and m.output_tps.p10 == approx(11)
    # vLLM's 1-s buckets: all 5 chunks and both requests in bucket 0
    assert m.max_output_tokens_per_s == 5.0 and m.max_concurrent_requests == 2
    assert m.peak_concurrency == 2


def test_goodput_counts_requests_meeting_every_slo() -> None:
    assert compute(REQS, concurrency=2, duration_s=2.0,
                   goodput={"ttft": 150}).request_goodput == approx(0.5)
    assert compute(REQS, concurrency=2, duration_s=1.0,
                   goodput={"tpot": 120}).request_goodput == approx(1.0)
    assert compute(REQS, concurrency=2, duration_s=1.0,
                   goodput={"ttft": 150, "tpot": 120}).request_goodput == 0.0


def test_steady_window() -> None:
    m = compute(REQS, concurrency=2, duration_s=1.0)
    w = m.steady
    assert w is not None
    assert w.threshold == 2
    assert (w.start_s, w.end_s) == (approx(0.05), approx(0.35))
    assert w.output_tokens == approx(4)  # r0 at 0.1, 0.2; r1 at 0.25, 0.35
    assert (w.requests_started, w.requests_completed) == (1, 1)
    assert w.ttft_ms.mean == approx(200)
    assert w.output_throughput == approx(4 / 0.3)
    assert w.short
    assert any("steady-state window is 0.3 s" in x for x in m.warnings)


def test_no_steady_window_below_threshold() -> None:
    m = compute(REQS, concurrency=4, duration_s=1.0)  # threshold 4, peak 2
    assert m.steady is None
    assert any("never reached 4" in x for x in m.warnings)


def test_back_to_back_requests_are_not_concurrent() -> None:
    a = RequestResult(index=0, ok=True, start_s=0.0, ttft_s=0.5, latency_s=1.0,
                      chunk_offsets_s=(0.5, 1.0), output_tokens=2, usage_seen=True)
    b = RequestResult(index=1, ok=True, start_s=1.0, ttft_s=0.5, latency_s=1.0,
                      chunk_offsets_s=(0.5, 1.0), output_tokens=2, usage_seen=True)
    m = compute((a, b), concurrency=1, duration_s=2.0)
    assert m.peak_concurrency == 1
    assert m.steady is not None and (m.steady.start_s, m.steady.end_s) == (0.0, 2.0)
    assert m.steady.output_tokens == 4


def test_usage_missing_counts_chunks_and_warns() -> None:
    r = RequestResult(index=0, ok=True, start_s=0.0, ttft_s=0.1, latency_s=0.2,
                      chunk_offsets_s=(0.1, 0.2), output_tokens=2, usage_seen=False)
    m = compute((r,), concurrency=1, duration_s=0.2)
    assert any("no usage block" in w for w in m.warnings)


def _level(c: int, tpots: tuple[float, ...]) -> LevelResult:
    reqs = tuple(
        RequestResult(index=i, ok=True, start_s=0.0, ttft_s=0.0, latency_s=t,
                      chunk_offsets_s=(0.0, t), output_tokens=2, usage_seen=True)
        for i, t in enumerate(tpots))
    return LevelResult(concurrency=c, metrics=compute(reqs, concurrency=c, duration_s=1.0),
                       requests=reqs, errors={})


def test_tpot_increase_over_concurrency_one() -> None:
    levels = (_level(1, (0.1,)), _level(2, (0.15,)), _level(4, (0.2, 0.3)))
    inc = tpot_increase(levels)
    assert inc[1] == approx(0.0)
    assert inc[2] == approx(0.5)
    assert inc[4] == approx(1.5)
    assert tpot_increase(levels[1:]) == {2: None, 4: None}


def test_bench_result_json_round_trip() -> None:
    params = BenchParams(concurrency=(1, 2), goodput={"ttft": 100.0})
    m = compute(REQS, concurrency=2, duration_s=1.0, goodput=params.goodput)
    level = LevelResult(concurrency=2, metrics=m, requests=REQS, errors={"http 500": 1},
                        partial=True, partial_reason="stopped")
    result = BenchResult(params=params, target=Target(url="http://x:1", variant="cpu-eager"),
                         started_at="2026-12-01T08:00:00Z", levels=(_level(1, (0.1,)), level))
    data = result.to_json()
    assert data["schema"] == "variantctl.bench/1"
    assert data["tpot_increase"]["1"] == 0.0
    back = BenchResult.from_json(data)
    assert back.to_json() == data
    assert back.levels[1].requests == REQS
    assert back.levels[1].metrics == m


def test_attachments_round_trip_as_their_types() -> None:
    import dataclasses

    from variantctl.bench.gpu import GpuSummary, not_available

    level = dataclasses.replace(_level(1, (0.1,)), gpu=not_available("no monitor on host"))
    back = LevelResult.from_json(level.to_json())
    assert isinstance(back.gpu, GpuSummary) and back.gpu == level.gpu
    assert back.server_metrics is None


def test_burst_delivery_is_flagged_only_when_tokens_came_at_once() -> None:
    # A request whose 64 tokens all arrived within 1 ms after 125 ms of silence (the
    # vLLM CPU server's starved output thread), beside one streamed at 2 ms a token.
    burst = RequestResult(index=0, ok=True, start_s=0.0, ttft_s=0.125, latency_s=0.126,
                          chunk_offsets_s=(0.125, 0.126), prompt_tokens=64,
                          output_tokens=64, usage_seen=True)
    streamed = RequestResult(index=1, ok=True, start_s=0.2, ttft_s=0.007, latency_s=0.133,
                             chunk_offsets_s=tuple(0.007 + 0.002 * i for i in range(64)),
                             prompt_tokens=64, output_tokens=64, usage_seen=True)
    # A short answer delivered in one chunk is not a burst: too few tokens to tell.
    short = RequestResult(index=2, ok=True, start_s=0.4, ttft_s=0.01, latency_s=0.01,
                          chunk_offsets_s=(0.01,), prompt_tokens=5, output_tokens=4,
                          usage_seen=True)
    m = compute((burst, streamed, short), concurrency=1, duration_s=1.0)
    flagged = [w for w in m.warnings if "in one burst" in w]
    assert flagged and flagged[0].startswith("1 of 3 request(s)")
    clean = compute((streamed, short), concurrency=1, duration_s=1.0)
    assert not any("in one burst" in w for w in clean.warnings)


def test_a_request_as_written_reads_as_field_by_field() -> None:
    """The fast read of a request (its dict set at once, without the dataclass's
    __init__) gives the very value the checked field-by-field read gives, every field
    included (a field added to RequestResult and not to the fast read fails here); a
    request not as written (an int for a float, a bool for an int) takes the checked
    read."""
    import dataclasses
    import json

    from variantctl.bench.model import _request_as_written
    from variantctl.jsonfields import Fields

    r = RequestResult(index=3, ok=False, start_s=0.5, queue_s=0.25, ttft_s=0.125,
                      latency_s=0.75, chunk_offsets_s=(0.125, 0.5, 0.75), prompt_tokens=7,
                      output_tokens=3, cached_tokens=2, reasoning_tokens=1, usage_seen=True,
                      error="http 500", error_detail="the server said no")
    data = json.loads(json.dumps(r.to_json()))
    fast = _request_as_written(data)
    checked = RequestResult.from_fields(Fields({**data, "start_s": 1}, "r"))
    assert fast is not None and fast == r and hash(fast) == hash(r)
    assert vars(fast) == {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
    # the class's shared keys kept: no bigger than the instance __init__ makes (a
    # million of these in a year of runs)
    assert sys.getsizeof(vars(fast)) == sys.getsizeof(vars(r))
    assert checked == dataclasses.replace(r, start_s=1.0)
    assert _request_as_written({**data, "start_s": 1}) is None
    assert _request_as_written({**data, "index": True}) is None
    assert _request_as_written({**data, "chunk_offsets_s": [0.1, 2]}) is None
    assert _request_as_written({**data, "error": None, "error_detail": None}) is not None


def test_stats_as_written_read_as_field_by_field() -> None:
    """A Stats as to_json writes it is read at once into the value the checked read
    gives (every field, in order); any other shape (an int mean, a "nan", a bool count)
    takes the checked read."""
    import dataclasses
    import json
    import math

    from variantctl.bench.model import Stats
    from variantctl.jsonfields import Fields, StoredFileError

    st = Stats(count=4, mean=1.5, median=1.25, std=0.5, min=0.75, max=2.5, p10=0.8,
               p50=1.25, p90=2.25, p99=2.5)
    data = json.loads(json.dumps(st.to_json()))
    fast = Stats.from_fields(Fields(data, "s"))
    assert fast == st and hash(fast) == hash(st)
    assert list(vars(fast)) == [f.name for f in dataclasses.fields(Stats)]
    assert sys.getsizeof(vars(fast)) == sys.getsizeof(vars(st))
    assert Stats.from_fields(Fields({**data, "mean": 2}, "s")) == \
        dataclasses.replace(st, mean=2.0)
    assert math.isnan(Stats.from_fields(Fields({**data, "p99": "nan"}, "s")).p99)
    with pytest.raises(StoredFileError):
        Stats.from_fields(Fields({**data, "count": True}, "s"))
