"""Errors are counted and the run goes on; stop/cancel leave partial results, no tasks."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest

from tests.support.fake_openai_server import spawn
from variantctl.bench.model import LevelResult
from variantctl.bench.runner import (
    LiveProgress,
    arrival_offsets,
    probe,
    run_ladder,
    run_level,
    warmup_plan,
)
from variantctl.benchparams import BenchParams
from variantctl.errors import VariantctlError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_probe_names_the_url_when_nothing_listens() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(VariantctlError) as exc:
        asyncio.run(probe(url, 2.0))
    assert url in exc.value.message and exc.value.exit_code == 4


def test_probe_returns_the_model() -> None:
    with spawn() as url:
        assert asyncio.run(probe(url, 5.0)) == "fake-model"


def test_errors_are_counted_and_the_level_goes_on() -> None:
    with spawn("--ttft-ms", "5", "--itl-ms", "1", "--fail-every", "3") as url:
        params = BenchParams(output_len=4, requests=9, warmup="off")
        level = asyncio.run(run_level(url, params, 2))
    assert dict(level.errors) == {"http 500": 3}
    assert (level.metrics.completed, level.metrics.failed) == (6, 3)
    bad = [r for r in level.requests if not r.ok]
    assert all(r.error_detail == "fake failure (--fail-every)" for r in bad)
    assert not level.all_failed and not level.partial


def test_all_requests_failing_is_visible() -> None:
    with spawn("--fail-every", "1") as url:
        level = asyncio.run(run_level(url, BenchParams(requests=3, warmup="off"), 1))
    assert level.all_failed and level.metrics.completed == 0


def test_server_dying_mid_level_fails_requests_without_hanging() -> None:
    # --die-after 1: the 2nd request (sent beside the 1st) kills the server mid-stream.
    with spawn("--ttft-ms", "50", "--itl-ms", "50", "--die-after", "1") as url:
        params = BenchParams(output_len=40, requests=8, warmup="off", timeout_s=20)
        t0 = time.monotonic()
        level = asyncio.run(run_level(url, params, 2))
    assert time.monotonic() - t0 < 15
    assert level.metrics.completed == 0
    assert set(level.errors) <= {"disconnected", "connection failed"}
    assert sum(level.errors.values()) == 8


async def _stop_after(delay: float, url: str, params: BenchParams) -> tuple[LevelResult, int]:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(delay, stop.set)
    level = await run_level(url, params, 2, stop=stop)
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    return level, len(others)


def test_stop_returns_partial_results_and_leaves_no_task() -> None:
    with spawn("--ttft-ms", "10", "--itl-ms", "20") as url:
        params = BenchParams(output_len=10, requests=50, warmup="off")
        t0 = time.monotonic()
        level, leftover = asyncio.run(_stop_after(0.7, url, params))
    assert time.monotonic() - t0 < 5
    assert leftover == 0
    assert level.partial and level.partial_reason is not None
    assert "cancelled" in level.partial_reason
    assert 0 < level.metrics.completed < 50


def test_cancelling_the_level_cancels_its_requests() -> None:
    async def main(url: str) -> int:
        task = asyncio.create_task(run_level(url, BenchParams(output_len=50, requests=10,
                                                              warmup="off"), 3))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])

    with spawn("--ttft-ms", "10", "--itl-ms", "50") as url:
        assert asyncio.run(main(url)) == 0


def test_ladder_runs_levels_in_order_with_repeats_and_progress() -> None:
    seen: list[LiveProgress] = []
    with spawn("--ttft-ms", "5", "--itl-ms", "2") as url:
        params = BenchParams(output_len=8, requests=4, warmup="2", concurrency=(2, 1),
                             repeat=2)
        levels = asyncio.run(run_ladder(url, params, on_progress=seen.append))
    assert [(lv.concurrency, lv.repeat) for lv in levels] == [(2, 0), (1, 0), (2, 1), (1, 1)]
    assert all(lv.warmup is not None and lv.warmup.requests == 2 for lv in levels)
    assert seen and seen[-1].done == 4 and seen[-1].total == 4


def test_duration_mode_stops_sending_after_the_duration() -> None:
    with spawn("--ttft-ms", "5", "--itl-ms", "5") as url:
        params = BenchParams(output_len=10, duration=1.0, warmup="off")
        level = asyncio.run(run_level(url, params, 2))
    # Each request takes ~50 ms: it kept sending for the whole second on both slots
    # (at least a few each, even on a loaded machine), sent nothing after it, and
    # waited only for those in flight.
    starts = sorted(r.start_s for r in level.requests)
    assert level.metrics.completed == len(starts) >= 8
    assert starts[-1] < 1.0 and starts[-1] > 0.7
    assert level.metrics.duration_s < 1.0 + 0.5
    assert level.metrics.peak_concurrency == 2


def test_request_rate_spreads_arrivals_like_vllm() -> None:
    offsets = arrival_offsets(20, rate=10.0, burstiness=1.0, seed=1)
    assert offsets[-1] == pytest.approx(2.0)  # vLLM rescales the last arrival to n/rate
    assert offsets == sorted(offsets)
    assert arrival_offsets(3, float("inf"), 1.0, 0) == [0.0, 0.0, 0.0]
    regular = arrival_offsets(4, rate=2.0, burstiness=float("inf"), seed=0)
    assert regular == pytest.approx([0.5, 1.0, 1.5, 2.0])
    with spawn("--ttft-ms", "1", "--itl-ms", "1") as url:
        params = BenchParams(output_len=2, requests=6, request_rate=10.0, warmup="off")
        level = asyncio.run(run_level(url, params, 6))
    assert level.metrics.duration_s == pytest.approx(0.6, abs=0.1)


def test_auto_warmup_is_the_seed_recipe() -> None:
    assert warmup_plan(BenchParams(requests=200), 64) == (64, 32)
    assert warmup_plan(BenchParams(requests=200), 8) == (50, 4)
    assert warmup_plan(BenchParams(requests=20), 4) == (20, 2)
    assert warmup_plan(BenchParams(warmup="off"), 4) == (0, 0)
    assert warmup_plan(BenchParams(warmup="5"), 16) == (5, 5)


def test_prompt_file_errors_name_file_and_line(tmp_path: Path) -> None:
    from variantctl.bench.prompts import load_file

    bad = tmp_path / "p.jsonl"
    bad.write_text('"ok"\n{"nope": 1}\n')
    with pytest.raises(VariantctlError, match=r"p\.jsonl:2: expected a string"):
        load_file(bad)
    with pytest.raises(VariantctlError, match="no such prompt file"):
        load_file(tmp_path / "missing.txt")
    good = tmp_path / "q.jsonl"
    good.write_text('"a b"\n\n{"prompt": "c"}\n{"messages": [{"role": "user", "content": "d"}]}\n')
    assert [p.content for p in load_file(good)][:2] == ["a b", "c"]


def test_live_progress_counts_tokens_while_a_request_streams() -> None:
    seen: list[LiveProgress] = []
    with spawn("--ttft-ms", "10", "--itl-ms", "20") as url:
        params = BenchParams(output_len=75, requests=1, warmup="off")  # ~1.5 s of tokens
        asyncio.run(run_level(url, params, 1, on_progress=seen.append))
    during = [p for p in seen if p.done == 0]
    assert len(during) >= 2
    # 50 tokens/s arrive while the only request is still streaming
    assert any(35 <= p.tokens_per_s_now <= 65 for p in during), during


def test_stop_during_the_warmup_ends_the_level_at_once() -> None:
    async def main(url: str) -> tuple[LevelResult, float, int]:
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.4, stop.set)
        t0 = time.monotonic()
        params = BenchParams(output_len=40, requests=10, warmup="10")  # ~2 s per request
        level = await run_level(url, params, 2, stop=stop)
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return level, time.monotonic() - t0, len(left)

    with spawn("--ttft-ms", "10", "--itl-ms", "50") as url:
        level, elapsed, left = asyncio.run(main(url))
    assert elapsed < 2.0 and left == 0
    assert level.partial and level.requests == ()
    assert level.warmup is not None and level.warmup.requests == 0
