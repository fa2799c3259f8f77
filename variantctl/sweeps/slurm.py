"""Sweeps on a SLURM host: every point its own job, up to ``slurm.max_jobs`` at once.

variantctl schedules nothing itself: it submits up to ``max_jobs`` points of the
host and lets SLURM place them (as many nodes as the partition gives); a point
whose job ends makes room for the next one. The plan, skip and resume rules are
the sweep's own (:mod:`variantctl.sweeps.executor`); what differs:

- :class:`SlurmPointRunner` reattaches to a job of the same point that is still
  queued or running (a variantctl killed mid-sweep leaves them; ``--resume`` finds
  them through their server records on the login node) instead of submitting it
  twice, then benchmarks and stops it as any point;
- :func:`for_each_point` runs a host's points ``max_jobs`` at a time (one at a time
  on any other host: one server per host).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from variantctl.hostmodel import Host
from variantctl.launch.core import LaunchOptions, LaunchResult, LaunchUI, watch_variant
from variantctl.launch.launcher import launcher_for
from variantctl.launch.servers import layout_for, load_record
from variantctl.sweeps.executor import TargetPointRunner
from variantctl.sweeps.plan import PlannedPoint


class SlurmPointRunner(TargetPointRunner):
    """A point as a SLURM job (launch, bench and stop as :class:`TargetPointRunner`)."""

    def start(self, point: PlannedPoint, opts: LaunchOptions, ui: LaunchUI) -> LaunchResult:
        layout = layout_for(self.target, self.host)
        record = load_record(self.target, layout, point.name)
        if record is not None and launcher_for(self.host).probe(
                self.target, record, health=False).alive:
            self.ui.note(f"{point.name}: reattaching to SLURM job {record.pid} "
                         "(submitted by an earlier run of this sweep)")
            return watch_variant(self.target, self.host, point.name, point.variant, opts,
                                 self.ctx, ui)
        return super().start(point, opts, ui)


def runner_class(host: Host) -> type[TargetPointRunner]:
    """The point runner of ``host``: jobs on a SLURM host, else servers on the host."""
    return SlurmPointRunner if host.slurm is not None else TargetPointRunner


def leaves_leftovers_running(host: Host) -> bool:
    """On a SLURM host, jobs an earlier run left are reattached, not stopped."""
    return host.slurm is not None


def for_each_point(host: Host, points: Sequence[PlannedPoint], stop: threading.Event,
                   work: Callable[[PlannedPoint], None]) -> None:
    """``work(point)`` for every point until ``stop``: ``slurm.max_jobs`` at once on a SLURM
    host, one after the other elsewhere. An error of one point's work is raised after
    the others finished (each point's own failures are values, never exceptions)."""
    parallel = host.slurm.max_jobs if host.slurm is not None else 1
    if parallel <= 1:
        for p in points:
            if stop.is_set():
                return
            work(p)
        return

    def guarded(p: PlannedPoint) -> None:
        if not stop.is_set():
            work(p)

    with ThreadPoolExecutor(max_workers=min(parallel, max(1, len(points))),
                            thread_name_prefix=f"sweep-{host.name}") as pool:
        futures = [pool.submit(guarded, p) for p in points]
    for f in futures:
        f.result()
