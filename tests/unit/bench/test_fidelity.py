"""Fidelity against the LABELLED fake server (tests/support/fake_openai_server.py).

The fake server's timing is known: first chunk TTFT ms after the request arrived, one
token per chunk every ITL ms, usage with known counts — and it reports when it really
wrote each chunk (``/timings``), since a loaded machine can make it late. Token counts
must come out exactly. Timings are checked for what holds on any machine, however
busy: the client cannot see a chunk before the server wrote it nor a request arrive
before it sent it, so each latency it measures is at least the server's own and each
throughput at most the server's; and it sees the server's lateness, not its schedule.
How *close* the two are (0.4 % on a quiet machine) is a figure, measured by
``benchmarks/bench_client.py``, not something a test can assert under load.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import pytest

from tests.support.fake_openai_server import CHAT_OVERHEAD, spawn
from variantctl.bench import prompts
from variantctl.bench.metrics import stats
from variantctl.bench.runner import run_level
from variantctl.benchparams import BenchParams

TTFT_MS, ITL_MS, TOKENS = 400.0, 25.0, 32
#: perf_counter differences of two processes: the same clock, read a little apart
EPS_S = 0.0005


@pytest.fixture(scope="module")
def server() -> object:
    with spawn("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--cached-tokens", "7",
               "--reasoning-tokens", "3") as url:
        yield url


def at_least(measured: float, floor: float) -> bool:
    return measured >= floor - EPS_S * 1000


def server_timings(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(url + "/timings", timeout=10) as resp:
        data: list[dict[str, Any]] = json.load(resp)
    return data


@pytest.mark.parametrize(("endpoint", "concurrency", "n"), [("chat", 1, 4),
                                                             ("completions", 4, 16)])
def test_every_metric_is_bounded_by_what_the_server_did(server: str, endpoint: str,
                                                        concurrency: int, n: int) -> None:
    params = BenchParams(endpoint=endpoint, output_len=TOKENS, requests=n, warmup="off",
                         goodput={"ttft": TTFT_MS * 1.5}, concurrency=(concurrency,))
    server_timings(server)  # forget earlier requests
    level = asyncio.run(run_level(server, params, concurrency))
    m = level.metrics
    # Token counts: exact.
    assert (m.completed, m.failed, dict(level.errors)) == (n, 0, {})
    words = len(prompts.SHORT.split())
    prompt_tokens = words + CHAT_OVERHEAD if endpoint == "chat" else words + 1
    assert all(r.prompt_tokens == prompt_tokens for r in level.requests)
    assert all(r.output_tokens == TOKENS and len(r.chunk_offsets_s) == TOKENS
               for r in level.requests)
    assert (m.total_input_tokens, m.total_output_tokens) == (n * prompt_tokens, n * TOKENS)
    assert (m.total_cached_tokens, m.total_reasoning_tokens) == (7 * n, 3 * n)
    assert m.itl_ms.count == n * (TOKENS - 1)
    assert m.peak_concurrency == concurrency

    # Timing: what the server really did (its clock) — on a loaded machine it can be late
    # against its schedule, and the client must see that lateness, not the schedule.
    log = server_timings(server)
    assert len(log) == n
    ttft = [t["writes"][0] - t["arrived"] for t in log]
    e2el = [t["writes"][-1] - t["arrived"] for t in log]
    dur = max(t["writes"][-1] for t in log) - min(t["arrived"] for t in log)
    # The server took its TTFT and ITL at least (a late server is later, never earlier).
    assert min(ttft) * 1000 >= TTFT_MS - EPS_S * 1000
    # Each request was sent before the server saw it and each chunk read after it was
    # written: per request the client's TTFT and E2EL are at least the server's, so every
    # order statistic of them is too (sorted domination), and so are the duration and
    # the goodput's and throughputs' denominators.
    for got, values in ((m.ttft_ms, ttft), (m.e2el_ms, e2el)):
        want = stats(values, 1000.0)
        for field in ("mean", "median", "p10", "p90", "p99"):
            assert at_least(getattr(got, field), getattr(want, field)), (field, got, want)
    assert at_least(m.duration_s * 1000, dur * 1000)
    # ... and not the schedule nor a whole request late: the first chunk is seen before
    # the server's last write of the average request (hundreds of ms of streaming later).
    assert m.ttft_ms.mean <= stats(e2el, 1000.0).mean
    assert m.output_throughput <= n * TOKENS / (dur - EPS_S)
    assert m.request_throughput <= n / (dur - EPS_S)
    assert m.total_token_throughput <= n * (TOKENS + prompt_tokens) / (dur - EPS_S)
    # The client's own figures agree with each other (the same requests, one duration).
    assert m.output_throughput * m.duration_s == pytest.approx(n * TOKENS)
    assert m.request_throughput * m.duration_s == pytest.approx(n)
    good = sum(1 for r in level.requests if r.ttft_s * 1000 <= TTFT_MS * 1.5)
    assert m.request_goodput is not None
    assert m.request_goodput * m.duration_s == pytest.approx(good)
    # The decode-phase figures come from the same chunks: their gaps add up to each
    # request's E2EL - TTFT.
    decode_ms = sum(r.latency_s - r.ttft_s for r in level.requests) * 1000
    assert m.itl_ms.mean * m.itl_ms.count == pytest.approx(decode_ms)
    assert m.tpot_ms.mean * n * (TOKENS - 1) == pytest.approx(decode_ms)
    # Peak 1-s bucket: at least the average, at most every token of the level.
    assert m.output_throughput * 0.98 <= m.max_output_tokens_per_s <= n * TOKENS
    # The level is full from the c-th start to the first end of the last wave: the
    # window is the whole run but for those edges; the first c-1 requests started
    # before it opened.
    assert m.steady is not None and 0 < m.steady.duration_s <= m.duration_s
    assert m.steady.requests_started == n - (concurrency - 1)
    assert 0 < m.steady.output_tokens <= n * TOKENS


def test_random_prompts_are_token_exact() -> None:
    # token counts only: a server without the fidelity test's 400 ms TTFT
    with spawn("--ttft-ms", "1", "--itl-ms", "1") as server:
        for endpoint in ("completions", "chat"):
            params = BenchParams(endpoint=endpoint, prompt="random", input_len=40,
                                 output_len=4, requests=6, warmup="off", concurrency=(3,))
            level = asyncio.run(run_level(server, params, 3))
            assert [r.prompt_tokens for r in level.requests] == [40] * 6
            assert level.metrics.total_input_tokens == 240
