"""Run levels: warm-up, concurrency limit, arrival process, stop → partial results.

One level follows ``vllm bench serve``'s ``benchmark()``: arrival times are drawn up
front (gamma intervals with shape ``burstiness`` and mean ``1/rate``, rescaled so that
N requests take N/rate seconds — vLLM's normalisation), each arrival creates a task
that waits for the concurrency semaphore and then streams its request; the level's
duration runs from the first arrival to the last response. With ``--duration S``
requests keep arriving (cycling through the prompts) until S seconds have passed,
then the level waits for those in flight.

Stopping: set ``stop`` (the CLI does it on Ctrl-C or when the server dies): no new
requests are sent, the ones in flight are cancelled, and the level comes back
``partial`` with the results that finished. Cancelling ``run_level`` itself cancels
every child task before re-raising, so nothing keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import aiohttp

from variantctl.bench import arrival, datasets, metrics, prompts, workloads
from variantctl.bench.client import (
    PreparedRequest,
    build_body,
    make_session,
    read_bounded,
    redirect_detail,
    send,
)
from variantctl.bench.model import LevelResult, RequestResult, WarmupResult
from variantctl.benchparams import BenchParams, parse_warmup
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode

PROGRESS_INTERVAL_S = 0.5
#: the largest /v1/models answer read (a real one lists a model and its adapters: KiB)
MAX_MODELS_BODY = 4 * 1024 * 1024
DURATION_PROMPTS = 64  # distinct prompts cycled through in --duration mode
WARMUP_MIN, WARMUP_MAX = 50, 100  # the second seed: 50-100 prompts...
WARMUP_SHARE = 0.5  # ...at 25-50 % of the measured concurrency


@dataclass(frozen=True)
class LiveProgress:
    concurrency: int
    done: int
    total: int | None
    errors: int
    tokens_per_s_now: float
    elapsed_s: float


def _api(base_url: str) -> str:
    return base_url.rstrip("/")


async def probe(base_url: str, timeout: float) -> str:
    """The served model's name from ``/v1/models``; a clear error when not reachable/ready.

    Redirects are not followed (the numbers would be another server's, reported as
    this URL's) and the answer is read up to :data:`MAX_MODELS_BODY` only."""
    url = _api(base_url) + "/v1/models"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s,
            s.get(url, allow_redirects=False) as resp,
        ):
            if 300 <= resp.status < 400:
                raise VariantctlError(
                    f"server at {base_url}: GET /v1/models answered HTTP {resp.status}: "
                    f"{redirect_detail(resp)}",
                    hint="give the server's own address with --url",
                    exit_code=ExitCode.FAILED)
            raw, more = await read_bounded(resp.content, MAX_MODELS_BODY)
            if resp.status != 200:
                body = " ".join(raw[:200].decode("utf-8", "replace").split())
                raise VariantctlError(
                    f"server at {base_url} is not ready: GET /v1/models answered HTTP "
                    f"{resp.status}" + (f" ({body})" if body else ""),
                    exit_code=ExitCode.FAILED)
            if more:
                raise VariantctlError(
                    f"server at {base_url}: GET /v1/models answered more than "
                    f"{MAX_MODELS_BODY // (1024 * 1024)} MiB (not read further)",
                    exit_code=ExitCode.FAILED)
            data = json.loads(raw)
    except asyncio.TimeoutError:
        raise VariantctlError(f"server at {base_url} did not answer within {timeout:g} s",
                              exit_code=ExitCode.UNREACHABLE) from None
    except aiohttp.ClientConnectorError as exc:
        raise VariantctlError(f"no server at {base_url}: {exc.os_error or exc}",
                              exit_code=ExitCode.UNREACHABLE) from None
    except (aiohttp.ClientError, ValueError, RecursionError) as exc:
        why = "its JSON is nested too deeply" if isinstance(exc, RecursionError) else exc
        raise VariantctlError(f"server at {base_url} is not an OpenAI-compatible server: "
                              f"{why}", exit_code=ExitCode.FAILED) from None
    models = data.get("data") if isinstance(data, dict) else None
    if (not models or not isinstance(models, list) or not isinstance(models[0], dict)
            or not isinstance(models[0].get("id"), str) or not models[0]["id"]):
        raise VariantctlError(f"server at {base_url} serves no model (GET /v1/models: "
                              f"{raw[:120].decode('utf-8', 'replace')})",
                              exit_code=ExitCode.FAILED)
    return str(models[0]["id"])


async def prepare(
    base_url: str, params: BenchParams, n: int, *, model: str
) -> list[PreparedRequest]:
    """``n`` request bodies for ``params`` (random prompts cost server round trips)."""
    base = _api(base_url)
    spec = datasets.parse_spec(params.prompt)
    if spec is not None:
        async with make_session(60.0, 16) as session:
            tok = prompts.Tokenizer(session, base, model)
            plist = await datasets.prompts_for(
                spec, tok, n=n, endpoint=params.endpoint, seed=params.seed,
                output_len=params.output_len if params.output_len_set else None,
                requests=params.requests, trace_speed=params.trace_speed)
        if spec.kind != "trace":  # a trace is replayed once, in order, at its times
            plist = [plist[i % len(plist)] for i in range(n)]
    elif params.prompt == "random":
        assert params.input_len is not None  # BenchParams guarantees it
        async with make_session(60.0, 16) as session:
            tok = prompts.Tokenizer(session, base, model)
            plist = await prompts.random_prompts(
                tok, n=n, input_len=params.input_len, endpoint=params.endpoint,
                seed=params.seed)
    elif params.prompt in ("short", "tools"):
        plist = [prompts.builtin(params.prompt, params.endpoint, i) for i in range(n)]
    else:
        loaded = prompts.load_file(Path(params.prompt))
        plist = [loaded[i % len(loaded)] for i in range(n)]
    if params.prefix_len is not None:  # --prefix-len/--prefixes: shared prefixes first
        async with make_session(60.0, 16) as session:
            heads = await workloads.shared_prefixes(
                # only the prefixes the level's requests use are built
                prompts.Tokenizer(session, base, model), k=min(params.prefixes, len(plist)),
                n_tokens=params.prefix_len, seed=params.seed)
        plist = [workloads.with_prefix(p, heads[i % len(heads)]) for i, p in enumerate(plist)]
    turns: list[workloads.Turn | None] = [None] * len(plist)
    if params.turns > 1:  # --turns: conversations carrying their history
        try:
            pairs = workloads.conversations(plist, params.turns)
        except ValueError as exc:
            raise VariantctlError(str(exc), exit_code=ExitCode.USAGE) from None
        plist, turns = [p for p, _ in pairs], [t for _, t in pairs]
    out: list[PreparedRequest] = []
    for i, p in enumerate(plist):
        content = p.content
        if params.endpoint == "completions" and isinstance(content, list) and any(
                isinstance(c, dict) for c in content):
            raise VariantctlError(
                f"{params.prompt}: chat messages cannot be sent to /v1/completions "
                "(use --endpoint chat)", exit_code=ExitCode.USAGE)
        out.append(build_body(
            endpoint=params.endpoint, model=model, prompt=content,
            output_len=p.output_len or params.output_len, ignore_eos=params.ignore_eos,
            temperature=params.temperature,
            # A per-request sampling seed makes sampled runs repeatable; greedy needs none.
            seed=params.seed + i if params.temperature > 0 else None,
            extra=p.extra, at_s=p.at_s))
        t = turns[i]
        if t is not None:
            out[-1] = dataclasses.replace(out[-1], turn=(t.conversation, t.turn, t.last))
    return out


def arrival_offsets(n: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """vLLM's ``get_request`` schedule at a constant rate (:func:`arrival.offsets`)."""
    return arrival.offsets(arrival.Profile("concurrency", rate=rate), n, burstiness, seed)


async def _preconnect(session: aiohttp.ClientSession, base: str, n: int) -> None:
    """Open ``n`` keep-alive connections before the clock starts.

    Otherwise the first ``n`` requests carry TCP setup and aiohttp's first-use costs in
    their TTFT (5 ms measured on loopback) — the server's latency is what is measured.
    Failures are ignored here: the requests themselves report them.
    """

    async def one() -> None:
        try:
            async with session.get(base + "/v1/models", allow_redirects=False) as resp:
                await read_bounded(resp.content, MAX_MODELS_BODY)
        except (aiohttp.ClientError, asyncio.TimeoutError):
            pass

    await asyncio.gather(*(one() for _ in range(n)))


def warmup_plan(params: BenchParams, concurrency: int) -> tuple[int, int]:
    """(requests, concurrency) of the warm-up before a level; (0, 0) when off.

    ``auto`` is the second seed's recipe: same lengths as the measurement, half its
    concurrency, 50-100 requests — but never more than the level itself sends.
    """
    mode = parse_warmup(params.warmup)
    if mode == "off" or mode == 0:
        return 0, 0
    warm_c = max(1, math.ceil(concurrency * WARMUP_SHARE))
    if isinstance(mode, int):
        return mode, min(warm_c, mode)
    n = min(max(WARMUP_MIN, 2 * warm_c), WARMUP_MAX)
    if params.requests_per_level is not None:
        n = min(n, params.requests_per_level)
    return n, min(warm_c, n)


async def run_warmup(
    base_url: str, params: BenchParams, concurrency: int, *,
    model: str | None = None, prepared: Sequence[PreparedRequest] | None = None,
    stop: asyncio.Event | None = None,
    session: aiohttp.ClientSession | None = None,
) -> WarmupResult:
    """Warm the server up for a level at ``concurrency`` (results discarded but counted).

    Setting ``stop`` ends the warm-up at once (its requests in flight are cancelled).
    ``run_level`` passes its own ``session``: the warm-up then also warms the level's
    connections (as ``vllm bench serve``'s warm-ups do), and a fresh TCP connection's
    first streams — measurably burstier on loopback — are not measured.
    """
    n, warm_c = warmup_plan(params, concurrency)
    if n == 0:
        return WarmupResult(requests=0, concurrency=0, failed=0, duration_s=0.0)
    model = model or params.model or await probe(base_url, 10.0)
    reqs = list(prepared) if prepared else await prepare(base_url, params, n, model=model)
    t0 = time.perf_counter()
    sem = asyncio.Semaphore(warm_c)
    async with contextlib.AsyncExitStack() as stack:
        if session is None:
            session = await stack.enter_async_context(make_session(params.timeout_s, warm_c))
        results: list[RequestResult] = []

        async def one(i: int) -> None:
            async with sem:
                assert session is not None  # set above; mypy cannot see it in here
                results.append(await send(session, _api(base_url), reqs[i % len(reqs)],
                                          index=i, level_t0=t0))

        batch: asyncio.Future[list[None]] = asyncio.ensure_future(
            asyncio.gather(*(one(i) for i in range(n))))
        stopper: asyncio.Future[Any] = asyncio.ensure_future(
            (stop or asyncio.Event()).wait())
        try:
            await asyncio.wait([batch, stopper], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (batch, stopper):
                t.cancel()
            outcome = await asyncio.gather(batch, stopper, return_exceptions=True)
    lost = outcome[0] if isinstance(outcome[0], Exception) else None
    if lost is not None or (len(results) != n and not (stop and stop.is_set())):
        raise _unaccounted(f"the warm-up at concurrency {warm_c}", n, len(results), 0, lost)
    errors = metrics.error_counts(results)
    return WarmupResult(requests=len(results), concurrency=warm_c,
                        failed=sum(errors.values()),
                        duration_s=time.perf_counter() - t0,
                        errors=MappingProxyType(errors))


async def run_level(
    base_url: str,
    params: BenchParams,
    concurrency: int,
    *,
    on_progress: Callable[[LiveProgress], None] | None = None,
    stop: asyncio.Event | None = None,
    model: str | None = None,
    prepared: Sequence[PreparedRequest] | None = None,
    warmup: bool = True,
    repeat: int = 0,
    on_start: Callable[[], None] | None = None,
    profile: arrival.Profile | None = None,
) -> LevelResult:
    """One level at ``concurrency``: warm-up (per ``params.warmup``), then the measurement.
    ``on_start`` is called the moment the level's clock starts (its requests' ``start_s``
    count from there), so a caller can place its own samples on the level's time axis.
    ``profile`` is the level's arrival profile (default: the params' constant rate)."""
    base = _api(base_url)
    if profile is None:
        profile = arrival.Profile("concurrency", rate=params.request_rate)
    model = model or params.model or await probe(base_url, 10.0)
    total = params.requests_per_level
    n_prompts = total if total is not None else DURATION_PROMPTS
    reqs = list(prepared) if prepared else await prepare(base, params, n_prompts, model=model)
    #: a trace replays its own arrival times, each request once
    trace = [r.at_s for r in reqs if r.at_s is not None]
    if trace:
        total = len(trace)
    warm = None
    stop = stop or asyncio.Event()
    results: list[RequestResult] = []
    tasks: set[asyncio.Task[RequestResult | None]] = set()
    live = [0]  # content chunks of finished requests (for "tokens/s now")
    inflight: dict[int, list[float]] = {}  # chunk times of requests still streaming
    sem = asyncio.Semaphore(concurrency)
    partial_reason: str | None = None
    #: requests handed to the client, and those of them cancelled in flight by a stop:
    #: every other one must come back as a result (completed or failed with a reason)
    sent, cancelled = [0], [0]

    async with make_session(params.timeout_s, concurrency) as session:
        if warmup and warmup_plan(params, concurrency)[0]:
            warm = await run_warmup(base, params, concurrency, model=model, prepared=reqs,
                                    stop=stop, session=session)
        await _preconnect(session, base, concurrency)
        t0 = time.perf_counter()
        if on_start is not None:
            on_start()

        gate = asyncio.Semaphore(concurrency)  # --duration at an unlimited rate

        async def one(i: int, due: float, gated: bool) -> RequestResult | None:
            if reqs[i % len(reqs)].turn is not None:
                return await turn_of(i, due)
            try:
                async with sem:
                    if params.duration is not None and time.perf_counter() - t0 >= (
                            params.duration):
                        return None  # became due in time but got no slot before the end
                    inflight[i] = []
                    sent[0] += 1
                    try:
                        r = await send(session, base, reqs[i % len(reqs)], index=i,
                                       level_t0=t0, queued_at=due, offsets=inflight[i])
                    except asyncio.CancelledError:
                        cancelled[0] += 1  # stopped while in flight: said, not lost
                        raise
            finally:
                inflight.pop(i, None)
                if gated:
                    gate.release()
            live[0] += len(r.chunk_offsets_s)
            results.append(r)
            return r

        #: ``--turns``: set when request i ended (its conversation's next turn may go)
        ended_at = [asyncio.Event() for _ in reqs] if reqs[0].turn is not None else []
        #: ``--turns``: conversation -> the replies of its turns so far (open ones only)
        replies: dict[int, list[str]] = {}

        async def turn_of(i: int, due: float) -> RequestResult | None:
            """One turn: after the previous turn of its conversation ended, in the slot its
            conversation took at its first turn (released after its last)."""
            req = reqs[i]
            assert req.turn is not None
            conv, k, last = req.turn
            if k == 0:
                await sem.acquire()
            else:
                await ended_at[i - 1].wait()
            reply: list[str] = []
            try:
                if stop.is_set():
                    return None
                inflight[i] = []
                sent[0] += 1
                if k > 0:  # the history: what the server said on the earlier turns
                    req = dataclasses.replace(req, body=workloads.with_replies(
                        req.body, replies.get(conv, ())))
                try:
                    r = await send(session, base, req, index=i, level_t0=t0, queued_at=due,
                                   offsets=inflight[i], reply=reply)
                except asyncio.CancelledError:
                    cancelled[0] += 1
                    raise
            finally:
                inflight.pop(i, None)
                if last:
                    replies.pop(conv, None)  # held while the conversation is open only
                else:
                    replies.setdefault(conv, []).append("".join(reply))
                ended_at[i].set()
                if last:
                    sem.release()
            live[0] += len(r.chunk_offsets_s)
            results.append(r)
            return r

        async def issue() -> None:
            if trace:
                schedule = trace
            elif total is not None:
                schedule = arrival.offsets(profile, total, params.burstiness, params.seed)
            else:
                schedule = []
            rng = random.Random(params.seed)
            i = 0
            next_at = 0.0
            while not stop.is_set():
                if total is not None:
                    if i >= total:
                        return
                    next_at = schedule[i]
                elif i > 0:
                    next_at += arrival.next_gap(profile, i, params.burstiness, rng)
                assert params.duration is not None or total is not None
                if params.duration is not None and next_at >= params.duration:
                    return
                delay = t0 + next_at - time.perf_counter()
                if delay > 0:
                    try:
                        await asyncio.wait_for(stop.wait(), delay)
                        return
                    except asyncio.TimeoutError:
                        pass
                gated = (params.duration is not None and math.isinf(profile.rate)
                         and not trace)
                if gated:
                    # Unlimited rate for a duration: send as slots free up, instead of
                    # an unbounded backlog of waiting tasks.
                    await gate.acquire()
                    if params.duration is not None and (
                            time.perf_counter() - t0 >= params.duration or stop.is_set()):
                        gate.release()
                        return
                task = asyncio.create_task(one(i, time.perf_counter(), gated))
                tasks.add(task)
                i += 1

        async def ticker() -> None:
            last_t, last_n = t0, 0
            while True:
                await asyncio.sleep(PROGRESS_INTERVAL_S)
                now = time.perf_counter()
                seen = live[0] + sum(len(o) for o in inflight.values())
                rate = (seen - last_n) / (now - last_t) if now > last_t else 0.0
                last_t, last_n = now, seen
                if on_progress:
                    on_progress(LiveProgress(
                        concurrency=concurrency, done=len(results), total=total,
                        errors=sum(1 for r in results if not r.ok), tokens_per_s_now=rate,
                        elapsed_s=now - t0))

        tick = asyncio.create_task(ticker())
        issuer = asyncio.create_task(issue())
        stopper = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({issuer, stopper}, return_when=asyncio.FIRST_COMPLETED)
            failure = issuer.exception() if issuer.done() and not issuer.cancelled() else None
            if failure is not None:
                raise failure  # a bug in the issuer, not a result
            while tasks and not stop.is_set():
                pending = {t for t in tasks if not t.done()}
                if not pending:
                    break
                await asyncio.wait(pending | {stopper}, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                partial_reason = "stopped"
        finally:
            # No task outlives the level, whether it ended, was stopped or cancelled.
            children = [tick, issuer, stopper, *tasks]
            for t in children:
                t.cancel()
            ended = await asyncio.gather(*children, return_exceptions=True)
    lost = next((e for e in ended[3:] if isinstance(e, Exception)), None)
    if lost is not None or sent[0] != len(results) + cancelled[0]:
        raise _unaccounted(f"the level at concurrency {concurrency}", sent[0], len(results),
                           cancelled[0], lost)
    duration = time.perf_counter() - t0
    if results:
        # vLLM's benchmark_duration ends when the last response is in, not at teardown.
        duration = max(r.start_s + r.latency_s for r in results)
    done = tuple(sorted(results, key=lambda r: r.index))
    unfinished = sum(1 for t in tasks if t.cancelled())
    if partial_reason and unfinished:
        partial_reason = f"stopped: {unfinished} request(s) in flight were cancelled"
    level_metrics = metrics.compute(done, concurrency=concurrency, duration_s=duration,
                                    goodput=params.goodput)
    if on_progress:
        on_progress(LiveProgress(concurrency=concurrency, done=len(done), total=total,
                                 errors=level_metrics.failed, tokens_per_s_now=0.0,
                                 elapsed_s=duration))
    return LevelResult(
        concurrency=concurrency,
        metrics=level_metrics,
        requests=done,
        errors=MappingProxyType(metrics.error_counts(done)),
        partial=partial_reason is not None,
        partial_reason=partial_reason,
        repeat=repeat,
        warmup=warm,
        profile=profile if not trace else arrival.Profile("trace",
                                                          trace_speed=params.trace_speed),
    )


def _unaccounted(what: str, sent: int, ended: int, cancelled: int,
                 exc: BaseException | None) -> VariantctlError:
    """Requests that ended neither completed nor failed: the client lost them (a bug),
    and a level that silently counts fewer requests than it sent would lie."""
    lost = sent - ended - cancelled
    why = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    return VariantctlError(
        f"{what}: {sent} request(s) sent, {ended} ended completed or failed"
        + (f", {cancelled} cancelled in flight" if cancelled else "")
        + f" — {max(lost, 1)} unaccounted for{why}",
        hint="this is a bug in variantctl's client; its results are not kept",
        exit_code=ExitCode.INTERNAL)


async def run_ladder(
    base_url: str,
    params: BenchParams,
    *,
    on_progress: Callable[[LiveProgress], None] | None = None,
    on_level: Callable[[LevelResult], None] | None = None,
    stop: asyncio.Event | None = None,
    model: str | None = None,
) -> tuple[LevelResult, ...]:
    """Every level of ``params.concurrency``, ``params.repeat`` times, one after another.

    Prompts are prepared once (random prompts cost server round trips); a stop ends
    the ladder after the level it interrupted.
    """
    stop = stop or asyncio.Event()
    model = model or params.model or await probe(base_url, 10.0)
    n = params.requests_per_level or DURATION_PROMPTS
    reqs = await prepare(base_url, params, n, model=model)
    levels: list[LevelResult] = []
    for rep in range(params.repeat):
        for c in params.concurrency:
            level = await run_level(base_url, params, c, on_progress=on_progress, stop=stop,
                                    model=model, prepared=reqs, repeat=rep)
            levels.append(level)
            if on_level:
                on_level(level)
            if stop.is_set():
                return tuple(levels)
    return tuple(levels)
