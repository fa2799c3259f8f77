#!/usr/bin/env python3
"""FAKE OpenAI-compatible streaming server with known timing — a test double, not vLLM.

For the fidelity tests and the client-cost benchmark of ``variantctl bench``: every
request answers with a first content chunk exactly ``--ttft-ms`` after the request
arrived and one token per chunk every ``--itl-ms`` after that (deadlines are absolute
from the arrival, so sleep jitter does not accumulate), then a ``usage`` event and
``[DONE]`` — the event layout of vLLM's OpenAI server (chat and completions, with
``stream_options.include_usage``). ``--fast`` drops every pause: tokens go out as fast
as the server can write them ("as fast as it can" mode).

Token counts are known: ``completion_tokens`` = ``max_tokens`` (or ``--tokens``),
``prompt_tokens`` = the prompt's whitespace-separated words + 1 (a BOS), chat adds
``CHAT_OVERHEAD``; ``--cached-tokens`` / ``--reasoning-tokens`` fill the usage details.
``/tokenize`` and ``/detokenize`` implement that same word tokenizer, so random
prompts can be built against it. ``GET /timings`` returns (and forgets) what really
happened per streamed request: its arrival and every token chunk's write time.
Faults: ``--bind-after FILE`` binds the port only once FILE exists (a slow load, so
another process can take the port first); ``--fail-every N`` answers every Nth request
with HTTP 500; ``--die-after N``
exits the process after N requests have started. ``--request-log FILE`` appends one
line per request, in arrival order (``METHOD PATH``, and a completion's
``max_tokens`` and prompt), so two clients can be compared request for request.
Load: ``--itl-per-inflight-ms S`` makes each token gap ``--itl-ms`` + S × (streams in
flight when the gap starts − 1), so TPOT grows linearly with the requests in flight;
with ``--full-speed-streams N`` only the streams beyond the first N slow the gaps
(S × max(0, in flight − N)): a server whose batch holds N streams at full speed, so
the level a TPOT SLO allows is N and the levels either side differ by S, however short
the gaps are (the capacity-search tests).

HOSTILE modes (``--hostile MODE``, issue 19: a server that is broken or malicious, to
show that the client counts, bounds and filters what it gets — no real server does
this): ``bad-usage`` (``usage.completion_tokens: "lots"``), ``bad-tokenize``
(``/tokenize`` answers ``{"tokens": "lots"}``), ``deep-json`` (an event
nested 100,000 levels deep), ``endless-event`` (one SSE event that never ends),
``huge-error`` (HTTP 500 with a 256 MiB body), ``huge-metrics`` (a ``/metrics`` page
that never ends), ``redirect`` (every route answers 307 to ``--redirect-to``),
``escapes`` (a model id and a log line holding OSC/CSI terminal escapes, then the log
line is printed and the server exits if ``--exit-after-log``). ``GET /hostile-stats``
returns what was sent: ``{"bytes": N, "requests": N}`` (bytes of the endless
answers written before the client hung up).

    fake_openai_server.py [--port N] [--ttft-ms MS] [--itl-ms MS] [--tokens N] [--fast]

It prints ``PORT <n>`` on stdout once it listens, then the line vLLM's API server (uvicorn)
prints when it is ready, ``INFO:     Application startup complete.``, so ``launch`` asks
``/health`` at once instead of at its next poll (a second later). Standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

MODEL = "fake-model"
CHAT_OVERHEAD = 6  # tokens the "chat template" adds around one user message
BOS = 1
MAX_BODY = 64 * 1024 * 1024


class WordTokenizer:
    """Whitespace words ↔ ids, ids handed out in first-seen order (2, 3, …)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.words: dict[int, str] = {}

    def encode(self, text: str, special: bool) -> list[int]:
        out = [BOS] if special else []
        for w in text.split():
            if w not in self.ids:
                i = len(self.ids) + 2
                self.ids[w] = i
                self.words[i] = w
            out.append(self.ids[w])
        return out

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.words.get(i, f"w{i}") for i in ids if i != BOS)


def chat_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        parts.append(str(content or ""))
    return " ".join(parts)


class Server:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.tok = WordTokenizer()
        self.started = 0
        self.inflight = 0  # streams between their head and their last token
        # What really happened, per streamed request: when its head was read and when each
        # token chunk was written (the server's own clock). A loaded machine can make the
        # server late; the fidelity tests compare the client with these, not with hopes.
        self.timings: list[dict[str, Any]] = []
        #: HOSTILE modes: bytes of endless answers written, requests seen
        self.hostile_bytes = 0
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
                if length > MAX_BODY:
                    return
                body = await reader.readexactly(length) if length else b""
                keep = await self.route(method, path, body, arrived, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            return
        finally:
            writer.close()

    def log_request(self, method: str, path: str, body: bytes) -> None:
        line = f"{method} {path}"
        if method == "POST" and path in ("/v1/chat/completions", "/v1/completions"):
            req = json.loads(body)
            prompt = chat_text(req["messages"]) if "messages" in req else req.get("prompt")
            line += (f" max_tokens={req.get('max_completion_tokens') or req.get('max_tokens')}"
                     f" prompt={json.dumps(prompt)}")
        with open(self.args.request_log, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def send_json(self, writer: asyncio.StreamWriter, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}.get(status, "X")
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode() + data
        )

    async def endless(self, writer: asyncio.StreamWriter, head: bytes, piece: bytes,
                      total: int | None = None) -> bool:
        """HOSTILE: ``head`` then ``piece`` over and over (up to ``total`` bytes, or until
        the client hangs up); what was written is counted for ``/hostile-stats``."""
        writer.write(head)
        written = 0
        try:
            while total is None or written < total:
                writer.write(piece)
                await writer.drain()
                written += len(piece)
                self.hostile_bytes += len(piece)
        except ConnectionError:
            pass
        return False

    async def route(self, method: str, path: str, body: bytes, arrived: float,
                    writer: asyncio.StreamWriter) -> bool:
        if self.args.request_log:
            self.log_request(method, path, body)
        hostile = self.args.hostile
        if path == "/hostile-stats":
            self.send_json(writer, 200, {"bytes": self.hostile_bytes,
                                         "requests": self.requests})
            await writer.drain()
            return True
        self.requests += 1
        if hostile == "redirect":
            writer.write(f"HTTP/1.1 {self.args.redirect_code} Redirect\r\nLocation: "
                         f"{self.args.redirect_to}{path}\r\nContent-Length: 0\r\n\r\n".encode())
            await writer.drain()
            return True
        if hostile == "huge-metrics" and method == "GET" and path == "/metrics":
            return await self.endless(
                writer, b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n",
                b"vllm:num_requests_running 1\n" * 40_000)
        if method == "GET" and path == "/v1/models":
            model = MODEL + ("\x1b]0;pwned\x07\x1b[2J\x9b1m" if hostile == "escapes" else "")
            self.send_json(writer, 200, {"object": "list", "data": [{"id": model, "root": model}]})
        elif method == "GET" and path == "/timings":
            self.send_json(writer, 200, self.timings)
            self.timings = []
        elif method == "GET" and path == "/health":
            self.send_json(writer, 200, {})
        elif method == "POST" and path == "/tokenize" and hostile == "bad-tokenize":
            self.send_json(writer, 200, {"count": "many", "tokens": "lots"})
        elif method == "POST" and path == "/tokenize":
            req = json.loads(body)
            if "messages" in req:
                ids = self.tok.encode(chat_text(req["messages"]), False)
                count = len(ids) + CHAT_OVERHEAD
            else:
                ids = self.tok.encode(req["prompt"], bool(req.get("add_special_tokens", True)))
                count = len(ids)
            self.send_json(writer, 200, {"count": count, "tokens": ids, "max_model_len": 4096})
        elif method == "POST" and path == "/detokenize":
            req = json.loads(body)
            self.send_json(writer, 200, {"prompt": self.tok.decode(req["tokens"])})
        elif method == "POST" and path in ("/v1/chat/completions", "/v1/completions"):
            await self.stream(path, json.loads(body), arrived, writer)
        else:
            self.send_json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
        await writer.drain()
        return True

    async def stream(self, path: str, req: dict[str, Any], arrived: float,
                     writer: asyncio.StreamWriter) -> None:
        a = self.args
        self.started += 1
        if a.die_after and self.started > a.die_after:
            os._exit(3)  # the server "crashes": every connection drops at once
        if a.fail_every and self.started % a.fail_every == 0:
            self.send_json(writer, 500, {"error": {"message": "fake failure (--fail-every)"}})
            return
        if a.hostile == "huge-error":
            size = 256 * 1024 * 1024
            await self.endless(writer, b"HTTP/1.1 500 Internal Server Error\r\n"
                               b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n"
                               % size, b"x" * (1 << 20), size)
            writer.close()
            return
        if a.hostile == "endless-event":
            await self.endless(writer, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream"
                               b"\r\n\r\ndata: {\"x\": \"", b"a" * (1 << 20))
            writer.close()
            return
        chat = path.endswith("chat/completions")
        n = a.tokens or int(req.get("max_completion_tokens") or req.get("max_tokens") or 16)
        if chat:
            prompt_tokens = len(self.tok.encode(chat_text(req["messages"]), False)) + CHAT_OVERHEAD
        elif isinstance(req.get("prompt"), list):
            prompt_tokens = len(req["prompt"])
        else:
            prompt_tokens = len(self.tok.encode(str(req.get("prompt", "")), True))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        kind = "chat.completion.chunk" if chat else "text_completion"

        def event(obj: dict[str, Any]) -> bytes:
            data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
            return b"%x\r\n%s\r\n" % (len(data), data)

        # --message-log: each request's text is its own, so a reply can be traced
        piece = f" r{self.requests}" if a.message_log else " tok"

        def token_chunk(k: int) -> bytes:
            if chat:
                delta: dict[str, Any] = {"content": piece}
                if k == 0:
                    delta["role"] = "assistant"
                choice: dict[str, Any] = {"index": 0, "delta": delta}
            else:
                choice = {"index": 0, "text": piece}
            choice["finish_reason"] = "length" if k == n - 1 else None
            return event({"id": "cmpl-fake", "object": kind, "created": 0, "model": MODEL,
                          "choices": [choice]})

        middle = token_chunk(1) if n > 2 else b""
        ttft, gap = a.ttft_ms / 1000.0, a.itl_ms * tuned_factor(a) / 1000.0
        slope = a.itl_per_inflight_ms / 1000.0
        free = a.full_speed_streams
        writes: list[float] = []
        if not a.fast:
            self.timings.append({"arrived": arrived, "writes": writes})
        due = arrived + ttft
        self.inflight += 1
        try:
            for k in range(n):
                if not a.fast:
                    delay = due - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    writes.append(time.perf_counter())
                    # the next gap, as its start sees the load
                    due += gap + slope * max(0, self.inflight - free)
                writer.write(middle if 0 < k < n - 1 else token_chunk(k))
                await writer.drain()
        finally:
            self.inflight -= 1
        if a.message_log and chat:
            with open(a.message_log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"messages": req["messages"], "reply": piece * n}) + "\n")
        if a.hostile == "deep-json":
            nested = b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
            writer.write(b"%x\r\n%s\r\n" % (len(nested), nested))
        usage: dict[str, Any]
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                 "total_tokens": prompt_tokens + n,
                 "prompt_tokens_details": {"cached_tokens": a.cached_tokens},
                 "completion_tokens_details": {"reasoning_tokens": a.reasoning_tokens}}
        if a.hostile == "bad-usage":
            usage["completion_tokens"] = "lots"
        writer.write(event({"id": "cmpl-fake", "object": kind, "created": 0, "model": MODEL,
                            "choices": [], "usage": usage}))
        data = b"data: [DONE]\n\n"
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft-ms", type=float, default=100.0)
    p.add_argument("--itl-ms", type=float, default=20.0)
    p.add_argument("--tokens", type=int, default=0, help="tokens per response (0: max_tokens)")
    p.add_argument("--fast", action="store_true", help="no pauses: as fast as it can")
    p.add_argument("--cached-tokens", type=int, default=0)
    p.add_argument("--reasoning-tokens", type=int, default=0)
    p.add_argument("--fail-every", type=int, default=0)
    p.add_argument("--die-after", type=int, default=0)
    p.add_argument("--hostile", choices=["bad-usage", "bad-tokenize", "deep-json",
                                         "endless-event",
                                         "huge-error", "huge-metrics", "redirect", "escapes"],
                   help="HOSTILE behaviour (see the module docstring)")
    p.add_argument("--redirect-to", default="http://elsewhere.invalid:9",
                   help="--hostile redirect: where to")
    p.add_argument("--redirect-code", type=int, default=307, help="--hostile redirect: 3xx")
    p.add_argument("--exit-after-log", action="store_true",
                   help="--hostile escapes: print the escape-laden log line, then exit 3")
    p.add_argument("--request-log", default="", help="append each request to this file")
    p.add_argument("--message-log", default="",
                   help="append each chat request's messages and the reply text it was sent "
                        "(one JSON line; each request's text is then its own: ' r<N>')")
    p.add_argument("--bind-after", default="",
                   help="wait until this file exists before binding the port")
    p.add_argument("--itl-per-inflight-ms", type=float, default=0.0)
    p.add_argument("--full-speed-streams", type=int, default=1,
                   help="streams in flight that do not slow the gaps (--itl-per-inflight-ms)")
    # the tune tests' known answer: vLLM's two batch limits slow the token gaps by
    # tuned_factor (1 at the optimum, TUNE_OPTIMUM); left out, they change nothing
    p.add_argument("--max-num-seqs", type=int, default=0)
    p.add_argument("--max-num-batched-tokens", type=int, default=0)
    return p.parse_args(argv)


#: (max-num-seqs, max-num-batched-tokens) where the token gaps are shortest
TUNE_OPTIMUM = (16, 2048)


def known_factor(seqs: int, tokens: int) -> float:
    """How much longer than --itl-ms each token gap is for these two limits: a bowl in
    log₂ of each, 1.0 at :data:`TUNE_OPTIMUM`, ×1.25 one doubling away on one axis."""
    import math

    s0, t0 = TUNE_OPTIMUM
    return 1.0 + 0.25 * (math.log2(seqs / s0) ** 2 + math.log2(tokens / t0) ** 2)


def tuned_factor(a: argparse.Namespace) -> float:
    if a.max_num_seqs <= 0 or a.max_num_batched_tokens <= 0:
        return 1.0
    return known_factor(a.max_num_seqs, a.max_num_batched_tokens)


async def main(argv: list[str]) -> None:
    server = Server(parse(argv))
    if server.args.bind_after:  # a slow load: the port is bound only after it
        print("INFO loading the fake model", flush=True)
        while not os.path.exists(server.args.bind_after):
            await asyncio.sleep(0.05)
    srv = await asyncio.start_server(server.handle, "127.0.0.1", server.args.port,
                                     backlog=1024)
    port = srv.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    if server.args.hostile == "escapes":
        print("INFO loading \x1b]0;pwned\x07model\x1b[2J\x1b[31m red \x9b1m", flush=True)
        if server.args.exit_after_log:
            os._exit(3)
    print("INFO:     Application startup complete.", flush=True)
    async with srv:
        await srv.serve_forever()


@contextlib.contextmanager
def spawn(*args: str) -> Iterator[str]:
    """Run the fake server in its own process (its timing must not share the test's
    event loop); yields its base URL and stops it afterwards."""
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(sys.argv[1:]))
