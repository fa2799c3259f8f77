"""Fidelity against the LABELLED fake server (tests/support/fake_openai_server.py).

The fake server's timing is known: first chunk TTFT ms after the request arrived, one
token per chunk every ITL ms, usage with known counts — and it reports when it really
wrote each chunk (``/timings``), since a loaded machine can make it late. Every timing
metric must come out within 2 % of what those writes imply, every token count exactly.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import urllib.request
from typing import Any

import pytest

from tests.support.fake_openai_server import CHAT_OVERHEAD, spawn
from variantctl.bench import prompts
from variantctl.bench.metrics import stats
from variantctl.bench.runner import run_level
from variantctl.benchparams import BenchParams

TTFT_MS, ITL_MS, TOKENS = 400.0, 25.0, 32
REL = 0.02


@pytest.fixture(scope="module")
def server() -> object:
    with spawn("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--cached-tokens", "7",
               "--reasoning-tokens", "3") as url:
        yield url


def close(measured: float, expected: float, rel: float = REL) -> bool:
    return abs(measured - expected) <= rel * expected


def server_timings(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(url + "/timings", timeout=10) as resp:
        data: list[dict[str, Any]] = json.load(resp)
    return data


@pytest.mark.parametrize(("endpoint", "concurrency", "n"), [("chat", 1, 4),
                                                             ("completions", 4, 16)])
def test_every_metric_within_2_percent(server: str, endpoint: str, concurrency: int,
                                       n: int) -> None:
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
    itl = [b - a for t in log for a, b in itertools.pairwise(t["writes"])]
    tpot = [(e - f) / (TOKENS - 1) for e, f in zip(e2el, ttft, strict=True)]
    tps = [TOKENS / (e - f) for e, f in zip(e2el, ttft, strict=True)]
    dur = max(t["writes"][-1] for t in log) - min(t["arrived"] for t in log)
    # ... and it was near its schedule, or the comparison would not be the one intended.
    assert close(statistics.mean(ttft) * 1000, TTFT_MS, 0.10)
    assert close(statistics.mean(itl) * 1000, ITL_MS, 0.10)

    for got, values, scale in ((m.ttft_ms, ttft, 1000.0), (m.e2el_ms, e2el, 1000.0),
                               (m.tpot_ms, tpot, 1000.0), (m.output_tps, tps, 1.0)):
        want = stats(values, scale)
        for field in ("mean", "median", "p10", "p90", "p99"):
            assert close(getattr(got, field), getattr(want, field)), (field, got, want)
    want_itl = stats(itl, 1000.0)
    assert close(m.itl_ms.mean, want_itl.mean) and close(m.itl_ms.median, want_itl.median)
    assert close(m.duration_s, dur)
    assert close(m.output_throughput, n * TOKENS / dur)
    assert close(m.request_throughput, n / dur)
    assert close(m.total_token_throughput, n * (TOKENS + prompt_tokens) / dur)
    good = sum(1 for x in ttft if x * 1000 <= TTFT_MS * 1.5)
    assert m.request_goodput is not None and close(m.request_goodput, good / dur)
    # Peak 1-s bucket: at most every request emitting all the time, at least the average.
    assert n * TOKENS / dur * 0.98 <= m.max_output_tokens_per_s
    assert m.max_output_tokens_per_s <= concurrency * 1000 / ITL_MS * 1.1
    # The level is full from the c-th start to the first end of the last wave: the
    # window is the whole run but for those edges; the first c-1 requests started
    # before it opened.
    assert m.steady is not None and close(m.steady.duration_s, dur)
    assert close(m.steady.output_tokens, n * TOKENS)
    assert m.steady.requests_started == n - (concurrency - 1)
    assert close(m.steady.tpot_ms.mean, statistics.mean(tpot) * 1000)


def test_random_prompts_are_token_exact(server: str) -> None:
    for endpoint in ("completions", "chat"):
        params = BenchParams(endpoint=endpoint, prompt="random", input_len=40, output_len=4,
                             requests=6, warmup="off", concurrency=(3,))
        level = asyncio.run(run_level(server, params, 3))
        assert [r.prompt_tokens for r in level.requests] == [40] * 6
        assert level.metrics.total_input_tokens == 240
