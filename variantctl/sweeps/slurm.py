"""Sweeps on a SLURM host: every point its own job, up to ``slurm.max_jobs`` at once.

variantctl schedules nothing itself: it submits up to ``max_jobs`` points of the
host and lets SLURM place them (as many nodes as the partition gives); a point
whose job ends makes room for the next one. The plan, skip, resume and reattach
rules are the sweep's own (:mod:`variantctl.sweeps.executor`: a job a killed
variantctl left queued or running is reattached, as a server on any host is);
what differs is :func:`for_each_point`, which runs a host's points ``max_jobs`` at
a time (one at a time on any other host: one server per host).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from variantctl.hostmodel import Host
from variantctl.sweeps.plan import PlannedPoint


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
