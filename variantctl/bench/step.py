"""The one measure-and-record step: find the server (or relaunch it with profiling),
run the ladder with the caller's hooks, record the benchmark and the profile into the
launch's run.

``bench`` (:mod:`variantctl.usecases.bench`) and every sweep point
(:mod:`variantctl.sweeps.executor`, so ``bisect`` and a sweep's capacity search, which
run as sweep points, too) measure through :func:`measure_and_record`, so a number from
any of them was measured and stored the same way. :func:`record_benchmark` is the one
call that writes a benchmark file (through the run store); :func:`record_profile` the
one that writes a profile file.

EFFECTFUL: it connects to the host and writes into the run store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from variantctl.bench.session import LadderHooks, Measurement, RunOutcome, ServerDeath
from variantctl.benchparams import BenchParams
from variantctl.hostmodel import Host
from variantctl.logs.model import Catalog
from variantctl.runs.record import ServerRecord
from variantctl.targets.base import Target

if TYPE_CHECKING:
    from variantctl.bench.model import BenchResult
    from variantctl.bench.profile import Collector
    from variantctl.bench.runner import LiveProgress
    from variantctl.runs.store import RunStore

#: runs the ladder's coroutine to its outcome (``asyncio.run``; a sweep's cancels it on
#: its stop flag)
Runner = Callable[[Coroutine[Any, Any, RunOutcome]], RunOutcome]
#: relaunches the variant with profiling on: (its record, its profile directory)
Relaunch = Callable[[], tuple[ServerRecord, str]]


@dataclass(frozen=True)
class Server:
    """A running server to measure, on its host's open Target."""

    target: Target
    host: Host
    record: ServerRecord
    #: with profiling: the collector that reads its events level by level
    profile: Collector | None = None


def find(target: Target, host: Host, variant: str, *, profile: bool = False,
         relaunch: Relaunch | None = None,
         note: Callable[[str], None] = lambda _text: None) -> Server:
    """The running server of ``variant``; with ``profile``, one with VARIANTCTL_PROFILE
    set, relaunched through ``relaunch`` when it is not running or runs without it (the
    launch needs the project's catalog, which the caller holds)."""
    from variantctl.bench.profile import ENV, Collector, server_profile_dir
    from variantctl.bench.session import find_server
    from variantctl.errors import TargetError, VariantctlError

    if not profile:
        return Server(target, host, find_server(target, host, variant))
    assert relaunch is not None, "profiling needs a relaunch"
    try:
        record = find_server(target, host, variant)
    except TargetError:
        raise  # the host itself is the problem: a launch would not fare better
    except VariantctlError as exc:  # not running, still starting, not answering
        from variantctl.exitcodes import ExitCode

        if exc.exit_code == ExitCode.CONFLICT:
            raise  # another process serves its port: a relaunch would not get it back
        note(f"{variant}: {exc.message}; launching it with profiling on")
        record, directory = relaunch()
        return Server(target, host, record, Collector(target, directory))
    found = server_profile_dir(target, record)
    if found:
        return Server(target, host, record, Collector(target, found))
    note(f"{variant}: its server ({record.ident}) runs without {ENV}; relaunching it "
         "with profiling on")
    record, directory = relaunch()
    return Server(target, host, record, Collector(target, directory))


def own_run_dir(record: ServerRecord | None, runs_root: Path) -> Path | None:
    """The launch's run directory a measurement of ``record`` is recorded into: None
    without one here, or when the launch is another project's (never written through)."""
    from variantctl.launch.servers import foreign_owner

    if record is None or not record.run_dir or foreign_owner(record, runs_root):
        return None
    run_dir = Path(record.run_dir)
    return run_dir if run_dir.is_dir() else None


@dataclass(frozen=True)
class Into:
    """Where the step records: the run store and the launch's run directory in it."""

    runs: RunStore
    run_dir: Path
    now: Callable[[], datetime]


def record_benchmark(into: Into, result: BenchResult, death: ServerDeath | None) -> Path:
    """``bench-<stamp>.json`` in the run, listed in its run.json: the one call that
    writes a benchmark file."""
    return into.runs.attach_benchmark(into.run_dir, result, into.now(),
                                      death=None if death is None else death.to_json())


def record_profile(into: Into, collector: Collector, label: str) -> Path:
    """``profile-<stamp>.json`` (raw events and breakdowns) in the run."""
    from variantctl.bench.profile import raw_document

    when = into.now()
    doc = raw_document(collector, label, when.isoformat())
    return into.runs.attach_profile(into.run_dir, doc, when)


def measure_and_record(server: Server, label: str, params: BenchParams, started_at: str, *,
                       into: Into | None, signatures: Catalog | None,
                       hooks: LadderHooks | None = None, run: Runner = asyncio.run,
                       on_progress: Callable[[LiveProgress], None] | None = None,
                       on_note: Callable[[str], None] | None = None,
                       clock: Callable[[], float] = time.monotonic,
                       trim_ladder: bool = False) -> RunOutcome:
    """Reach ``server`` through its host, run the ladder (``hooks`` between the levels)
    and record the benchmark ``into`` the run (the outcome's ``stored``; when the store
    refuses the write, its ``store_error``, and the measured result is still returned). With
    ``trim_ladder`` the stored ladder lists only the levels measured (a stop rule ended
    it early); a search's levels are its probes, never trimmed."""
    from variantctl.bench.session import measure, reach
    from variantctl.launch.launcher import launcher_for

    record = server.record
    address = launcher_for(server.host).address(server.target, record)
    with reach(server.target, record.port, address) as base_url:
        m = Measurement(label=label, base_url=base_url, params=params, target=server.target,
                        host=server.host, record=record, on_progress=on_progress,
                        on_note=on_note, clock=clock, signatures=signatures,
                        profile=server.profile, hooks=hooks)
        outcome = run(measure(m, started_at))
    if trim_ladder and params.search is None:
        done = tuple(dict.fromkeys(lv.concurrency for lv in outcome.result.levels))
        result = outcome.result
        outcome = dataclasses.replace(outcome, result=dataclasses.replace(
            result, params=dataclasses.replace(result.params,
                                               concurrency=done or params.concurrency)))
    if into is not None:
        from variantctl.errors import VariantctlError

        try:
            stored = record_benchmark(into, outcome.result, outcome.death)
        except VariantctlError as exc:  # a full disk: the measured figures are kept
            return dataclasses.replace(outcome, store_error=exc)
        outcome = dataclasses.replace(outcome, stored=stored)
    return outcome
