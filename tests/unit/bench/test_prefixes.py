"""``--prefix-len N --prefixes K`` (issue 22.2): every prompt led by one of K shared
prefixes of N tokens as the server counts them; against the labelled FAKE OpenAI server
(tests/support/fake_openai_server.py: a word tokenizer with a BOS)."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.support.fake_openai_server import spawn
from variantctl.bench.runner import prepare
from variantctl.benchparams import BenchParams
from variantctl.exitcodes import ExitCode

Run = Callable[..., CliResult]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with spawn("--ttft-ms", "2", "--itl-ms", "1") as u:
        yield u


def test_prompts_share_k_prefixes_of_n_tokens(url: str) -> None:
    params = BenchParams(endpoint="completions", prompt="random", input_len=12,
                         prefix_len=40, prefixes=3)
    reqs = asyncio.run(prepare(url, params, 7, model="fake-model"))
    words = [json.loads(r.body)["prompt"].split() for r in reqs]
    heads = [tuple(w[:40]) for w in words]
    assert heads[0] == heads[3] == heads[6] and heads[1] == heads[4]
    assert len({heads[0], heads[1], heads[2]}) == 3
    assert len({h[0] for h in heads[:3]}) == 3  # they differ from the first token on
    # the prefix's N tokens plus the random prompt's own (its BOS counted once)
    assert all(len(w) == 40 + 11 for w in words)


def test_prefix_length_is_recorded_and_reaches_the_server(run_cli: Run, url: str) -> None:
    res = run_cli(["bench", "--url", url, "--endpoint", "completions", "--prompt", "random",
                   "--input-len", "8", "--prefix-len", "30", "--prefixes", "2",
                   "--requests", "4", "--output-len", "2", "--warmup", "off", "--json"])
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["params"]["prefix_len"], doc["params"]["prefixes"]) == (30, 2)
    assert [r["prompt_tokens"] for r in doc["levels"][0]["requests"]] == [38] * 4


@pytest.mark.parametrize(("args", "what"), [
    (["--prefixes", "3"], "--prefixes needs --prefix-len"),
    (["--prefix-len", "0"], "--prefix-len must be between 1"),
    (["--prefix-len", "8", "--prefixes", "0"], "--prefixes must be between 1"),
])
def test_bad_prefix_options_are_refused(run_cli: Run, args: list[str], what: str) -> None:
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", *args])
    assert res.code == ExitCode.USAGE and what in res.stderr, res.output


def test_turns_carry_the_history_in_order_with_conversations_in_parallel(
        run_cli: Run, url: str) -> None:
    res = run_cli(["bench", "--url", url, "--prompt", "random", "--input-len", "12",
                   "--turns", "3", "--requests", "9", "--concurrency", "2",
                   "--output-len", "4", "--ignore-eos", "--warmup", "off", "--json"])
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["params"]["turns"] == 3
    (level,) = doc["levels"]
    reqs = level["requests"]
    assert len(reqs) == 9 and all(r["ok"] for r in reqs)
    for conv in range(3):
        turns = reqs[3 * conv: 3 * conv + 3]
        # each turn sent after the previous one of its conversation ended
        for a, b in itertools.pairwise(turns):
            assert b["start_s"] >= a["start_s"] + a["latency_s"]
        # and carries the history: the fake counts every message's words (+ 6 template)
        sizes = [r["prompt_tokens"] for r in turns]
        assert sizes[0] < sizes[1] < sizes[2]
        assert sizes[1] - sizes[0] == sizes[2] - sizes[1]  # one reply + one prompt more
    assert level["metrics"]["peak_concurrency"] <= 2
    # two conversations ran side by side
    starts = sorted((r["start_s"], r["start_s"] + r["latency_s"]) for r in reqs)
    assert starts[1][0] < starts[0][1]


@pytest.mark.parametrize(("args", "what"), [
    (["--turns", "2", "--endpoint", "completions"], "needs --endpoint chat"),
    (["--turns", "2", "--request-rate", "3"], "not with --duration, a request rate"),
    (["--turns", "0"], "--turns must be between 1"),
])
def test_bad_turns_are_refused(run_cli: Run, args: list[str], what: str) -> None:
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", *args])
    assert res.code == ExitCode.USAGE and what in res.stderr, res.output


def test_only_the_prefixes_the_requests_use_are_built(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from variantctl.bench import workloads
    built: list[int] = []
    real = workloads.shared_prefixes

    async def counting(tok, *, k: int, n_tokens: int, seed: int) -> list[str]:  # type: ignore[no-untyped-def]
        built.append(k)
        return await real(tok, k=k, n_tokens=n_tokens, seed=seed)

    monkeypatch.setattr(workloads, "shared_prefixes", counting)
    params = BenchParams(endpoint="completions", prompt="short", prefix_len=5,
                         prefixes=10_000)
    reqs = asyncio.run(prepare(url, params, 2, model="fake-model"))
    assert built == [2] and len(reqs) == 2
def test_turns_send_back_the_exact_replies_the_server_streamed(
        run_cli: Run, tmp_path: Path) -> None:
    """Every assistant message a request carries is the text the server sent on that
    conversation's previous turns (the fake gives each request its own text)."""
    log = tmp_path / "messages.jsonl"
    with spawn("--ttft-ms", "2", "--itl-ms", "1", "--message-log", str(log)) as u:
        res = run_cli(["bench", "--url", u, "--prompt", "random", "--input-len", "12",
                       "--turns", "3", "--requests", "9", "--concurrency", "2",
                       "--output-len", "4", "--ignore-eos", "--warmup", "off", "--json"])
    assert res.code == 0, res.output
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(sent) == 9
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for s in sent:  # a conversation is known by its first user message
        by_conv.setdefault(s["messages"][0]["content"], []).append(s)
    assert sorted(len(v) for v in by_conv.values()) == [3, 3, 3]
    for turns in by_conv.values():
        for t, s in enumerate(turns):
            assistant = [m["content"] for m in s["messages"] if m["role"] == "assistant"]
            assert assistant == [turns[k]["reply"] for k in range(t)]
            assert all(a.startswith(" r") for a in assistant)  # a real reply, not empty
        assert len({s["reply"] for s in turns}) == 3  # each turn's text its own
