"""vLLM's own view of a level: its ``/metrics`` (Prometheus text) scraped once a second.

PURE parts: :func:`parse_text` (the Prometheus text exposition format, version
0.0.4) and :func:`snapshot` / :func:`summarize` (running and waiting requests,
KV-cache usage, prefix-cache queries and hits, preemptions). The scraper
(:class:`MetricsScraper`) is an asyncio task beside the level, on the same
event loop as the benchmark client and through the same local address (the
target's forward), so it reaches a remote server without its port being open.

Why a small parser and not ``prometheus_client.parser``: we need six series out
of a flat, line-based format; the library would be a new dependency of
variantctl for ~60 lines (it is installed in the vLLM venv, not in ours). The
vLLM tier of the tests cross-checks this parser against
``prometheus_client.parser`` on the real server's output.

Names across vLLM eras: V1 (≥ 0.8) exports ``vllm:kv_cache_usage_perc`` and
``vllm:prefix_cache_{queries,hits}_total``; V0 (the seeds' 0.6.3) exports
``vllm:gpu_cache_usage_perc`` and ``vllm:gpu_prefix_cache_hit_rate``. Both are read.
Series with several label sets (data-parallel engines) are summed (counts) or
averaged (usage fractions).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from variantctl.jsonfields import Fields
from variantctl.jsontypes import JsonMapping, JsonObject

Labels = tuple[tuple[str, str], ...]
#: metric name -> [(labels, value)]
Families = dict[str, list[tuple[Labels, float]]]

RUNNING = ("vllm:num_requests_running",)
WAITING = ("vllm:num_requests_waiting",)
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREFIX_QUERIES = ("vllm:prefix_cache_queries_total",)
PREFIX_HITS = ("vllm:prefix_cache_hits_total",)
PREFIX_HIT_RATE = ("vllm:gpu_prefix_cache_hit_rate",)  # V0: a gauge, 0..1
PREEMPTIONS = ("vllm:num_preemptions_total",)
#: requests the server finished, every reason (V0 and V1): tells when the counters it
#: publishes after a response cover the level's last requests
FINISHED = ("vllm:request_success_total",)


class ParseError(ValueError):
    """A line that is not Prometheus text (carries the 1-based line number)."""

    def __init__(self, line_no: int, line: str, why: str):
        super().__init__(f"line {line_no}: {why}: {line[:80]!r}")
        self.line_no = line_no


def _value(text: str) -> float:
    special = {"+inf": math.inf, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}
    low = text.lower()
    return special[low] if low in special else float(text)


def _labels(text: str, start: int, line_no: int, line: str) -> tuple[Labels, int]:
    """Parse ``{a="x",b="y"}`` at ``text[start] == '{'``: the labels, the index after ``}``."""
    out: list[tuple[str, str]] = []
    i = start + 1
    n = len(text)
    while True:
        while i < n and text[i] in " ,":
            i += 1
        if i < n and text[i] == "}":
            return tuple(out), i + 1
        eq = text.find("=", i)
        if eq < 0 or eq + 1 >= n or text[eq + 1] != '"':
            raise ParseError(line_no, line, "bad label")
        name = text[i:eq].strip()
        i = eq + 2
        chars: list[str] = []
        while i < n and text[i] != '"':
            if text[i] == "\\" and i + 1 < n:
                nxt = text[i + 1]
                chars.append({"n": "\n", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
                i += 2
            else:
                chars.append(text[i])
                i += 1
        if i >= n:
            raise ParseError(line_no, line, "unterminated label value")
        out.append((name, "".join(chars)))
        i += 1


def parse_text(text: str) -> Families:
    """Every sample of a Prometheus text page, by metric name (histogram parts keep
    their ``_bucket``/``_sum``/``_count`` names). Raises :class:`ParseError`."""
    families: Families = {}
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        brace = line.find("{")
        space = line.find(" ")
        if brace >= 0 and (space < 0 or brace < space):
            name = line[:brace]
            labels, end = _labels(line, brace, line_no, raw)
            rest = line[end:].split()
        else:
            name, _, tail = line.partition(" ")
            labels, rest = (), tail.split()
        if not name or not rest or len(rest) > 2:
            raise ParseError(line_no, raw, "expected NAME[{labels}] VALUE [TIMESTAMP]")
        try:
            value = _value(rest[0])
        except ValueError:
            raise ParseError(line_no, raw, "bad value") from None
        families.setdefault(name, []).append((labels, value))
    return families


def _first(families: Families, names: Sequence[str], how: str) -> float | None:
    for name in names:
        values = [v for _, v in families.get(name, ()) if not math.isnan(v)]
        if values:
            return sum(values) if how == "sum" else sum(values) / len(values)
    return None


@dataclass(frozen=True)
class Snapshot:
    """The series we use, at one scrape (``None``: this vLLM does not export it)."""

    t: float
    running: float | None
    waiting: float | None
    kv_usage: float | None
    prefix_queries: float | None
    prefix_hits: float | None
    prefix_hit_rate: float | None
    preemptions: float | None
    finished: float | None = None


def snapshot(families: Families, t: float) -> Snapshot:
    return Snapshot(
        t=t,
        running=_first(families, RUNNING, "sum"),
        waiting=_first(families, WAITING, "sum"),
        kv_usage=_first(families, KV_USAGE, "avg"),
        prefix_queries=_first(families, PREFIX_QUERIES, "sum"),
        prefix_hits=_first(families, PREFIX_HITS, "sum"),
        prefix_hit_rate=_first(families, PREFIX_HIT_RATE, "avg"),
        preemptions=_first(families, PREEMPTIONS, "sum"),
        finished=_first(families, FINISHED, "sum"),
    )


def is_vllm(families: Families) -> bool:
    return any(name.startswith("vllm:") for name in families)


@dataclass(frozen=True)
class Gauge:
    avg: float | None
    max: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"avg": _r(self.avg), "max": _r(self.max)}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Gauge:
        return cls.from_fields(Fields(data, "gauge"))

    @classmethod
    def from_fields(cls, f: Fields | None) -> Gauge:
        if f is None:
            return cls(None, None)
        return cls(f.opt_number("avg"), f.opt_number("max"))


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _gauge(values: Sequence[float | None]) -> Gauge:
    vals = [v for v in values if v is not None]
    return Gauge(sum(vals) / len(vals) if vals else None, max(vals) if vals else None)


def _delta(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return None
    # a counter that went down means the server restarted: count from the reset
    return sum(b - a if b >= a else b for a, b in itertools.pairwise(vals))


@dataclass(frozen=True)
class ServerMetricsSummary:
    """vLLM's ``/metrics`` over one level (``available=False``: why not)."""

    available: bool
    reason: str | None = None
    scrapes: int = 0
    failed_scrapes: int = 0
    running: Gauge = Gauge(None, None)
    waiting: Gauge = Gauge(None, None)
    #: fraction 0..1 of the KV cache in use
    kv_cache_usage: Gauge = Gauge(None, None)
    #: counters over the level (last − first scrape)
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    #: hits / queries over the level (V1), or the V0 gauge's average
    prefix_cache_hit_rate: float | None = None
    preemptions: float | None = None
    last_error: str | None = None

    def to_json(self) -> JsonObject:
        return {
            "available": self.available,
            "reason": self.reason,
            "scrapes": self.scrapes,
            "failed_scrapes": self.failed_scrapes,
            "running": self.running.to_json(),
            "waiting": self.waiting.to_json(),
            "kv_cache_usage": self.kv_cache_usage.to_json(),
            "prefix_cache_queries": self.prefix_cache_queries,
            "prefix_cache_hits": self.prefix_cache_hits,
            "prefix_cache_hit_rate": _r(self.prefix_cache_hit_rate),
            "preemptions": self.preemptions,
            "last_error": self.last_error,
        }

    @classmethod
    def from_json(cls, data: JsonMapping) -> ServerMetricsSummary:
        return cls.from_fields(Fields(data, "server_metrics"))

    @classmethod
    def from_fields(cls, f: Fields) -> ServerMetricsSummary:
        return cls(
            available=f.flag("available"),
            reason=f.opt_text("reason"),
            scrapes=f.integer("scrapes", 0),
            failed_scrapes=f.integer("failed_scrapes", 0),
            running=Gauge.from_fields(f.opt_obj("running")),
            waiting=Gauge.from_fields(f.opt_obj("waiting")),
            kv_cache_usage=Gauge.from_fields(f.opt_obj("kv_cache_usage")),
            prefix_cache_queries=f.opt_number("prefix_cache_queries"),
            prefix_cache_hits=f.opt_number("prefix_cache_hits"),
            prefix_cache_hit_rate=f.opt_number("prefix_cache_hit_rate"),
            preemptions=f.opt_number("preemptions"),
            last_error=f.opt_text("last_error"),
        )


def summarize(snaps: Sequence[Snapshot], *, failed: int = 0,
              last_error: str | None = None) -> ServerMetricsSummary:
    """Gauges averaged/maxed over the scrapes; counters as the change over the level."""
    if not snaps:
        return ServerMetricsSummary(False, last_error or "no scrape succeeded", 0, failed,
                                    last_error=last_error)
    queries = _delta([s.prefix_queries for s in snaps])
    hits = _delta([s.prefix_hits for s in snaps])
    if queries is not None and hits is not None:
        rate = hits / queries if queries > 0 else None
    else:
        rate = _gauge([s.prefix_hit_rate for s in snaps]).avg
    return ServerMetricsSummary(
        available=True,
        scrapes=len(snaps),
        failed_scrapes=failed,
        running=_gauge([s.running for s in snaps]),
        waiting=_gauge([s.waiting for s in snaps]),
        kv_cache_usage=_gauge([s.kv_usage for s in snaps]),
        prefix_cache_queries=queries,
        prefix_cache_hits=hits,
        prefix_cache_hit_rate=rate,
        preemptions=_delta([s.preemptions for s in snaps]),
        last_error=last_error,
    )


# -- effectful: the scraper ----------------------------------------------------------------


class ScrapeError(Exception):
    pass


class ScrapeTooLarge(ScrapeError):
    """The page is over the size cap: scraping it again would read as much again."""


#: the largest ``/metrics`` answer scraped (vLLM's is ~100 KiB; one with many LoRA
#: adapters or data-parallel engines a few MiB): a larger one is not read, the level
#: says why
MAX_SCRAPE_BYTES = 16 * 1024 * 1024


async def fetch_metrics(host: str, port: int, path: str = "/metrics", *,
                        timeout: float = 5.0, limit: int = MAX_SCRAPE_BYTES) -> str:
    """``GET path``; at most ``limit`` bytes are read (:class:`ScrapeError` past them).

    The answer ends where its ``Content-Length`` (or its last chunk) says, not when the
    connection closes: a server or forward that keeps it open despite ``Connection:
    close`` would otherwise hold every scrape — and the level after its last response,
    through its final scrape — until the timeout."""

    async def body_of(reader: asyncio.StreamReader, head: bytes) -> bytes:
        headers = {}
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            parts: list[bytes] = []
            size = 0
            while True:
                size_line = await reader.readuntil(b"\r\n")
                n = int(size_line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    return b"".join(parts)
                size += n
                if size > limit:
                    raise _too_large()
                parts.append(await reader.readexactly(n))
                await reader.readexactly(2)  # the chunk's CRLF
        if b"content-length" in headers:
            n = int(headers[b"content-length"])
            if n > limit:
                raise _too_large()
            return await reader.readexactly(n)
        parts, size = [], 0
        while chunk := await reader.read(min(1 << 20, limit + 1 - size)):
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                raise _too_large()
        return b"".join(parts)

    def _too_large() -> ScrapeTooLarge:
        return ScrapeTooLarge(f"{path} on {host}:{port} is larger than "
                              f"{limit // (1024 * 1024)} MiB: not scraped")

    async def go() -> str:
        reader, writer = await asyncio.open_connection(host, port, limit=64 * 1024)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                         "Accept: text/plain\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            try:
                head = (await reader.readuntil(b"\r\n\r\n"))[:-4]
            except asyncio.LimitOverrunError:
                raise ScrapeError(f"{path} on {host}:{port}: headers over 64 KiB") from None
            except asyncio.IncompleteReadError:
                raise ScrapeError(f"not an HTTP response from {host}:{port}{path}") from None
            status = head.split(b" ", 2)
            if len(status) < 2 or not status[0].startswith(b"HTTP/"):
                raise ScrapeError(f"not an HTTP response from {host}:{port}{path}")
            if status[1] != b"200":
                raise ScrapeError(f"{path} answered HTTP "
                                  f"{status[1].decode(errors='replace')}")
            try:
                body = await body_of(reader, head)
            except (ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                raise ScrapeError(f"{path} on {host}:{port}: a malformed or cut "
                                  "answer") from None
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        return body.decode("utf-8", "replace")

    try:
        return await asyncio.wait_for(go(), timeout)
    except (OSError, asyncio.TimeoutError) as exc:
        raise ScrapeError(f"{path} on {host}:{port}: {exc or type(exc).__name__}") from None


#: the end scrape's retry interval while vLLM's counters catch up with the level
SETTLE_TICK_S = 0.1


@dataclass
class MetricsScraper:
    """Scrapes ``/metrics`` every ``interval`` seconds while the level runs.

    ``async with MetricsScraper(host, port): await run_level(...)`` then ``.summary()``.
    """

    host: str
    port: int
    interval: float = 1.0
    clock: Callable[[], float] = time.monotonic
    snaps: list[Snapshot] = field(default_factory=list)
    failed: int = 0
    last_error: str | None = None
    #: the server has no vLLM /metrics (404, or no vllm: series): scraping stopped
    not_vllm: bool = False
    _task: asyncio.Task[None] | None = None
    #: how long the end scrape waits for the server's counters to cover the level
    settle_s: float = 3.0
    #: requests the client saw finish (set by :meth:`level_finished`): the end scrape is
    #: repeated until the server's finished-request counter has moved as far
    _expected: int | None = None
    #: set when the level ended: the loop checks it, because a cancellation that lands
    #: while ``wait_for`` finishes is swallowed on Python < 3.12 and the loop would
    #: scrape forever (seen: ``bench`` hung 1 run in 6 after the level's last request)
    _done: bool = False

    async def __aenter__(self) -> MetricsScraper:
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._done = True
        if self._task is not None:
            self._task.cancel()
            # bounded: one scrape at most (its own timeout) plus a tick, never forever
            await asyncio.wait({self._task}, timeout=self.interval + 10.0)
            if not self._task.done():
                self._task.cancel()
            self._task = None
        # the level's end state (counters after its last request) belongs to the level
        if await self.scrape_once():
            await self._settle()

    def level_finished(self, completed: int) -> None:
        """The client saw ``completed`` requests finish: the end scrape waits for them."""
        self._expected = completed

    async def _settle(self) -> None:
        """Scrape the level's end state again until it covers the level's requests.

        vLLM publishes a step's counters after it has sent that step's outputs (V1's
        output handler records stats after pushing responses), so a scrape right after
        the last response can miss its requests' prefix-cache queries (seen: 6 of 8
        requests counted). The end snapshot (the last) is replaced, not added: it is one
        sample of the level's end however many reads it took. Bounded by ``settle_s``; a
        server without the finished-request counter is not waited for."""
        if self._expected is None:
            return
        for _ in range(round(self.settle_s / SETTLE_TICK_S)):
            seen = _delta([s.finished for s in self.snaps])
            if seen is None or seen >= self._expected:
                return
            await asyncio.sleep(SETTLE_TICK_S)
            end = self.snaps.pop()
            if not await self.scrape_once():
                self.snaps.append(end)  # the scrape failed: keep what was read
                return

    async def scrape_once(self) -> bool:
        """One scrape; True when it added a snapshot."""
        if self.not_vllm:
            return False
        t = self.clock()
        try:
            families = parse_text(await fetch_metrics(self.host, self.port))
        except (ScrapeError, ParseError) as exc:
            self.failed += 1
            self.last_error = str(exc)
            # a server that answers 404 has no /metrics at all, and one too large to
            # read stays so: stop asking
            self.not_vllm = "HTTP 404" in self.last_error or isinstance(exc, ScrapeTooLarge)
            return False
        if not is_vllm(families):
            self.not_vllm = True
            self.failed += 1
            self.last_error = "/metrics holds no vllm: series (not a vLLM server?)"
            return False
        self.snaps.append(snapshot(families, t))
        return True

    async def _loop(self) -> None:
        start = self.clock()
        k = 0
        while not self.not_vllm and not self._done:
            await self.scrape_once()
            k += 1
            await asyncio.sleep(max(0.0, start + k * self.interval - self.clock()))

    def summary(self) -> ServerMetricsSummary:
        return summarize(self.snaps, failed=self.failed, last_error=self.last_error)
