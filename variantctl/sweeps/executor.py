"""Running a sweep's points: launch, warm up, bench the ladder, stop (effectful).

The per-point work is behind :class:`PointRunner` (``run_point(point) -> PointOutcome``):
:class:`TargetPointRunner` runs a point over an open Target (this machine or SSH); a
SLURM runner can submit the same point as a job. :func:`run_sweep` drives one thread per
host (one server per host at a time, hosts in parallel, one failing host does not stop
the others), writes every phase to the state file and stops the current servers when
interrupted (Ctrl-C), leaving a state ``--resume`` continues from.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from variantctl.bench.model import BenchResult, LevelResult
from variantctl.bench.session import ColdLevels, LevelStep, RunOutcome, ServerDeath
from variantctl.bench.step import Into
from variantctl.benchparams import BenchParams
from variantctl.errors import TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.launch.core import (
    LaunchContext,
    LaunchOptions,
    LaunchResult,
    LaunchUI,
    launch_variant,
    watch_variant,
)
from variantctl.launch.launcher import launcher_for
from variantctl.launch.servers import layout_for, list_records
from variantctl.launch.slurm import job_id
from variantctl.launch.watch import RECONNECT_FOR, Progress, reconnect
from variantctl.profilevar import PROFILE_ENV
from variantctl.runs.record import ServerRecord
from variantctl.runs.sweepstate import Capacity, PointEntry, StoppedEarly
from variantctl.sweeps.model import SweepSpec, sweep_of_name
from variantctl.sweeps.plan import PREDICTED, Plan, PlannedPoint
from variantctl.sweeps.state import DONE, SweepState
from variantctl.sweeps.stoprules import stop_reason
from variantctl.targets.base import Target

if TYPE_CHECKING:
    from variantctl.bench.profile import Collector
    from variantctl.launch.servers import StopOutcome

_T = TypeVar("_T")

#: seconds between looks at the interrupt flag while a level runs
POLL_S = 0.2


class Interrupted(Exception):
    """The sweep was asked to stop (Ctrl-C); raised inside a point to unwind it.

    An Exception, not a BaseException, on purpose: ``launch_variant`` stops the server
    it started on any exception before re-raising."""


@dataclass(frozen=True)
class PointOutcome:
    """How one point ended (the state file's entry is built from it)."""

    status: str  # measured | failed | interrupted | error
    run_id: str | None = None
    run_dir: str | None = None
    verdict: str | None = None
    signature: str | None = None
    message: str = ""
    benchmarks: tuple[str, ...] = ()
    #: ``profile: true``: the ``profile-*.json`` attached to the point's run
    profiles: tuple[str, ...] = ()
    stopped_early: StoppedEarly | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    #: levels preceded by a successful ``POST /reset_prefix_cache`` (0: not offered)
    prefix_cache_resets: int = 0
    #: ``bench: search``: the capacity the first search found
    capacity: Capacity | None = None
    #: the connection to the host dropped during the point (the sweep retries it once)
    connection_lost: bool = False
    #: the sweep's benchmark settings cannot work on this server (``input_len`` below
    #: what the chat template adds, an unreadable prompt file): every other point with
    #: the same settings would start its server only to fail the same way
    bad_bench: bool = False


class PointRunner(Protocol):
    """Runs one planned point to its outcome (never raises for a per-point failure)."""

    def run_point(self, point: PlannedPoint) -> PointOutcome: ...


class SweepUI(Protocol):
    def phase(self, point: PlannedPoint, phase: str, detail: str = "") -> None: ...

    def note(self, text: str) -> None: ...


@dataclass
class _PointUI:
    """The launch's UI for one point: forwards notes, and unwinds on interrupt."""

    ui: SweepUI
    point: PlannedPoint
    stop: threading.Event

    def note(self, text: str) -> None:
        self.ui.note(f"{self.point.name}: {text}")

    def progress(self, progress: Progress) -> None:
        if self.stop.is_set():
            raise Interrupted("interrupted during the start")

    def decided(self, result: LaunchResult) -> None:
        return None


class TargetPointRunner:
    """A point on an open Target: launch, bench every prompt set, stop."""

    def __init__(self, target: Target, host: Host, spec: SweepSpec, ctx: LaunchContext, *,
                 ui: SweepUI, stop: threading.Event, include_predicted: bool = False,
                 grace: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.target, self.host, self.spec, self.ctx = target, host, spec, ctx
        self.ui, self.stop, self.grace, self.clock = ui, stop, grace, clock
        self.include_predicted = include_predicted
        # the last point lost the connection: the next one reconnects before it starts
        # (an unattended sweep goes on after a network blip instead of failing every
        # point left with "connection lost")
        self._lost: TargetError | None = None
        # per point (a SLURM host runs points in several threads): did the connection drop
        self._point = threading.local()

    def run_point(self, point: PlannedPoint) -> PointOutcome:
        self._point.dropped = False
        try:
            outcome = self._run_point(point)
        except BaseException:
            # whatever escaped (a state file that cannot be written on a full disk, a
            # signal, a bug): the point's server must not outlive it, holding its GPU
            self.ui.note(f"{point.name}: {self._stop_after_failure(point)}")
            raise
        return dataclasses.replace(outcome, connection_lost=self._point.dropped)

    def _stop_after_failure(self, point: PlannedPoint) -> str:
        """Stop the server recorded for ``point`` after an error escaped the point; what
        was done, for the user: stopped, none running, or left recorded as a leftover
        (``--resume`` reattaches or stops it)."""
        def stop() -> str:
            layout = layout_for(self.target, self.host)
            record = self._own_record(point)
            if record is None:
                return "the error came before its server was recorded; none is running"
            outcome = launcher_for(self.host).stop(self.target, layout, record,
                                                   grace=self.grace)
            if outcome.ok:
                return f"stopped its server ({record.ident}) after the error"
            return (f"could not stop its server ({record.ident}) after the error; it "
                    f"stays recorded on {self.host.name} as a leftover: "
                    f"`variantctl sweep {self.spec.name} --resume` reattaches to it or "
                    f"stops it, `variantctl stop {point.name} --host {self.host.name}` "
                    "stops it")

        try:
            return self._on_target(point, stop)
        except (VariantctlError, OSError) as exc:
            return (f"could not stop its server after the error ({exc}); it stays recorded "
                    f"on {self.host.name} as a leftover: `variantctl sweep {self.spec.name} "
                    "--resume` reattaches to it or stops it")

    def _run_point(self, point: PlannedPoint) -> PointOutcome:
        t0 = self.clock()
        if self._lost is not None:
            try:
                self._reconnect(point, self._lost)
            except TargetError as exc:
                return PointOutcome("error", message=exc.message,
                                    timings={"total_s": round(self.clock() - t0, 3)})
        forced = point.skip is not None and point.skip.reason == PREDICTED
        # keep=False: a ready server stays up anyway; a failed, hung or interrupted start
        # is stopped by the launch itself
        opts = LaunchOptions(apply_patches=True, force=forced, keep=False, grace=self.grace,
                             measured=self.spec.measured)
        self.ui.phase(point, "launch")
        collector: Collector | None = None
        try:
            if self.spec.profile:
                point, collector = self._profiled(point)
            result, reattached = self.start(point, opts, _PointUI(self.ui, point, self.stop))
        except Interrupted:
            self._stop_recorded(point)
            return PointOutcome("interrupted", message="interrupted during the start",
                                timings={"total_s": round(self.clock() - t0, 3)})
        except VariantctlError as exc:
            self._note_lost(exc)
            self._stop_recorded(point)
            return PointOutcome("error", message=exc.message,
                                timings={"total_s": round(self.clock() - t0, 3)})
        t_ready = self.clock()
        base = _outcome_of(result)
        ttr = result.seconds or 0.0
        if result.verdict != "ready" or result.record is None:
            return dataclasses.replace(base, status="failed", timings={
                "launch_s": round(t_ready - t0, 3), "time_to_ready_s": round(ttr, 3),
                "total_s": round(self.clock() - t0, 3), "overhead_s": 0.0})
        record = result.record
        bench_s = 0.0
        # prefix-cache resets of this point (a local: a SLURM host runs points at once);
        # a server an earlier run left has served requests already: reset before level 1
        resets = [0]
        names: list[str] = []
        profiles: list[str] = []
        stopped_early: StoppedEarly | None = None
        capacity: Capacity | None = None
        status, message = "measured", ""
        bad_bench = False
        try:
            self.ui.phase(point, "bench")
            for params in self.spec.bench:
                seen = len(collector.levels) if collector is not None else 0
                into = (Into(self.ctx.runs, Path(result.run_dir), self.ctx.now)
                        if result.run_dir is not None else None)
                bench, measured_s, early, death, stored = self._ladder(
                    point, record, params, collector, into, resets=resets,
                    reset_first=reattached)
                if collector is not None and len(self.spec.bench) > 1:
                    for lv in collector.levels[seen:]:  # one ladder per prompt set
                        lv.label = f"{params.prompt} {lv.label}"
                bench_s += measured_s
                if bench.search is not None and capacity is None:
                    capacity = Capacity(params.prompt, bench.search.mode,
                                        bench.search.best_level, bench.search.limiting)
                if stored is not None:
                    names.append(stored.name)
                if early is not None and stopped_early is None:
                    stopped_early = early
                if death is not None:
                    status = "failed"
                    message = (f"the server died during the benchmark at concurrency "
                               f"{death.level}: {death.signature or 'see its log'}")
                    break
        except Interrupted:
            status, message = "interrupted", "interrupted during the benchmark"
        except VariantctlError as exc:
            self._note_lost(exc)
            status, message = "error", exc.message
            # bad input to the benchmark, found by building its prompts on the server
            bad_bench = exc.exit_code == ExitCode.USAGE
        finally:
            if collector is not None and collector.levels:
                profiles.extend(self._on_target(
                    point, lambda: self._store_profile(point, record, collector)))
            self.ui.phase(point, "stop")
            t_stop = self.clock()
            stopped = self._on_target(point, lambda: self._stop_server(record))
            if not stopped.ok:
                # a process killed at the end of the grace period can take a moment to be
                # reaped (still listed): look once more before calling it a survivor
                time.sleep(1.0)
                stopped = self._on_target(point, lambda: self._stop_server(record))
            if not stopped.ok:
                status = "error"
                message = (message + "; " if message else "") + (
                    f"could not stop {record.variant} ({record.ident}): still running "
                    f"{list(stopped.result.remaining)}")
        t_end = self.clock()
        stop_s = t_end - t_stop
        total = t_end - t0
        return dataclasses.replace(
            base, status=status, message=message, benchmarks=tuple(names),
            profiles=tuple(profiles), stopped_early=stopped_early, prefix_cache_resets=resets[0],
            capacity=capacity,
            bad_bench=bad_bench,
            timings={"launch_s": round(t_ready - t0, 3), "time_to_ready_s": round(ttr, 3),
                     "bench_s": round(bench_s, 3), "stop_s": round(stop_s, 3),
                     "total_s": round(total, 3),
                     # the server's own start, its benchmark and its own exit are not
                     # the sweep's cost; everything else is (docs/sweep.md)
                     "overhead_s": round(max(0.0, total - ttr - bench_s - stop_s), 3)})

    def _own_record(self, point: PlannedPoint) -> ServerRecord | None:
        """The point's server record on the host, when this project's (another project
        sharing the workdir keeps its own)."""
        from variantctl.launch.servers import foreign_owner, load_record

        record = load_record(self.target, layout_for(self.target, self.host), point.name)
        if record is None or foreign_owner(record, self.ctx.runs.root):
            return None
        return record

    def start(self, point: PlannedPoint, opts: LaunchOptions, ui: LaunchUI
              ) -> tuple[LaunchResult, bool]:
        """Start the point's server and watch it to a verdict; True when it reattached
        instead: an earlier run of this sweep (a variantctl killed mid-point) left the
        point's server running — a process on the host or a SLURM job, queued or
        running — with the same configuration, so its start (minutes on a GPU host)
        is not paid twice and its run gets the benchmark. A leftover of another
        configuration under the point's name (the sweep file changed) is stopped."""
        from variantctl.launch.servers import load_record, refuse_foreign

        layout = layout_for(self.target, self.host)
        record = load_record(self.target, layout, point.name)
        if record is not None:
            # a project sharing the host's workdir ran a point of this name: its server
            # and its runs/ are its own (exit 3 for the point, nothing touched)
            refuse_foreign(record, self.ctx.runs.root, "reattached or stopped")
            launcher = launcher_for(self.host)
            if (launcher.probe(self.target, record, health=False).alive
                    and self._same_configuration(record, point)):
                what = (f"SLURM job {job_id(record)}" if launcher.kind == "slurm"
                        else f"its server ({record.ident})")
                self.ui.note(f"{point.name}: reattaching to {what}, started by an earlier "
                             "run of this sweep")
                return watch_variant(self.target, self.host, point.name, point.variant,
                                     opts, self.ctx, ui), True
            launcher.stop(self.target, layout, record, grace=self.grace)
        return launch_variant(self.target, self.host, point.variant, opts, self.ctx, ui), False

    def _same_configuration(self, record: ServerRecord, point: PlannedPoint) -> bool:
        """Whether the leftover's run is of the point as planned now: the same
        configuration key (launch view, host, required patchsets as defined now) on the
        port it was given (a SLURM job may have been moved off the planned one), and
        profiled or not as the sweep is now."""

        from variantctl.runs.identity import config_key, record_config_key
        from variantctl.runs.run import RunFileError

        if not record.run_dir:
            return False
        try:
            rec = self.ctx.runs.read(Path(record.run_dir))
        except RunFileError:
            return False
        env = rec.variant.get("env")
        profiled = isinstance(env, Mapping) and PROFILE_ENV in env
        planned = point.variant.with_overrides(port=record.port)
        fingerprints = {n: ps.fingerprint for n, ps in self.ctx.patchsets.items()}
        expected = config_key(planned, self.host, fingerprints)
        return record_config_key(rec) == expected and profiled == self.spec.profile

    def _stop_server(self, record: ServerRecord) -> StopOutcome:
        return launcher_for(self.host).stop(self.target, layout_for(self.target, self.host),
                                            record, grace=self.grace)

    def _connection_held(self, concurrency: int) -> None:
        """After a level with failed requests: were they the server's, or did the
        connection to the host drop under them? A dropped one raises (the point is an
        error, so ``--resume`` measures it again) instead of recording the failures as
        the server's."""
        try:
            self.target.run(["true"], timeout=15)
        except TargetError as exc:
            if exc.kind != "unreachable":
                raise
            # exc.message names the host already
            raise TargetError(
                f"the connection dropped during the benchmark at concurrency {concurrency} "
                f"({exc.message}); its failed requests say nothing of the server",
                kind="unreachable") from None

    def _note_lost(self, exc: VariantctlError) -> None:
        if isinstance(exc, TargetError) and exc.kind == "unreachable":
            self._lost = exc
            self._point.dropped = True

    def _reconnect(self, point: PlannedPoint, error: TargetError) -> None:
        """Open the connection again (within the watch's budget) or raise."""
        self.ui.note(f"{point.name}: connection to {self.host.name} lost ({error.message}); "
                     "reconnecting")
        self._point.dropped = True
        reconnect(self.target, error, self.clock, time.sleep, RECONNECT_FOR, None,
                  self.clock())
        self._lost = None

    def _on_target(self, point: PlannedPoint, work: Callable[[], _T]) -> _T:
        """``work()``; when the connection drops under it, reconnect and do it once more
        (the stop phase must not leave a server running for a network blip)."""
        try:
            return work()
        except TargetError as exc:
            if exc.kind != "unreachable":
                raise
            self._reconnect(point, exc)
            return work()

    def _stop_recorded(self, point: PlannedPoint) -> None:
        """After a start that raised: stop the point's server if one is still recorded
        (the launch stops it itself; this covers a connection that failed meanwhile)."""
        def stop() -> None:
            layout = layout_for(self.target, self.host)
            record = self._own_record(point)
            if record is not None:
                launcher_for(self.host).stop(self.target, layout, record, grace=self.grace)

        with contextlib.suppress(VariantctlError):
            self._on_target(point, stop)

    def _profiled(self, point: PlannedPoint) -> tuple[PlannedPoint, Collector]:
        """``profile: true``: the point's variant with VARIANTCTL_PROFILE set to its own
        directory on the host, and the collector that reads it level by level."""
        from variantctl.bench.profile import Collector, profile_dir

        directory = profile_dir(self.target, self.host, point.name)
        variant = point.variant.with_args({}, env={PROFILE_ENV: directory},
                                          origin=f"sweep {self.spec.name} profile: true")
        return dataclasses.replace(point, variant=variant), Collector(self.target, directory)

    def _store_profile(self, point: PlannedPoint, record: ServerRecord,
                       collector: Collector) -> list[str]:
        """The raw events and breakdowns into the point's run (``profile-*.json``)."""
        from variantctl.bench.profile import empty_hint
        from variantctl.bench.step import own_run_dir, record_profile

        if not any(lv.events for lv in collector.levels):
            self.ui.note(f"warning: {empty_hint(point.name, collector.directory)}")
        run_dir = own_run_dir(record, self.ctx.runs.root)
        if run_dir is None:
            return []
        try:
            path = record_profile(Into(self.ctx.runs, run_dir, self.ctx.now), collector,
                                  point.name)
        except VariantctlError as exc:
            self.ui.note(f"{point.name}: profile events not stored: {exc.message}")
            return []
        return [path.name]

    def _ladder(self, point: PlannedPoint, record: ServerRecord, params: BenchParams,
                collector: Collector | None, into: Into | None, *, resets: list[int],
                reset_first: bool = False,
                ) -> tuple[BenchResult, float, StoppedEarly | None, ServerDeath | None,
                           Path | None]:
        """One prompt set's ladder through the measure-and-record step (``bench.step.
        measure_and_record``: the same ladder ``bench`` runs, recorded ``into`` the
        point's run), with the sweep's policy in its hooks (:class:`_SweepLevels`: the
        shared prefix-cache policy, before the first level too with ``reset_first``,
        counted in ``resets[0]``; phases; stop rules). Returns (result, measured
        seconds, stopped early, death, the benchmark file)."""
        from variantctl.bench.step import Server, measure_and_record

        hooks = _SweepLevels(self, point, params, reset_first=reset_first)
        try:
            outcome = measure_and_record(
                Server(self.target, self.host, record, collector), point.name, params,
                self.ctx.now().isoformat(), into=into, signatures=self.ctx.signatures,
                hooks=hooks, run=lambda coro: _run_guarded(coro, self.stop),
                trim_ladder=True)
        finally:
            resets[0] += hooks.resets
        if outcome.store_error is not None:
            # a point is its stored benchmark (report, --resume read it back): one that
            # could not be stored fails the point as before, rather than count as measured
            raise outcome.store_error
        result = outcome.result
        measured = sum(lv.metrics.duration_s + (lv.warmup.duration_s if lv.warmup else 0.0)
                       for lv in result.levels)
        death = outcome.death
        early = hooks.early
        if early is None and death is None and not result.levels:
            early = StoppedEarly(concurrency=params.concurrency[0], prompt=params.prompt,
                                 reason="no level was measured")
        return result, measured, early, death, outcome.stored


class _SweepLevels(ColdLevels):
    """A sweep's policy between the levels of a ladder: ``bench``'s cache policy
    (:class:`ColdLevels`), the point's phase in the state, and after a level: a
    connection that dropped under failed requests raises, the stop rules end it."""

    def __init__(self, runner: TargetPointRunner, point: PlannedPoint, params: BenchParams,
                 *, reset_first: bool) -> None:
        super().__init__(reset_first=reset_first)
        self.runner, self.point, self.params = runner, point, params
        self.early: StoppedEarly | None = None

    def before_level(self, step: LevelStep) -> None:
        super().before_level(step)
        self.runner.ui.phase(self.point, "bench", f"{self.params.prompt} c={step.concurrency}")

    def after_level(self, step: LevelStep, level: LevelResult) -> str | None:
        if level.errors:
            self.runner._connection_held(step.concurrency)
        reason = stop_reason(self.runner.spec.stop, level.metrics)
        if reason is not None:
            self.early = StoppedEarly(concurrency=step.concurrency, prompt=self.params.prompt,
                                      reason=reason)
        return reason


def _outcome_of(result: LaunchResult) -> PointOutcome:
    v = result.run_verdict
    return PointOutcome(
        status="failed", run_id=result.run_id,
        run_dir=str(result.run_dir) if result.run_dir else None, verdict=v.kind.value,
        signature=v.signature, message=v.message or v.title)


def _run_guarded(coro: Coroutine[Any, Any, RunOutcome], stop: threading.Event) -> RunOutcome:
    """``asyncio.run(coro)`` that is cancelled when ``stop`` is set (from another thread,
    or the main thread's Ctrl-C): the bench's own SIGINT handler works only there."""

    async def guarded() -> RunOutcome:
        task = asyncio.ensure_future(coro)
        while not task.done():
            if stop.is_set():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise Interrupted("interrupted during the benchmark")
            await asyncio.wait({task}, timeout=POLL_S)
        return task.result()

    return asyncio.run(guarded())


# -- the sweep ---------------------------------------------------------------------


def stop_leftovers(target: Target, host: Host, sweep: str, *, grace: float = 10.0,
                   keep: Collection[str] = (), runs_root: Path | None = None,
                   note: Callable[[str], None] | None = None) -> list[str]:
    """Stop every server of ``sweep`` recorded on the host (a variantctl killed mid-point
    leaves one) but those of the points in ``keep`` (about to run: their start reattaches
    or stops them): the names stopped. Other variants' servers are left alone, and so
    are another project's (``runs_root``: this project's; reported through ``note``)."""
    from variantctl.launch.servers import foreign_owner

    layout = layout_for(target, host)
    stopped = []
    for rec in list_records(target, layout):
        owner = sweep_of_name(rec.variant)
        if owner is None or owner[0] != sweep or rec.variant in keep:
            continue
        other = foreign_owner(rec, runs_root) if runs_root is not None else None
        if other is not None:
            if note is not None:
                note(f"{host.name}: {rec.variant} left alone: {other}")
            continue
        outcome = launcher_for(host).stop(target, layout, rec, grace=grace)
        occupant = outcome.result.occupant
        if not outcome.ok:
            why = (f": the record has no process identity and {occupant.describe()}, "
                   "which cannot be verified as the server (nothing signalled)"
                   if occupant is not None else "")
            raise VariantctlError(
                f"a server left by an earlier run of sweep {sweep} on host {host.name} "
                f"({rec.variant}, {rec.ident}) could not be stopped{why}",
                hint=f"variantctl stop {rec.variant} --host {host.name}" if occupant is None
                else f"if it is the server: kill -TERM -- -{rec.pid} on {host.name}")
        if occupant is not None:
            # its pid belongs to another process now: nothing was signalled
            if note is not None:
                note(f"{host.name}: {rec.variant}: the recorded server is gone "
                     f"({occupant.describe()}); record removed, nothing signalled")
            continue
        stopped.append(rec.variant)
    return stopped


#: (host, its open target, the stop flag, the UI to report phases to) -> runner
RunnerFactory = Callable[[Host, Target, threading.Event, SweepUI], PointRunner]


@dataclass
class _StateUI:
    """Phases go to the state file too, so a killed variantctl leaves the last one."""

    ui: SweepUI
    state: SweepState

    def phase(self, point: PlannedPoint, phase: str, detail: str = "") -> None:
        if phase in ("launch", "bench", "stop"):
            self.state.update(point.name, lambda e: dataclasses.replace(e, phase=phase))
        self.ui.phase(point, phase, detail)

    def note(self, text: str) -> None:
        self.ui.note(text)


@dataclass
class SweepRun:
    """What the execution produced: per host, an error that stopped it (if any)."""

    interrupted: bool = False
    host_errors: dict[str, VariantctlError] = field(default_factory=dict)
    leftovers: dict[str, list[str]] = field(default_factory=dict)


def run_sweep(plan: Plan, state: SweepState, hosts: Mapping[str, Host],
              make_runner: RunnerFactory, ui: SweepUI, *,
              open_target: Callable[[Host], contextlib.AbstractContextManager[Target]],
              clock: Callable[[], float] = time.monotonic, grace: float = 10.0,
              runs_root: Path | None = None) -> SweepRun:
    """Run every point still to run, one thread per host; Ctrl-C in the calling thread
    sets the stop flag, waits for the threads to stop their servers and returns."""
    stop = threading.Event()
    out = SweepRun()
    # every host with points, even when --resume finds them all done: a killed
    # variantctl may have left a server there that must not outlive this run
    todo: dict[str, list[PlannedPoint]] = {p.host: [] for p in plan.to_run}
    for p in plan.to_run:
        if state.entry(p.name).status not in DONE:  # --resume: measured or failed
            todo[p.host].append(p)
    #: the first point whose benchmark settings proved unusable, and why (all hosts)
    bad_bench: list[tuple[str, str]] = []

    def host_work(name: str, points: Sequence[PlannedPoint]) -> None:
        from variantctl.sweeps.slurm import for_each_point

        host = hosts[name]
        try:
            with open_target(host) as target:
                left = stop_leftovers(target, host, plan.spec.name, grace=grace,
                                      keep={p.name for p in points}, runs_root=runs_root,
                                      note=ui.note)
                if left:
                    out.leftovers[name] = left
                    ui.note(f"{name}: stopped {len(left)} server(s) left by an earlier run: "
                            + ", ".join(left))
                runner = make_runner(host, target, stop, _StateUI(ui, state))

                def one(point: PlannedPoint) -> None:
                    if bad_bench:
                        # the sweep's benchmark settings are the same for every point:
                        # do not start another server only to fail as the first did
                        first, why = bad_bench[0]
                        state.update(point.name, _ended(
                            "error", f"not started: the benchmark settings cannot work "
                                     f"(found on {first}: {why})"))
                        ui.phase(point, "error", "not started: the benchmark settings "
                                                 f"cannot work (see {first})")
                        return
                    state.update(point.name, _started)
                    outcome = runner.run_point(point)
                    if (outcome.connection_lost and outcome.status == "error"
                            and not stop.is_set()):
                        # an unattended sweep does not leave a hole for a network blip:
                        # the point once more, on the re-opened connection (its server
                        # was stopped; the failed attempt keeps its run)
                        ui.note(f"{point.name}: retrying once: {outcome.message}")
                        state.update(point.name, _started)
                        outcome = runner.run_point(point)
                    state.update(point.name, lambda e: _entry_of(e, outcome))
                    ui.phase(point, outcome.status, outcome.message)
                    if outcome.bad_bench and not bad_bench:
                        bad_bench.append((point.name, outcome.message))
                        ui.note(f"{point.name}: the benchmark settings cannot work on this "
                                f"server: {outcome.message}; the sweep's other points are "
                                "not started (fix the sweep file's bench: and run it again)")

                # one server at a time, or up to slurm.max_jobs jobs on a SLURM host
                for_each_point(host, points, stop, one)
        except (VariantctlError, OSError) as exc:
            # an OSError: a local file of the sweep (its state) could not be written
            err = exc if isinstance(exc, VariantctlError) else VariantctlError(
                f"{exc.filename or 'a file'}: {exc.strerror or exc}")
            out.host_errors[name] = err
            try:
                for point in points:
                    if state.entry(point.name).status in ("pending", "running"):
                        state.update(point.name, _ended("error", f"host {name}: {err.message}"))
            except (VariantctlError, OSError) as again:
                ui.note(f"error: host {name}: the sweep state could not record the "
                        f"error either ({again})")
            ui.note(f"error: host {name}: {err.message}")

    with ThreadPoolExecutor(max_workers=max(1, len(todo)),
                            thread_name_prefix="sweep-host") as pool:
        futures: set[Future[None]] = {pool.submit(host_work, n, ps) for n, ps in todo.items()}
        pending = set(futures)
        while pending:
            try:
                _, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            except KeyboardInterrupt:
                if not stop.is_set():
                    ui.note("interrupted: stopping the running servers (the state is kept; "
                            "--resume continues)")
                stop.set()
                out.interrupted = True
        for f in futures:
            f.result()  # a bug in a host thread surfaces here, not silently
    return out


def _started(e: PointEntry) -> PointEntry:
    return dataclasses.replace(e, status="running", phase="launch")


def _ended(status: str, message: str) -> Callable[[PointEntry], PointEntry]:
    return lambda e: dataclasses.replace(e, status=status, phase=None, message=message)


def _entry_of(e: PointEntry, o: PointOutcome) -> PointEntry:
    """The point's entry once it ended as ``o``."""
    return dataclasses.replace(
        e, status=o.status, phase=None, run_id=o.run_id, run_dir=o.run_dir,
        verdict=o.verdict, signature=o.signature, message=o.message,
        benchmarks=o.benchmarks, profiles=o.profiles, stopped_early=o.stopped_early,
        prefix_cache_resets=o.prefix_cache_resets, timings=MappingProxyType(dict(o.timings)),
        capacity=o.capacity)
