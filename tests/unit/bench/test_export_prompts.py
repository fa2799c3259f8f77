"""--export-vllm layout and file names; the built-in prompts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.fake_openai_server import spawn
from variantctl.bench import prompts, tools_prompt
from variantctl.bench.client import build_body
from variantctl.bench.export import export_paths, vllm_result
from variantctl.bench.metrics import compute
from variantctl.bench.model import LevelResult
from variantctl.bench.runner import run_level
from variantctl.benchparams import BenchParams


def test_export_has_vllm_names_and_units() -> None:
    with spawn("--ttft-ms", "20", "--itl-ms", "5", "--cached-tokens", "2") as url:
        params = BenchParams(endpoint="completions", output_len=6, requests=3, warmup="off",
                             request_rate=50.0)
        level = asyncio.run(run_level(url, params, 2))
    d = vllm_result(level, params, model="fake-model")
    assert d["backend"] == "openai" and d["max_concurrency"] == 2 and d["request_rate"] == 50.0
    assert d["completed"] == 3 and d["total_output_tokens"] == 18
    assert d["output_lens"] == [6, 6, 6]
    assert 15 < d["mean_ttft_ms"] < 40  # ms, not s
    assert 0.015 < d["ttfts"][0] < 0.04  # per-request lists in s, as vLLM writes them
    assert d["duration"] == level.metrics.duration_s
    for key in ("p99_tpot_ms", "median_itl_ms", "std_e2el_ms", "p10_ttft_ms",
                "mean_client_queue_time_ms", "p99_e2el_including_client_queue_ms",
                "max_output_tokens_per_s", "max_concurrent_requests", "request_goodput"):
        assert key in d, key
    json.dumps(d)  # JSON-safe


def test_export_paths() -> None:
    p = Path("/r/out.json")
    one = [_fake_level(1, 0)]
    assert export_paths(p, one) == [p]
    ladder = [_fake_level(1, 0), _fake_level(4, 0)]
    assert export_paths(p, ladder) == [Path("/r/out-c1.json"), Path("/r/out-c4.json")]
    rep = [_fake_level(1, 0), _fake_level(1, 1)]
    assert export_paths(p, rep) == [Path("/r/out-c1-r1.json"), Path("/r/out-c1-r2.json")]


def _fake_level(c: int, rep: int) -> LevelResult:
    return LevelResult(concurrency=c, metrics=compute((), concurrency=c, duration_s=1.0),
                       requests=(), errors={}, repeat=rep)


def test_tools_prompt_is_the_seeds_29_tools_with_a_shared_prefix() -> None:
    a = prompts.builtin("tools", "chat", 0)
    b = prompts.builtin("tools", "chat", 1)
    assert len(a.extra["tools"]) == 29
    assert len({t["function"]["name"] for t in a.extra["tools"]}) == 29
    assert a.extra == b.extra  # identical tools: the prefix the cache can reuse
    assert isinstance(a.content, list) and a.content[0] == b.content[0]
    assert a.content[1] != b.content[1]
    body = json.loads(build_body(endpoint="chat", model="m", prompt=a.content, output_len=8,
                                 ignore_eos=True, temperature=0.0, seed=None,
                                 extra=a.extra).body)
    assert body["tools"] == tools_prompt.tools() and body["ignore_eos"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 8
    text = prompts.builtin("tools", "completions", 0).content
    assert isinstance(text, str) and "read_file" in text


def test_cached_and_reasoning_tokens_come_from_usage() -> None:
    with spawn("--ttft-ms", "1", "--itl-ms", "1", "--cached-tokens", "11",
               "--reasoning-tokens", "5") as url:
        params = BenchParams(prompt="tools", output_len=3, requests=2, warmup="off")
        level = asyncio.run(run_level(url, params, 1))
    assert [(r.cached_tokens, r.reasoning_tokens) for r in level.requests] == [(11, 5)] * 2
    assert level.metrics.total_cached_tokens == 22
