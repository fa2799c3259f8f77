"""The watch loop: follow a server log on a host, feed the streaming classifier,
poll ``/health``, and stop at the first verdict.

Verdicts: ``ready`` (``/health`` answered 200), ``failed`` (a failure signature
matched — decided on the line itself, not when the process exits), ``hang`` (no
progress for ``stall`` seconds), ``exited`` (the process died with no known
signature), ``timeout`` (no verdict within ``timeout``).

Progress is more than new lines (a slow start is not a hang): bytes added to the log
(a progress bar without a newline) count, and so does work — once the log has been
quiet for a quarter of the stall time the server's processes' CPU time is sampled
(:meth:`Launcher.cpu_times <variantctl.launch.launcher.Launcher.cpu_times>`), and
processes that use at least :data:`BUSY_SHARE` of a core are still working: the stall
clock restarts. A hung process waits (on a lock, a socket, a collective) and a waiting
process uses no CPU, so a real hang still ends as one after ``stall`` seconds. Work
excuses silence only so long: :data:`BUSY_STALLS` stall times since the last output,
:data:`SILENT_PHASE_STALLS` in a phase vLLM is known to spend long and silent in
(the imports before the first line, engine configuration, torch.compile in the profiling
run, graph capture) — a collective that spins is a hang too.

A dropped SSH connection is not a verdict: the loop reconnects (the server
keeps running on the host) and continues from the same log offset.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from variantctl.errors import TargetError
from variantctl.jsontypes import JsonMapping
from variantctl.launch.classify import ClassifierAdapter, Decision
from variantctl.logs.verdict import VerdictKind
from variantctl.runs.record import ServerRecord
from variantctl.targets.activity import TreeSample, cpu_used
from variantctl.targets.base import Target
from variantctl.targets.process import read_from

if TYPE_CHECKING:
    from variantctl.launch.launcher import Launcher

READY, FAILED, HANG, EXITED, TIMEOUT = (VerdictKind.READY, VerdictKind.FAILED, VerdictKind.HANG,
                                        VerdictKind.EXITED, VerdictKind.TIMEOUT)

#: seconds between log reads (the fail-fast latency is about this plus one round trip)
LOG_POLL = 0.2
#: seconds between /health probes and liveness checks
HEALTH_POLL = 1.0
#: how long to keep trying to reconnect a dropped SSH connection
RECONNECT_FOR = 60.0
#: CPU-seconds per second (a share of one core) of a server that still works: a hung one
#: sleeps on a lock, a socket or a collective and uses none; a slow one under load still
#: gets a few per cent of a core (vLLM's CPU worker is pinned to one core, which a loaded
#: host shares with everything else)
BUSY_SHARE = 0.02
#: how many stall times of silence since the last output working processes may excuse
BUSY_STALLS = 3.0
#: the same in a phase vLLM spends long and silent in (a CPU server under load was seen
#: silent for 68 s in engine configuration and 60 s at a time while torch.compile ran)
SILENT_PHASE_STALLS = 10.0
#: phases known to be long and silent: the imports before and after the banner (torch and
#: vLLM on a fresh install take minutes), engine configuration (platform and distributed
#: set-up), the profiling run (torch.compile compiles first), graph capture
SILENT_PHASES = frozenset({"not-started", "process-start", "engine-config",
                           "kv-cache-profiling", "graph-capture"})


@dataclass
class BusyJudge:
    """Whether a server whose log is quiet still works, from samples of the CPU time its
    processes used (pure: the caller samples through the launcher)."""

    stall: float
    last: tuple[float, Mapping[str, float]] | None = None
    #: processes running (or waiting for the disk) at the previous sample
    running: frozenset[str] = frozenset()
    #: how many were running at both the previous sample and the last one
    steady: int = 0

    @property
    def poll(self) -> float:
        """Seconds between samples: four per half stall, at most 15 s apart."""
        return max(0.25, min(self.stall / 4, 15.0))

    def share(self, now: float, sample: TreeSample | None) -> float | None:
        """CPU-seconds per second the server's processes used since the baseline (the
        first sample of this quiet stretch: a longer window smooths a loaded host's
        scheduling). None: this is the baseline, or the launcher cannot tell."""
        if sample is None:
            self.last, self.running = None, frozenset()
            return None
        self.steady = len(self.running & set(sample.active))
        self.running = frozenset(sample.active)
        if self.last is None:
            self.last = (now, sample.cpu)
            return None
        since, base = self.last
        return cpu_used(base, sample.cpu) / (now - since) if now > since else None

    def excuses(self, share: float | None, silent: float, phase: str | None,
                active: int = 0) -> bool:
        """Whether ``share`` of a core (or ``active`` processes running or waiting for the
        disk right now) counts as progress after ``silent`` seconds without output in
        ``phase``."""
        if not active and (share is None or share < BUSY_SHARE):
            return False
        stalls = SILENT_PHASE_STALLS if phase in SILENT_PHASES else BUSY_STALLS
        return silent < stalls * self.stall


@dataclass(frozen=True)
class Progress:
    """What the live display shows."""

    elapsed: float
    phase: str | None
    last_line: str
    lines: int
    health: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class WatchOutcome:
    """How a watch ended: the verdict and the decision behind it, and what the watch saw
    (the launch turns it into its one verdict value, ``runs/run.RunVerdict``)."""

    verdict: VerdictKind
    decision: Decision
    elapsed: float
    lines: int
    last_lines: tuple[str, ...]
    #: seconds from start of watching to the verdict (ready: time to ready)
    time_to_verdict: float
    #: log line number (1-based) of the decisive line, when there is one
    decisive_line: int | None = None
    reconnects: int = 0
    health: int | None = None
    #: the classifier's facts (``variantctl.classify/1`` JSON of logs.facts.Facts)
    facts: JsonMapping = field(default_factory=dict)


def watch(
    target: Target,
    record: ServerRecord,
    classifier: ClassifierAdapter,
    *,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_progress: Callable[[Progress], None] | None = None,
    log_poll: float = LOG_POLL,
    health_poll: float = HEALTH_POLL,
    reconnect_for: float = RECONNECT_FOR,
    started: float | None = None,
    launcher: Launcher | None = None,
) -> WatchOutcome:
    """Watch ``record``'s server until a verdict (see module docstring). ``launcher``
    (default: a process on the host) says whether it lives and where /health is; while
    it waits to run (a queued SLURM job) its reason is the phase and no stall counts."""
    if launcher is None:
        from variantctl.launch.launcher import ProcessLauncher

        launcher = ProcessLauncher()
    t0 = clock() if started is None else started
    offset = 0
    partial = b""
    count = 0
    last: deque[str] = deque(maxlen=30)
    next_health = clock()
    reconnects = 0
    health: int | None = None
    waiting: str | None = None
    stall = classifier.stall_seconds
    busy = BusyJudge(stall) if stall else None
    last_output = clock()  # the last byte the log got
    next_sample = 0.0
    note: str | None = None

    def outcome(
        verdict: VerdictKind, decision: Decision, line_no: int | None = None
    ) -> WatchOutcome:
        now = clock()
        return WatchOutcome(
            verdict=verdict, decision=decision, elapsed=now - t0, lines=count,
            last_lines=tuple(last), time_to_verdict=now - t0, decisive_line=line_no,
            reconnects=reconnects, health=health, facts=classifier.facts(),
        )

    def feed(data: bytes, final: bool = False) -> Decision | None:
        nonlocal partial, count, next_health
        buf = partial + data
        pieces = buf.split(b"\n")
        partial = b"" if final else pieces.pop()
        for raw in pieces:
            if final and not raw:
                continue
            text = raw.decode("utf-8", "replace").rstrip("\r")
            count += 1
            last.append(text)
            decision = classifier.feed(text)
            if decision is not None:
                if decision.decisive:
                    return decision
                next_health = clock()  # the log says ready: ask /health now
        return None

    while True:
        try:
            chunk = read_from(target, record.log, offset)
            if chunk:
                offset += len(chunk)
                last_output = clock()
                classifier.activity()  # the log grows (a line may not be complete yet)
                decision = feed(chunk)
                if decision is not None:
                    return outcome(decision.verdict, decision, count)
            if busy is not None and waiting is None:
                now = clock()
                quiet = classifier.quiet_for()
                if quiet < busy.stall / 4:
                    # sampling starts again when the log is quiet
                    busy.last, busy.running, busy.steady = None, frozenset(), 0
                elif busy.last is None or now >= next_sample:
                    # the baseline at a quarter of the stall, the verdict from half of it:
                    # a sample that takes long (a loaded host) cannot let the stall pass
                    next_sample = now + busy.poll
                    sample = launcher.cpu_times(target, record)
                    share = busy.share(now, sample)
                    # running at this look and the one before: a hung process that only
                    # woke for a moment (a loaded host schedules it late) is not working
                    if quiet >= busy.stall / 2 and busy.excuses(
                            share, now - last_output, classifier.phase(), busy.steady):
                        classifier.activity()
                        used = f"use {share:.0%} of a core" if share is not None else "run"
                        note = (f"log quiet for {now - last_output:.0f}s, its processes "
                                f"{used}: still working")
            decision = classifier.tick() if waiting is None else None
            if decision is not None and decision.decisive:
                return outcome(decision.verdict, decision)
            now = clock()
            if now >= next_health:
                next_health = now + health_poll
                probe = launcher.probe(target, record)
                if waiting is not None and probe.waiting is None:
                    classifier.activity()  # out of the queue: the stall clock starts now
                waiting, health = probe.waiting, probe.health
                if health == 200 and probe.foreign_listener is not None:
                    # another process answers on the port: not this server's answer.
                    # It fails to bind (the log says so) or binds once the port is free
                    health = None
                    note = (f"port {record.port} answers, but {probe.foreign_listener} "
                            "listens there, not this server")
                if health == 200:
                    # the log may lag /health (a read of at most a block per step, a
                    # log on a shared filesystem): read what is there before the ready
                    # verdict, so what is archived is what the log says, as printed
                    for _ in range(64):
                        rest = read_from(target, record.log, offset)
                        if not rest:
                            break
                        offset += len(rest)
                        feed(rest)
                    return outcome(READY, classifier.ready())
                if not probe.alive:
                    # it died: read what it wrote while dying, then decide
                    rest = read_from(target, record.log, offset)
                    offset += len(rest)
                    decision = feed(rest, final=True)
                    if decision is None:
                        decision = classifier.exited()
                    verdict = decision.verdict if decision.decisive else EXITED
                    return outcome(verdict, decision, count if decision.decisive else None)
        except TargetError as exc:
            if exc.kind != "unreachable":
                raise
            reconnect(target, exc, clock, sleep, reconnect_for, on_progress, t0)
            reconnects += 1
            continue
        if clock() - t0 >= timeout:
            return outcome(TIMEOUT, classifier.timed_out(waiting))
        if on_progress is not None:
            on_progress(Progress(clock() - t0, waiting or classifier.phase(),
                                 last[-1] if last else "", count, health, note))
        note = None  # said once per sample that found the server working
        sleep(log_poll)


def reconnect(
    target: Target,
    first: TargetError,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    budget: float,
    on_progress: Callable[[Progress], None] | None,
    t0: float,
) -> None:
    """Re-open a dropped connection within ``budget`` seconds, or raise (the server keeps
    running on the host either way)."""
    deadline = clock() + budget
    error: TargetError = first
    while clock() < deadline:
        if on_progress is not None:
            on_progress(Progress(clock() - t0, None, "", 0,
                                 note=f"connection lost ({error.message}); reconnecting"))
        try:
            target.reconnect()
            return
        except TargetError as exc:
            error = exc
            sleep(1.0)
    raise TargetError(
        f"connection lost while watching and not back within {budget:.0f} s: {error.message}",
        kind="unreachable",
        host=target.name,
        hint="the server keeps running on the host; `variantctl watch VARIANT` attaches again",
    )
