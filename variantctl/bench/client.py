"""The streaming OpenAI-compatible client: one coroutine per request → one ``RequestResult``.

HTTP is aiohttp, the library ``vllm bench serve`` itself uses: measured against the
alternatives in ``benchmarks/bench_client.py`` (README, "Why aiohttp"), it is the one
that keeps a one-core client well above the token rates it measures. The per-chunk
work is kept to the minimum the metrics need: one clock read per network read, a
bytes-level SSE split and one ``json.loads`` per event.

What is recorded follows ``vllm/benchmarks/lib/endpoint_request_func.py``: TTFT is
the first event whose ``choices`` is non-empty, every later such event is one ITL
sample, E2EL ends at the last such event (not at the usage event or ``[DONE]``), and
the token counts come from the final ``usage`` event (``stream_options.include_usage``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aiohttp

from variantctl.bench.model import RequestResult
from variantctl.benchparams import redact_url
from variantctl.jsontypes import JsonMapping, JsonObject

_DETAIL_MAX = 300
#: the largest SSE event accepted (a vLLM token event is well under 1 KiB; logprobs make
#: it a few KiB): a longer one fails its request instead of growing the buffer forever
MAX_EVENT_BYTES = 16 * 1024 * 1024
#: characters of a reply kept for ``--turns`` (the next turn's history; a reply of
#: ``--output-len`` tokens is far shorter)
MAX_REPLY_CHARS = 4 * 1024 * 1024
#: bytes of an error response read (its message is shown cut to ``_DETAIL_MAX`` anyway)
MAX_ERROR_BODY = 64 * 1024


@dataclass(frozen=True)
class PreparedRequest:
    """One request ready to send: the endpoint path and the JSON body, serialized once."""

    path: str  # "/v1/chat/completions" or "/v1/completions"
    body: bytes
    expected_prompt_tokens: int | None = None
    #: a trace's arrival time, seconds from the level's start (None: the arrival profile's)
    at_s: float | None = None
    #: ``--turns``: (conversation, turn, last turn) — sent after the previous turn ended
    turn: tuple[int, int, bool] | None = None


def build_body(
    *,
    endpoint: str,
    model: str,
    prompt: str | Sequence[int] | Sequence[JsonMapping],
    output_len: int,
    ignore_eos: bool,
    temperature: float,
    seed: int | None,
    extra: JsonMapping | None = None,
    at_s: float | None = None,
) -> PreparedRequest:
    """The request body ``vllm bench serve`` would send, plus temperature/seed/extra."""
    payload: JsonObject = {"model": model}
    if endpoint == "chat":
        messages = prompt if isinstance(prompt, list) and prompt and isinstance(
            prompt[0], dict) else [{"role": "user", "content": prompt}]
        payload["messages"] = messages
        payload["max_completion_tokens"] = output_len
        path = "/v1/chat/completions"
    else:
        payload["prompt"] = prompt
        payload["max_tokens"] = output_len
        payload["repetition_penalty"] = 1.0
        path = "/v1/completions"
    payload["stream"] = True
    payload["stream_options"] = {"include_usage": True}
    payload["temperature"] = temperature
    if seed is not None:
        payload["seed"] = seed
    if ignore_eos:
        payload["ignore_eos"] = True
    if extra:
        payload.update(extra)
    return PreparedRequest(path=path, body=json.dumps(payload).encode(), at_s=at_s)


def make_session(timeout_s: float, limit: int) -> aiohttp.ClientSession:
    """One session per level: keep-alive connections, one per concurrent request.

    The connector settings are ``vllm bench serve``'s (serve.py ``benchmark()``, less
    ``enable_cleanup_closed``, a TLS-only workaround that newer Pythons deprecate), so
    the two clients differ in how they read the stream, not in how they connect.
    """
    n = max(limit, 1)
    connector = aiohttp.TCPConnector(limit=n, limit_per_host=n, ttl_dns_cache=300,
                                     use_dns_cache=True, keepalive_timeout=60,
                                     force_close=False)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=timeout_s),
        headers={"Content-Type": "application/json"},
    )


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_MAX else text[: _DETAIL_MAX - 1] + "…"


def _error_message(body: bytes | bytearray) -> str:
    try:
        data = json.loads(body)
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict):
                return _short(str(err.get("message", err)))
            return _short(str(err))
        return _short(str(data))
    except (ValueError, RecursionError):  # not JSON, or JSON nested too deeply to show
        return _short(body.decode("utf-8", "replace"))


async def read_bounded(content: aiohttp.StreamReader, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of a response body, and whether there was more (the rest
    is not read: a hostile or broken server can send gigabytes)."""
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        data = await content.read(limit + 1 - size)
        if not data:
            return b"".join(parts), False
        parts.append(data)
        size += len(data)
    body = b"".join(parts)
    return body[:limit], True


def redirect_detail(resp: aiohttp.ClientResponse) -> str:
    """What a 3xx answer says, for the error naming it (redirects are never followed:
    the numbers would be another server's, reported as the URL's)."""
    where = resp.headers.get("Location")
    target = redact_url(where)[:_DETAIL_MAX] if where else "(no Location header)"
    return f"the server redirected to {target}; redirects are not followed"


@dataclass
class _StreamState:
    """What a stream's events said besides the chunk times (filled while it is read)."""

    error: str | None = None
    detail: str | None = None
    usage: object = None  # the last non-empty ``usage``: checked when the request ends
    #: ``--turns``: the text of each content chunk, collected (None: not kept)
    reply: list[str] | None = None
    reply_chars: int = 0


class _BadUsage(Exception):
    """The ``usage`` event holds a value that is not a token count (names the field)."""


def _count(data: Mapping[str, object], key: str, where: str) -> int:
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
        raise _BadUsage(f"{where}.{key} is {shown}, expected a non-negative integer")
    return value


def _details(usage: Mapping[str, object], key: str, count: str) -> int:
    details = usage.get(key)
    if details is None:
        return 0
    if not isinstance(details, dict):
        raise _BadUsage(f"usage.{key} is a {type(details).__name__}, expected an object")
    return _count(details, count, f"usage.{key}")


def usage_counts(usage: object) -> tuple[int, int, int, int]:
    """(prompt, completion, cached, reasoning) tokens of a ``usage`` object; raises
    :class:`_BadUsage` naming the field that is not a count."""
    if not isinstance(usage, dict):
        raise _BadUsage(f"usage is a {type(usage).__name__}, expected an object")
    return (_count(usage, "prompt_tokens", "usage"), _count(usage, "completion_tokens", "usage"),
            _details(usage, "prompt_tokens_details", "cached_tokens"),
            _details(usage, "completion_tokens_details", "reasoning_tokens"))


async def send(
    session: aiohttp.ClientSession,
    base_url: str,
    request: PreparedRequest,
    *,
    index: int,
    level_t0: float,
    queued_at: float | None = None,
    offsets: list[float] | None = None,
    reply: list[str] | None = None,
) -> RequestResult:
    """Send one streaming request and time it; failures come back as values, never raise.

    ``level_t0`` is the level's ``time.perf_counter()`` origin; ``queued_at`` the time the
    request became due (before waiting for the concurrency limit). ``offsets``, when
    given, is the list the chunk times are appended to while the request runs (the live
    progress counts tokens from it at no per-chunk cost). ``reply``, when given, gets the
    text of every content chunk (``--turns`` sends it back as the assistant's message),
    at most :data:`MAX_REPLY_CHARS` of it.
    """
    if offsets is None:
        offsets = []
    usage: object = None  # the server's usage object (checked by usage_counts)
    st = time.perf_counter()
    queue_s = st - queued_at if queued_at is not None else 0.0
    error: str | None = None
    detail: str | None = None
    perf = time.perf_counter
    try:
        async with session.post(base_url + request.path, data=request.body,
                                allow_redirects=False) as resp:
            if 300 <= resp.status < 400:
                error, detail = f"redirect {resp.status}", redirect_detail(resp)
            elif resp.status != 200:
                body, more = await read_bounded(resp.content, MAX_ERROR_BODY)
                error, detail = f"http {resp.status}", _error_message(body)
                if more:
                    note = f" (body cut at {MAX_ERROR_BODY // 1024} KiB)"
                    detail = detail[: _DETAIL_MAX - len(note)] + note
            else:
                state = _StreamState(reply=reply)
                # The unfinished event's bytes. Each read is searched only where it adds
                # bytes (a blank line may straddle two reads), so one huge event costs
                # linear time, and the buffer never grows past MAX_EVENT_BYTES.
                buf = bytearray()
                events: list[bytes] | list[bytearray]
                rest: bytes | bytearray
                async for data in resp.content.iter_any():
                    now = perf() - st
                    if buf:
                        start = len(buf) - 1
                        buf += data
                        if buf.find(b"\n\n", start) < 0:
                            if len(buf) > MAX_EVENT_BYTES:
                                error = "event too large"
                                break
                            continue
                        *events, rest = buf.split(b"\n\n")
                        size = len(buf)
                        buf = bytearray(rest)
                    elif b"\n\n" in data:  # the usual read: whole events only
                        *events, rest = data.split(b"\n\n")
                        size = len(data)
                        if rest:
                            buf += rest
                    else:
                        buf += data
                        if len(buf) > MAX_EVENT_BYTES:
                            error = "event too large"
                            break
                        continue
                    if len(buf) > MAX_EVENT_BYTES or (size > MAX_EVENT_BYTES and any(
                            len(e) > MAX_EVENT_BYTES for e in events)):
                        error = "event too large"
                        break
                    if _handle(events, now, offsets, state):
                        break
                else:
                    if buf.strip():  # a last event without its blank line
                        _handle([buf], perf() - st, offsets, state)
                if error is not None:
                    detail = (f"an SSE event grew past {MAX_EVENT_BYTES // (1024 * 1024)} MiB "
                              "without ending; the rest of the stream was not read")
                else:
                    error, detail = state.error, state.detail
                usage = state.usage
                if error is None and not offsets:
                    error = "no content chunk"
                    detail = "the stream ended before any chunk with choices (vLLM: no TTFT)"
    except asyncio.TimeoutError:
        error, detail = "timeout", f"no complete response within {session.timeout.total} s"
    except aiohttp.ClientConnectorError as exc:
        error, detail = "connection failed", _short(str(exc))
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError,
            aiohttp.ClientOSError) as exc:  # reset mid-response: the server went away
        error, detail = "disconnected", _short(str(exc) or type(exc).__name__)
    except aiohttp.ClientError as exc:
        error, detail = "http client error", _short(f"{type(exc).__name__}: {exc}")
    except ValueError as exc:  # a data: line that is not JSON
        error, detail = "bad event", _short(str(exc))
    counts = (0, 0, 0, 0)
    if usage is not None:
        try:
            counts = usage_counts(usage)
        except _BadUsage as exc:
            if error is None:
                error, detail = "bad usage", str(exc)
            usage = None
    return _result(index, st - level_t0, queue_s, offsets, usage is not None, counts, error,
                   detail, perf() - st)


def _handle(events: list[bytes] | list[bytearray], now: float, offsets: list[float],
            state: _StreamState) -> bool:
    """Consume complete SSE events; True at ``[DONE]``. Records content-chunk times."""
    for event in events:
        event = event.strip()
        if not event.startswith(b"data:"):
            continue  # an SSE comment (ping) or a keep-alive blank
        payload = event[5:].strip()
        if payload == b"[DONE]":
            return True
        try:
            obj = json.loads(payload)
        except RecursionError:  # a hostile server's [[[[…]]]]: a bad event, not a crash
            raise ValueError("an event's JSON is nested too deeply") from None
        if not isinstance(obj, dict):
            continue
        choices = obj.get("choices")
        if choices:
            offsets.append(now)
            if state.reply is not None:
                _keep_text(choices, state)
        elif "error" in obj:
            state.error, state.detail = "stream error", _error_message(payload)
        usage = obj.get("usage")
        if usage:
            state.usage = usage  # checked when the request ends (usage_counts)
    return False


def _keep_text(choices: object, state: _StreamState) -> None:
    """The text of a content chunk (chat: ``delta.content``; completions: ``text``), kept
    up to :data:`MAX_REPLY_CHARS` (a hostile server's endless reply stays bounded)."""
    first = choices[0] if isinstance(choices, list) else None
    if not isinstance(first, dict) or state.reply is None:
        return
    delta = first.get("delta")
    text = delta.get("content") if isinstance(delta, dict) else first.get("text")
    if isinstance(text, str) and text:
        text = text[: MAX_REPLY_CHARS - state.reply_chars]
        state.reply.append(text)
        state.reply_chars += len(text)


def _result(
    index: int,
    start_s: float,
    queue_s: float,
    offsets: list[float],
    usage_seen: bool,
    counts: tuple[int, int, int, int],
    error: str | None,
    detail: str | None,
    elapsed: float,
) -> RequestResult:
    prompt_tokens, output_tokens, cached, reasoning = counts
    if not usage_seen and offsets:
        output_tokens = len(offsets)  # no usage: count chunks (flagged by usage_seen=False)
    ok = error is None
    return RequestResult(
        index=index,
        ok=ok,
        start_s=start_s,
        queue_s=queue_s,
        ttft_s=offsets[0] if offsets else 0.0,
        # A failed request is in flight until it failed: that time matters for the
        # in-flight sweep and the steady window, not for vLLM's metrics (ok only).
        latency_s=offsets[-1] if ok else elapsed,
        chunk_offsets_s=tuple(offsets),
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached,
        reasoning_tokens=reasoning,
        usage_seen=usage_seen,
        error=error,
        error_detail=detail,
    )
