"""The client against a HOSTILE server (issue 19 items 3, 5, 8): every request is
counted, every read is bounded, nothing is followed elsewhere.

The server is tests/support/fake_openai_server.py in one of its ``--hostile`` modes —
a labelled test double that misbehaves on purpose; no real vLLM does these things.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import pytest

from tests.support.fake_openai_server import spawn
from variantctl.bench import client, runner
from variantctl.bench.promscrape import MAX_SCRAPE_BYTES, MetricsScraper
from variantctl.bench.runner import probe, run_level, run_warmup
from variantctl.benchparams import BenchParams
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode

MiB = 1024 * 1024


def stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/hostile-stats", timeout=10) as resp:
        data: dict[str, Any] = json.loads(resp.read())
    return data


def level_of(url: str, requests: int = 4, **kw: Any) -> Any:
    params = BenchParams(output_len=4, requests=requests, warmup="off", timeout_s=30,
                         **kw)
    return asyncio.run(run_level(url, params, 2))


def test_malformed_usage_fails_each_request_naming_the_field() -> None:
    # before: int("lots") raised inside the request task, the gather swallowed it and
    # the level said 0 completed, 0 failed, exit 0
    with spawn("--fast", "--hostile", "bad-usage") as url:
        level = level_of(url)
    assert (level.metrics.completed, level.metrics.failed) == (0, 4)
    assert dict(level.errors) == {"bad usage": 4}
    assert all(r.error_detail == "usage.completion_tokens is 'lots', expected a "
               "non-negative integer" for r in level.requests)
    assert level.all_failed


def test_deeply_nested_json_is_a_bad_event_not_a_lost_request() -> None:
    with spawn("--fast", "--hostile", "deep-json") as url:
        level = level_of(url)
    assert (level.metrics.completed, level.metrics.failed) == (0, 4)
    assert dict(level.errors) == {"bad event": 4}
    assert "nested too deeply" in (level.requests[0].error_detail or "")


def test_the_warm_up_counts_the_same_way() -> None:
    with spawn("--fast", "--hostile", "bad-usage") as url:
        warm = asyncio.run(run_warmup(url, BenchParams(output_len=4, warmup="6"), 2))
    assert (warm.requests, warm.failed) == (6, 6) and dict(warm.errors) == {"bad usage": 6}


@pytest.mark.parametrize("usage", [
    {"completion_tokens": -1}, {"completion_tokens": 2.5}, {"completion_tokens": True},
    {"prompt_tokens_details": "x"}, {"prompt_tokens_details": {"cached_tokens": "x"}},
    {"completion_tokens_details": {"reasoning_tokens": [1]}}, [1, 2],
])
def test_every_malformed_usage_field_is_named(usage: Any) -> None:
    with pytest.raises(client._BadUsage) as exc:
        client.usage_counts(usage)
    assert str(exc.value).startswith("usage")


def test_a_request_the_client_loses_is_an_error_not_a_smaller_level(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # FAULT INJECTION (labelled): a client bug that raises for one request. The level
    # must not come back counting 3 of the 4 requests it sent.
    real_send = runner.send

    async def buggy_send(*args: Any, **kwargs: Any) -> Any:
        if kwargs["index"] == 2:
            raise TypeError("injected client bug")
        return await real_send(*args, **kwargs)

    monkeypatch.setattr(runner, "send", buggy_send)
    with spawn("--fast") as url, pytest.raises(VariantctlError) as exc:
        level_of(url)
    assert exc.value.exit_code == ExitCode.INTERNAL
    assert ("4 request(s) sent, 3 ended completed or failed — 1 unaccounted for: "
            "TypeError: injected client bug") in exc.value.message


def test_an_endless_event_fails_its_request_near_the_cap() -> None:
    # before: the buffer was rebuilt and rescanned on every read (quadratic) and never
    # bounded: the request ran into its timeout having read gigabytes
    with spawn("--hostile", "endless-event") as url:
        level = level_of(url, requests=1)
        sent = stats(url)["bytes"]
    (r,) = level.requests
    assert r.error == "event too large"
    assert "16 MiB" in (r.error_detail or "")
    # the server wrote what the client read plus what the socket buffers held
    assert client.MAX_EVENT_BYTES <= sent < client.MAX_EVENT_BYTES + 16 * MiB


def test_a_huge_error_body_is_read_up_to_its_cap() -> None:
    with spawn("--hostile", "huge-error") as url:
        level = level_of(url, requests=1)
        sent = stats(url)["bytes"]
    (r,) = level.requests
    assert r.error == "http 500" and "body cut at 64 KiB" in (r.error_detail or "")
    assert sent < 32 * MiB  # of the 256 MiB the server meant to send


def test_a_huge_metrics_page_is_not_scraped_and_says_why() -> None:
    async def scrape(port: int) -> Any:
        scraper = MetricsScraper("127.0.0.1", port, interval=0.2)
        async with scraper:
            await asyncio.sleep(0.5)
        return scraper

    with spawn("--hostile", "huge-metrics") as url:
        scraper = asyncio.run(scrape(int(url.rsplit(":", 1)[1])))
        sent = stats(url)["bytes"]
    summary = scraper.summary()
    assert not summary.available
    assert summary.reason and "larger than 16 MiB: not scraped" in summary.reason
    assert scraper.failed == 1  # not asked again
    assert sent < MAX_SCRAPE_BYTES + 16 * MiB


def test_a_redirect_is_not_followed_and_names_its_target() -> None:
    # the redirect points at a second (well-behaved) server: it must see nothing
    with spawn("--fast") as other, spawn("--hostile", "redirect",
                                         "--redirect-to", other) as url:
        with pytest.raises(VariantctlError) as exc:
            asyncio.run(probe(url, 5.0))
        level = level_of(url, requests=2, model="fake-model")
        assert stats(other)["requests"] == 0
    assert exc.value.exit_code == ExitCode.FAILED
    assert f"answered HTTP 307: the server redirected to {other}/v1/models" in (
        exc.value.message)
    assert dict(level.errors) == {"redirect 307": 2}
    assert level.requests[0].error_detail == (
        f"the server redirected to {other}/v1/chat/completions; redirects are not followed")


def test_credentials_in_a_redirect_target_are_not_repeated() -> None:
    with spawn("--hostile", "redirect", "--redirect-to",
               "http://user:hunter2@elsewhere.invalid:9") as url:
        level = level_of(url, requests=1, model="fake-model")
    detail = level.requests[0].error_detail or ""
    assert "hunter2" not in detail and "http://***@elsewhere.invalid:9" in detail


def test_a_tokenizer_answer_of_the_wrong_shape_is_an_error_naming_the_field() -> None:
    params = BenchParams(prompt="random", input_len=16, output_len=4, requests=2,
                         warmup="off")
    with spawn("--fast", "--hostile", "bad-tokenize") as url, \
            pytest.raises(VariantctlError) as exc:
        asyncio.run(runner.prepare(url, params, 2, model="fake-model"))
    assert exc.value.exit_code == ExitCode.FAILED
    assert exc.value.message == (f"{url}/tokenize: the answer's 'tokens' is missing or not "
                                 "what vLLM sends")


def test_the_prefix_cache_reset_follows_no_redirect() -> None:
    from variantctl.bench.session import reset_prefix_cache

    # a 302 is what urllib would follow (as a GET, to wherever it points)
    with spawn("--fast") as other, spawn("--hostile", "redirect", "--redirect-code", "302",
                                         "--redirect-to", other) as url:
        assert reset_prefix_cache(url) is False
        assert stats(other)["requests"] == 0
