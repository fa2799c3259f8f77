"""vLLM /metrics: the Prometheus text parser, the per-level summary (hand-computed), both
vLLM eras' series names, and the scraper against a local HTTP server serving pages in
turn. The real server's page is parsed in tests/vllm/test_bench_real.py."""

from __future__ import annotations

import asyncio
import math

import pytest

from variantctl.bench.promscrape import (
    MetricsScraper,
    ParseError,
    ScrapeError,
    ServerMetricsSummary,
    fetch_metrics,
    parse_text,
    snapshot,
    summarize,
)


def page(running: float, waiting: float, kv: float, queries: float, hits: float,
         preempt: float, finished: float | None = None) -> str:
    """A page in vLLM V1's shape: HELP/TYPE lines, model_name/engine labels, histograms."""
    lab = 'engine="0",model_name="tiny"'
    return f"""# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{{generation="0"}} 1234.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{{lab}}} {running}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{{lab}}} {waiting}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{{lab}}} {kv}
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{{{lab}}} {queries}
vllm:prefix_cache_queries_created{{{lab}}} 1.7e+09
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{{{lab}}} {hits}
# TYPE vllm:num_preemptions counter
vllm:num_preemptions_total{{{lab}}} {preempt}
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{{lab},le="0.001"}} 0.0
vllm:time_to_first_token_seconds_bucket{{{lab},le="+Inf"}} 7.0
vllm:time_to_first_token_seconds_sum{{{lab}}} 1.5
vllm:time_to_first_token_seconds_count{{{lab}}} 7.0
vllm:cache_config_info{{block_size="16",note="a \\"quoted\\", {{braced}} value"}} 1.0
""" + ("" if finished is None else
       f'vllm:request_success_total{{{lab},finished_reason="length"}} {finished}\n'
       f'vllm:request_success_total{{{lab},finished_reason="stop"}} 0.0\n')


def test_parses_labels_values_and_histogram_parts() -> None:
    fam = parse_text(page(2, 1, 0.25, 100, 40, 0))
    assert fam["vllm:num_requests_running"] == [((("engine", "0"), ("model_name", "tiny")), 2.0)]
    buckets = fam["vllm:time_to_first_token_seconds_bucket"]
    assert [dict(lbl)["le"] for lbl, _ in buckets] == ["0.001", "+Inf"]
    assert fam["vllm:time_to_first_token_seconds_count"][0][1] == 7.0
    (labels, value), = fam["vllm:cache_config_info"]
    assert dict(labels)["note"] == 'a "quoted", {braced} value' and value == 1.0
    assert "python_gc_objects_collected_total" in fam


def test_special_values_and_timestamps() -> None:
    fam = parse_text("a +Inf\nb{x=\"1\"} NaN 1700000000000\nc -1.5e-3\n")
    assert fam["a"][0][1] == math.inf and math.isnan(fam["b"][0][1])
    assert fam["c"][0][1] == -0.0015


@pytest.mark.parametrize("bad", ["vllm:x{a=1} 2", "vllm:x{a=\"1\" 2", "vllm:x", "vllm:x abc",
                                 "vllm:x 1 2 3"])
def test_malformed_lines_name_the_line(bad: str) -> None:
    with pytest.raises(ParseError, match=r"line 2"):
        parse_text("ok 1\n" + bad + "\n")


def test_summary_over_a_level_hand_computed() -> None:
    pages = [page(0, 0, 0.0, 100, 40, 3), page(4, 2, 0.5, 150, 60, 3),
             page(4, 6, 0.75, 250, 130, 5), page(1, 0, 0.25, 300, 170, 5)]
    snaps = [snapshot(parse_text(p), t=float(i)) for i, p in enumerate(pages)]
    s = summarize(snaps)
    assert s.available and s.scrapes == 4
    assert (s.running.avg, s.running.max) == (9 / 4, 4)
    assert (s.waiting.avg, s.waiting.max) == (2, 6)
    assert (s.kv_cache_usage.avg, s.kv_cache_usage.max) == (0.375, 0.75)
    assert (s.prefix_cache_queries, s.prefix_cache_hits) == (200, 130)
    assert s.prefix_cache_hit_rate == pytest.approx(0.65)
    assert s.preemptions == 2
    assert ServerMetricsSummary.from_json(s.to_json()).to_json() == s.to_json()


def test_a_counter_reset_counts_from_zero() -> None:
    snaps = [snapshot(parse_text(page(0, 0, 0, q, 0, p)), t=0) for q, p in
             [(100, 5), (120, 7), (10, 1), (30, 2)]]
    s = summarize(snaps)
    assert s.prefix_cache_queries == 20 + 10 + 20
    assert s.preemptions == 2 + 1 + 1


def test_v0_series_names_and_data_parallel_engines() -> None:
    text = ('vllm:num_requests_running{engine="0"} 1\nvllm:num_requests_running{engine="1"} 2\n'
            'vllm:gpu_cache_usage_perc{engine="0"} 0.2\nvllm:gpu_cache_usage_perc{engine="1"} 0.4\n'
            'vllm:gpu_prefix_cache_hit_rate 0.5\n')
    snap = snapshot(parse_text(text), t=0)
    assert snap.running == 3 and snap.kv_usage == pytest.approx(0.3)
    assert snap.waiting is None and snap.preemptions is None
    s = summarize([snap, snap])
    assert s.prefix_cache_hit_rate == 0.5 and s.prefix_cache_queries is None


def test_no_scrape_is_not_available() -> None:
    s = summarize([], failed=3, last_error="/metrics answered HTTP 404")
    assert not s.available and s.reason == "/metrics answered HTTP 404"


async def _serve(pages: list[tuple[int, str]]) -> tuple[asyncio.AbstractServer, int, list[str]]:
    seen: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readuntil(b"\r\n\r\n")
        seen.append(request.split(b" ")[1].decode())
        status, body = pages[min(len(seen) - 1, len(pages) - 1)]
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\n\r\n{body}".encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


def test_scraper_scrapes_during_the_level_and_once_at_its_end() -> None:
    async def go() -> tuple[ServerMetricsSummary, list[str]]:
        pages = [(200, page(0, 0, 0.0, 0, 0, 0)), (200, page(2, 0, 0.5, 10, 4, 0)),
                 (200, page(2, 1, 0.5, 20, 8, 1))]
        server, port, seen = await _serve(pages)
        async with server:
            scraper = MetricsScraper("127.0.0.1", port, interval=0.2)
            async with scraper:
                await asyncio.sleep(0.3)  # scrapes at 0 and 0.2
            return scraper.summary(), seen

    s, seen = asyncio.run(go())
    assert seen == ["/metrics"] * 3
    assert s.available and s.scrapes == 3
    assert (s.prefix_cache_queries, s.prefix_cache_hits, s.preemptions) == (20, 8, 1)
    assert s.running.max == 2


def _level(pages: list[tuple[int, str]], completed: int,
           settle_s: float = 3.0) -> tuple[ServerMetricsSummary, list[str]]:
    async def go() -> tuple[ServerMetricsSummary, list[str]]:
        server, port, seen = await _serve(pages)
        async with server:
            scraper = MetricsScraper("127.0.0.1", port, interval=0.2, settle_s=settle_s)
            async with scraper:
                await asyncio.sleep(0.3)  # scrapes at 0 and 0.2
                scraper.level_finished(completed)
            return scraper.summary(), seen

    return asyncio.run(go())


def test_the_end_scrape_waits_for_the_counters_of_the_levels_last_requests() -> None:
    # seen on the real server: the scrape right after the last response counted 6 of
    # the level's 8 requests; vLLM had not yet recorded the last step's stats
    s, seen = _level([(200, page(0, 0, 0.0, 0, 0, 0, finished=0)),
                      (200, page(2, 0, 0.5, 64, 0, 0, finished=2)),
                      (200, page(0, 0, 0.0, 192, 0, 0, finished=6)),
                      (200, page(0, 0, 0.0, 256, 0, 0, finished=8))], completed=8)
    assert len(seen) == 4  # two during the level, the end, the end again
    assert s.scrapes == 3  # the stale end sample replaced, not added
    assert s.prefix_cache_queries == 256 and s.running.max == 2


def test_the_end_scrape_does_not_wait_past_its_bound_or_for_an_older_vllm() -> None:
    lagging = [(200, page(0, 0, 0.0, 0, 0, 0, finished=0)),
               (200, page(0, 0, 0.0, 192, 0, 0, finished=6))]
    s, seen = _level(lagging, completed=8, settle_s=0.3)
    assert len(seen) == 2 + 1 + 3 and s.scrapes == 3  # three more reads, then what it has
    assert s.prefix_cache_queries == 192
    # no finished-request counter: nothing to wait for
    s, seen = _level([(200, page(0, 0, 0.0, 0, 0, 0)), (200, page(0, 0, 0.0, 192, 0, 0))],
                     completed=8)
    assert len(seen) == 3 and s.prefix_cache_queries == 192
    # counters that already cover the level: one end scrape
    s, seen = _level([(200, page(0, 0, 0.0, 0, 0, 0, finished=0)),
                      (200, page(0, 0, 0.0, 256, 0, 0, finished=8))], completed=8)
    assert len(seen) == 3 and s.prefix_cache_queries == 256


def test_a_server_without_vllm_metrics_or_with_an_error_page() -> None:
    async def go() -> tuple[ServerMetricsSummary, str]:
        server, port, _ = await _serve([(404, "Not Found")])
        async with server:
            with pytest.raises(ScrapeError, match="HTTP 404"):
                await fetch_metrics("127.0.0.1", port)
        server2, port2, _ = await _serve([(200, "python_info 1\n")])
        async with server2:
            scraper = MetricsScraper("127.0.0.1", port2)
            await scraper.scrape_once()
            return scraper.summary(), "ok"

    s, _ = asyncio.run(go())
    assert not s.available and "no vllm: series" in (s.reason or "")


def test_nothing_listening_is_a_scrape_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ScrapeError, match=f"127.0.0.1:{port}"):
        asyncio.run(fetch_metrics("127.0.0.1", port, timeout=2))


def test_scraper_ends_even_when_a_cancellation_is_swallowed() -> None:
    """A cancel that lands while ``asyncio.wait_for`` completes is swallowed on Python <
    3.12; the scraper must still end with the level (``bench`` once hung forever here)."""
    import asyncio
    import contextlib
    import threading

    from variantctl.bench.promscrape import MetricsScraper

    calls: list[int] = []

    async def swallowing_scrape(self: MetricsScraper) -> None:
        calls.append(1)
        # what the stdlib race does to the task: the cancellation is lost in here
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.05)

    async def level() -> None:
        # a scrape outlasts the interval, so the cancel always lands inside one
        scraper = MetricsScraper("127.0.0.1", 9, interval=0.001)
        scraper.scrape_once = swallowing_scrape.__get__(scraper)  # type: ignore[method-assign]
        async with scraper:
            await asyncio.sleep(0.1)

    done = threading.Event()

    def run() -> None:
        asyncio.run(level())
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(20), "the scraper never ended"
    assert len(calls) >= 2


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_scrape_ends_with_the_answer_not_when_the_server_closes(framing: str) -> None:
    """A server (or a forward) that keeps the connection open after answering, whatever
    the request's ``Connection: close`` says: the scrape — and the level's final scrape,
    so the level — must end when the answer is complete (issue 22.5; before, the fetch
    read until EOF and timed out)."""
    text = page(1, 0, 0.25, 10, 4, 0)

    async def go() -> str:
        held: list[asyncio.StreamWriter] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            data = text.encode()
            if framing == "chunked":
                half = len(data) // 2
                body = b"".join(b"%x\r\n%s\r\n" % (len(c), c)
                                for c in (data[:half], data[half:])) + b"0\r\n\r\n"
                head = b"Transfer-Encoding: chunked\r\n"
            else:
                body, head = data, b"Content-Length: %d\r\n" % len(data)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" + head
                         + b"\r\n" + body)
            await writer.drain()
            held.append(writer)  # and never closed: an idle keep-alive connection

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with server:
            port = server.sockets[0].getsockname()[1]
            got = await fetch_metrics("127.0.0.1", port, timeout=3.0)
            for w in held:
                w.close()
            return got

    assert asyncio.run(go()) == text
