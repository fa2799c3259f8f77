"""One ``variantctl bench`` run against one server: find it, reach it, measure, store.

EFFECTFUL glue between the pieces (the CLI stays thin and does only the printing
and the exit code):

- :func:`find_server` — the running server record of a variant on its host,
  with a clear error naming the variant, the host and its state when it is not
  running or not ready;
- :func:`measure` — the ladder: the model probe, the GPU-monitor lookup and the
  prompts once, then for each level (and each ``--repeat``) the caller's
  :class:`LadderHooks` ``before_level`` (the prefix-cache policy, progress), the
  warm-up, the level with the GPU sampler (a thread querying the host's monitor
  through the Target) and the ``/metrics`` scraper (a task on the same event loop)
  beside it, a watchdog that stops the level when the server process dies (partial
  results kept, the log classified), and ``after_level`` (stop rules). ``bench``
  runs it with :class:`ColdLevels`; a sweep runs the very same ladder with its own
  hooks built on :class:`ColdLevels` (sweeps/executor.py), so a number from either
  means the same thing;
- storing the result is :mod:`variantctl.bench.step`'s (the one measure-and-record step).

Ctrl-C stops the level in progress (the runner returns what finished, marked
partial) and ends the ladder; a second Ctrl-C aborts at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar
from urllib.parse import urlsplit

from variantctl.bench import arrival, search
from variantctl.bench.gpu import GpuSampler, GpuSummary, find_monitor, not_available
from variantctl.bench.model import BenchResult, LevelResult
from variantctl.bench.model import Target as BenchTarget
from variantctl.bench.promscrape import MetricsScraper
from variantctl.benchparams import BenchParams
from variantctl.errors import NotFoundError, TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.jsontypes import JsonObject
from variantctl.logs.model import Catalog
from variantctl.runs.record import ServerRecord
from variantctl.targets.base import Target

if TYPE_CHECKING:
    from variantctl.bench.client import PreparedRequest
    from variantctl.bench.model import WarmupResult
    from variantctl.bench.profile import Collector
    from variantctl.bench.runner import LiveProgress

T = TypeVar("T")

#: how often the watchdog looks at the server process
WATCH_INTERVAL_S = 1.0
#: lines of the server log shown when the server died during a level
LOG_TAIL_LINES = 15


@dataclass(frozen=True)
class ServerDeath:
    """The server process died during a level: what its log says."""

    variant: str
    #: the server's pid (None for a SLURM job: :attr:`job`)
    pid: int | None
    level: int
    kind: str | None = None
    signature: str | None = None
    title: str = ""
    message: str = ""
    remediation: str = ""
    tail: tuple[str, ...] = ()
    log: str | None = None
    #: the SLURM job id of a server that ran as one
    job: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = dataclasses.asdict(self) | {"tail": list(self.tail)}
        if self.job is None:
            del out["job"]  # a process's death: as it always was
        return out


@dataclass(frozen=True)
class LevelStep:
    """Where the ladder is: the ``index``-th level it runs (0-based, over every repeat,
    in ladder order: repeats × levels), at ``concurrency``, in repeat ``repeat``."""

    index: int
    concurrency: int
    repeat: int
    base_url: str


class LadderHooks(Protocol):
    """What the caller of a ladder decides between its levels (called from a worker
    thread: blocking I/O is fine). An exception raised by a hook ends the ladder and
    propagates out of :func:`measure`."""

    def before_level(self, step: LevelStep) -> None:
        """Before the level's warm-up: the cache policy, progress."""

    def after_level(self, step: LevelStep, level: LevelResult) -> str | None:
        """After a level that ended normally (not by a death or a stop): a reason to
        stop the ladder here (the levels left are not run), else None."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The server is not trusted: a 3xx is its answer, never followed elsewhere."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def reset_prefix_cache(base_url: str) -> bool:
    """``POST /reset_prefix_cache`` (vLLM's dev endpoint): True when the server did it;
    a server without it (404/405) is fine, the next level just starts warm. A redirect
    is not followed (it counts as not done)."""
    req = urllib.request.Request(f"{base_url}/reset_prefix_cache", data=b"", method="POST")
    try:
        with urllib.request.build_opener(_NoRedirect).open(req, timeout=10) as resp:
            return bool(200 <= resp.status < 300)
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ColdLevels:
    """The one cache policy of a ladder, ``bench``'s and a sweep's alike: the server's
    prefix cache is reset (``POST /reset_prefix_cache``, where offered) before every
    level but the first — and before the first too with ``reset_first`` (a server
    that has served requests already) — so no level is measured on the previous
    level's cached prefixes. ``resets`` counts the resets the server did."""

    def __init__(self, *, reset_first: bool = False) -> None:
        self.reset_first = reset_first
        self.resets = 0

    def before_level(self, step: LevelStep) -> None:
        if (step.index or self.reset_first) and reset_prefix_cache(step.base_url):
            self.resets += 1

    def after_level(self, step: LevelStep, level: LevelResult) -> str | None:
        return None


@dataclass(frozen=True)
class RunOutcome:
    """What one target's run produced (the CLI renders it and picks the exit code).

    Built once: :func:`measure` gives the run's own outcome; the CLI adds where it was
    stored and the ``--profile`` breakdowns with :func:`dataclasses.replace`."""

    label: str
    result: BenchResult
    stored: Path | None = None
    death: ServerDeath | None = None
    interrupted: bool = False
    #: ``bench --profile``: one breakdown per level (variantctl.bench.profile)
    profile: tuple[JsonObject, ...] | None = None
    #: why the measured result could not be stored (a full disk): the result is still
    #: printed (and in --json), this error after it, and the command exits 1
    store_error: VariantctlError | None = None

    @property
    def failed_levels(self) -> list[LevelResult]:
        return [lv for lv in self.result.levels if lv.all_failed]

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return ExitCode.INTERRUPTED
        if self.death is not None or self.failed_levels or self.store_error is not None:
            return ExitCode.FAILED
        return ExitCode.OK


def find_server(target: Target, host: Host, variant: str) -> ServerRecord:
    """The healthy server of ``variant`` on ``host``, else an error naming its state."""
    from variantctl.launch.launcher import launcher_for
    from variantctl.launch.servers import layout_for, load_record

    record = load_record(target, layout_for(target, host), variant)
    if record is None:
        raise NotFoundError(
            f"{variant} is not running on host {host.name} (no server record)",
            hint=f"variantctl launch {variant} starts it; variantctl ps lists running servers",
        )
    (status,) = launcher_for(host).statuses(target, [record])
    if status.foreign is not None:
        raise VariantctlError(
            f"{variant} on host {host.name}: port {record.port} is served by "
            f"{status.foreign}, not by the server launch started ({record.ident}); "
            "refusing to measure another server", exit_code=ExitCode.CONFLICT,
            hint=f"variantctl stop {variant}, free port {record.port}, then launch again")
    if status.state != "healthy":
        what = {
            "stale": f"its process ({record.ident}) is gone",
            "starting": "it is still starting (not listening yet)",
            "listening": "it listens but /health does not answer",
        }.get(status.state, f"/health answers {status.health}")
        raise VariantctlError(
            f"{variant} on host {host.name} is not ready: {status.state} — {what} "
            f"(port {record.port})",
            hint=f"variantctl watch {variant} waits for it; variantctl logs {variant} shows why"
            if status.state != "stale" else f"variantctl launch {variant} starts it again",
            exit_code=ExitCode.FAILED,
        )
    return record


@contextlib.contextmanager
def reach(target: Target, port: int, address: str = "127.0.0.1") -> Iterator[str]:
    """A base URL of ``address:port`` on the target usable from this process."""
    with target.forward(port, address) as (host, local_port):
        yield f"http://{host}:{local_port}"


def gpu_monitor_for(target: Target | None, host: Host | None) -> tuple[list[str] | None, str]:
    """(monitor argv or None, why not) for the measured host."""
    if target is None:
        return None, "the server's host is not known (--url without --host)"
    try:
        monitor = find_monitor(target, host.gpu_monitor if host else None)
    except VariantctlError as exc:
        return None, exc.message
    if monitor is None:
        name = host.name if host else target.name
        configured = host.gpu_monitor if host else None
        return None, (f"{configured} not found on host {name}" if configured
                      else f"no nvidia-smi or ixsmi on host {name}")
    return monitor, ""


def is_loopback_url(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


class _Watchdog:
    """Checks every second that the server process lives; sets ``stop`` when it died."""

    def __init__(self, target: Target, pid: int | None, stop: asyncio.Event,
                 loop: asyncio.AbstractEventLoop, *, host: Host | None = None,
                 record: ServerRecord | None = None):
        self.target, self.pid, self.stop, self.loop = target, pid, stop, loop
        self.host, self.record = host, record
        self.died = False
        self._quit = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-watchdog", daemon=True)

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._quit.set()
        self._thread.join(30)

    def alive(self) -> bool:
        from variantctl.launch.launcher import launcher_for
        from variantctl.targets.process import is_alive

        try:
            if self.host is not None and self.record is not None:
                # the host's launcher knows what the pid means (a SLURM job id, say)
                return launcher_for(self.host).probe(self.target, self.record,
                                                     health=False).alive
            return self.pid is None or is_alive(self.target, self.pid)
        except TargetError:
            return True  # a hiccup of the connection is not a death

    def _run(self) -> None:
        while not self._quit.wait(WATCH_INTERVAL_S):
            if not self.alive():
                self.died = True
                self.loop.call_soon_threadsafe(self.stop.set)
                return


@dataclass
class Measurement:
    """Where and how to measure one server."""

    label: str
    base_url: str
    params: BenchParams
    #: the host's executor, for GPU sampling and the watchdog (None: --url alone)
    target: Target | None = None
    host: Host | None = None
    record: ServerRecord | None = None
    #: called with (concurrency, LiveProgress) while a level runs
    on_progress: Callable[[LiveProgress], None] | None = None
    #: called when a level (or warm-up) starts/ends, for notes
    on_note: Callable[[str], None] | None = None
    clock: Callable[[], float] = time.monotonic
    #: the signature catalog a dead server's log is classified with (None: not classified)
    signatures: Catalog | None = None
    #: ``bench --profile``: marks and reads the server's profile events per level
    profile: Collector | None = None
    #: between the levels (None: :class:`ColdLevels`, ``bench``'s policy)
    hooks: LadderHooks | None = None


async def measure(m: Measurement, started_at: str) -> RunOutcome:
    """Run the whole ladder (repeats × levels, in :func:`level_order`): model probe,
    GPU-monitor lookup and prompts once, ``m.hooks`` around each level."""
    from variantctl.bench.runner import DURATION_PROMPTS, prepare, probe, warmup_plan

    note = m.on_note or (lambda _text: None)
    hooks: LadderHooks = m.hooks if m.hooks is not None else ColdLevels()
    model = m.params.model or await probe(m.base_url, 30.0)
    params = m.params if m.params.model else dataclasses.replace(m.params, model=model)
    monitor, why_no_gpu = await asyncio.to_thread(gpu_monitor_for, m.target, m.host)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    interrupted = _install_sigint(loop, stop)
    levels: list[LevelResult] = []
    death: ServerDeath | None = None
    #: ``--search``: the probes choose the levels (variantctl.bench.search)
    finder = search.Search(params) if params.search is not None else None
    try:
        # prompts once for the whole ladder (random prompts cost tokenizer round trips)
        prepared = await prepare(m.base_url, params,
                                 params.requests_per_level or DURATION_PROMPTS, model=model)
        stopped_by: str | None = None
        for index, (repeat, probed, planned) in enumerate(level_order(params, levels, finder)):
            concurrency = planned.concurrency
            if stop.is_set():
                break
            step = LevelStep(index, concurrency, repeat, m.base_url)
            await asyncio.to_thread(hooks.before_level, step)
            warm = None
            n_warm, c_warm = warmup_plan(params, concurrency)
            if n_warm:
                note(f"{m.label}: warm-up, {n_warm} requests at concurrency {c_warm}")
                warm = await _until_stopped(
                    _warmup(m.base_url, params, concurrency, model, prepared), stop)
                if stop.is_set():
                    break
            note(f"{m.label}: concurrency {concurrency}"
                 + (f", {planned.profile.label()}"
                    if planned.profile.kind != "concurrency" else "")
                 + _repeat_note(params, repeat))
            if m.profile is not None:
                await asyncio.to_thread(m.profile.mark)
            level, died = await _one_level(m, params, concurrency, model, prepared,
                                           repeat, monitor, why_no_gpu, stop, loop,
                                           profile=planned.profile)
            if m.profile is not None:
                await asyncio.to_thread(m.profile.collect, concurrency, repeat)
            level = dataclasses.replace(level, warmup=warm)
            if died and m.record is not None and m.target is not None:
                level = dataclasses.replace(
                    level, partial=True, partial_reason="server exited"
                    + (f" ({level.partial_reason})" if level.partial_reason else ""))
                death = await asyncio.to_thread(_diagnose, m.target, m.record,
                                                concurrency, m.signatures)
            elif interrupted[0]:
                level = dataclasses.replace(
                    level, partial=True, partial_reason="interrupted"
                    + (f" ({level.partial_reason})" if level.partial_reason else ""))
            levels.append(level)
            if finder is not None and probed is not None and not level.partial:
                finder.record(level, probed)
            if death is not None or stop.is_set():  # no further level or repeat
                break
            stopped_by = await asyncio.to_thread(hooks.after_level, step, level)
            if stopped_by is not None:
                break
    finally:
        _restore_sigint(loop)
    target_info = BenchTarget(url=m.base_url, variant=m.record.variant if m.record else None,
                              host=m.host.name if m.host else None, model=model)
    result = BenchResult(params=params, target=target_info, started_at=started_at,
                         levels=tuple(levels),
                         search=finder.result() if finder is not None else None)
    return RunOutcome(m.label, result, death=death, interrupted=interrupted[0])


def level_order(params: BenchParams, done: Sequence[LevelResult],
                finder: search.Search | None = None
                ) -> Iterator[tuple[int, float | None, arrival.Level]]:
    """(repeat, probed value, level) of each level in the order run. ``--repeat N``: the
    whole ladder N times (``--search``: the levels its finder chooses). ``--until-ci
    PCT``: each level in turn, repeated until its throughput interval is narrow enough
    (read from ``done``, the levels run so far, as the caller appends them) or
    ``--max-repeat`` is reached."""
    from variantctl.bench.uncertainty import until_ci_done

    if params.until_ci is None:
        for repeat in range(params.repeat):
            steps: Iterator[tuple[float | None, arrival.Level]] = (
                ((None, lv) for lv in arrival.levels(params)) if finder is None
                else finder.steps())
            for probed, planned in steps:
                yield repeat, probed, planned
        return
    for planned in arrival.levels(params):
        repeat = 0
        while True:
            yield repeat, None, planned
            repeat += 1
            mine = [lv for lv in done if lv.concurrency == planned.concurrency]
            if repeat >= params.max_repeat or (
                    repeat >= params.min_repeat and until_ci_done(mine, params.until_ci)):
                break


def _repeat_note(params: BenchParams, repeat: int) -> str:
    if params.until_ci is not None:
        return (f", repeat {repeat + 1} (until the throughput CI is within "
                f"±{params.until_ci:g} %, at most {params.max_repeat})")
    return f", repeat {repeat + 1}/{params.repeat}" if params.repeat > 1 else ""


async def _warmup(base_url: str, params: BenchParams, concurrency: int, model: str,
                  prepared: Sequence[PreparedRequest]) -> WarmupResult:
    from variantctl.bench.runner import run_warmup

    return await run_warmup(base_url, params, concurrency, model=model, prepared=prepared)


async def _until_stopped(coro: Coroutine[object, object, T], stop: asyncio.Event) -> T | None:
    """``await coro`` unless ``stop`` is set first (then it is cancelled: None)."""
    task = asyncio.ensure_future(coro)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (task, stopper):
            if not t.done():
                t.cancel()
        await asyncio.gather(task, stopper, return_exceptions=True)
    return task.result() if task.done() and not task.cancelled() else None


async def _one_level(
    m: Measurement, params: BenchParams, concurrency: int, model: str,
    prepared: Sequence[PreparedRequest],
    repeat: int, monitor: list[str] | None, why_no_gpu: str, stop: asyncio.Event,
    loop: asyncio.AbstractEventLoop, *, profile: arrival.Profile | None = None,
) -> tuple[LevelResult, bool]:
    """The measured part of a level, with GPU sampler, /metrics scraper and watchdog beside."""
    from variantctl.bench.runner import run_level

    split = urlsplit(m.base_url)
    sampler = GpuSampler(m.target, monitor, clock=m.clock) if (m.target and monitor) else None
    scraper = MetricsScraper(split.hostname or "127.0.0.1", split.port or 80, clock=m.clock)
    watchdog = (_Watchdog(m.target, m.record.pid, stop, loop, host=m.host, record=m.record)
                if (m.target is not None and m.record is not None) else None)
    with contextlib.ExitStack() as stack:
        if sampler is not None:
            stack.enter_context(sampler)
        if watchdog is not None:
            stack.enter_context(watchdog)
        started: list[float] = []  # the level's t0 in the sampler's clock
        async with scraper:
            level = await run_level(m.base_url, params, concurrency, on_progress=m.on_progress,
                                    stop=stop, model=model, prepared=prepared, warmup=False,
                                    repeat=repeat, on_start=lambda: started.append(m.clock()),
                                    profile=profile)
            scraper.level_finished(level.metrics.completed)
    died = watchdog is not None and watchdog.died
    if watchdog is not None and not died and (level.errors or level.partial):
        # a dead server fails the rest of the level in milliseconds, faster than the
        # watchdog's tick: failures are the moment to look once more
        died = not await asyncio.to_thread(watchdog.alive)
    gpu: GpuSummary = sampler.summary() if sampler is not None else not_available(why_no_gpu)
    steady = level.metrics.steady
    gpu_steady = (sampler.summary((started[0] + steady.start_s, started[0] + steady.end_s))
                  if sampler is not None and steady is not None and started else None)
    level = dataclasses.replace(level, gpu=gpu, gpu_steady=gpu_steady,
                                server_metrics=scraper.summary())
    return level, died


def _diagnose(target: Target, record: ServerRecord, concurrency: int,
              catalog: Catalog | None) -> ServerDeath:
    """Classify the dead server's log (its startup and its last lines)."""
    from variantctl.logs.classify import classify_text

    try:
        text = target.read_bytes(record.log).decode("utf-8", "replace")
    except TargetError as exc:
        return ServerDeath(record.variant, record.pid, concurrency, job=record.job,
                           message=f"could not read the log {record.log}: {exc.message}")
    if catalog is None:
        return ServerDeath(record.variant, record.pid, concurrency, job=record.job,
                           message="the server exited (its log was not classified)",
                           tail=tuple(text.splitlines()[-LOG_TAIL_LINES:]))
    result = classify_text(text, catalog, exited=True)
    tail = tuple(text.splitlines()[-LOG_TAIL_LINES:])
    return ServerDeath(record.variant, record.pid, concurrency, job=record.job,
                       kind=result.kind,
                       signature=result.signature, title=result.title, message=result.message,
                       remediation=result.remediation, tail=tail, log=record.log)


def _install_sigint(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> list[bool]:
    """First Ctrl-C: stop the level (partial results kept); second: the default (abort).

    A SIGINT inherited as ignored (a background job of a shell without job control, as
    ``cmd &`` in a script) stays ignored, as in ``sweep``: that is how the caller said
    Ctrl-C is not for this process (the POSIX convention); only SIGTERM stops it then."""
    flag = [False]
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return flag

    def on_sigint() -> None:
        if flag[0]:
            _restore_sigint(loop)
            signal.raise_signal(signal.SIGINT)
            return
        flag[0] = True
        stop.set()

    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, on_sigint)
    return flag


def _restore_sigint(loop: asyncio.AbstractEventLoop) -> None:
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)
