"""How far each host of a running sweep is: point i of N, and an ETA that learns from
the points already done (the live progress lines' numbers; ``terminal/sweepprogress.py``
prints them)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from variantctl.sweeps.plan import Plan, PlannedPoint

#: phases that end a point
ENDED = ("measured", "failed", "error", "interrupted")


class HostProgress:
    """Per host: its points in order, the ones done and the time they took."""

    def __init__(self, plan: Plan, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.lock = threading.Lock()
        self.by_host: dict[str, list[PlannedPoint]] = {}
        for p in plan.to_run:
            self.by_host.setdefault(p.host, []).append(p)
        self.started = {h: clock() for h in self.by_host}
        self.done: dict[str, set[str]] = {h: set() for h in self.by_host}
        self.spent: dict[str, float] = {h: 0.0 for h in self.by_host}

    def _eta(self, point: PlannedPoint) -> float:
        """What the host still has to do: this point and the next ones, each as its
        estimate, scaled by how the finished points compared with theirs."""
        points = self.by_host[point.host]
        done = [p for p in points if p.name in self.done[point.host]]
        scale = 1.0
        estimated = sum(p.eta_s for p in done)
        if done and estimated > 0:
            scale = self.spent[point.host] / estimated
        rest = [p for p in points if p.name not in self.done[point.host]]
        return scale * sum(p.eta_s for p in rest)

    def advance(self, point: PlannedPoint, phase: str) -> tuple[int, int, float | None]:
        """``point`` reached ``phase``: its place on its host (i, N) and the host's ETA
        (None for a point of no host of the plan)."""
        with self.lock:
            points = self.by_host.get(point.host, [point])
            i = next((k for k, p in enumerate(points, 1) if p.name == point.name), 1)
            if phase in ENDED:
                self.done.setdefault(point.host, set()).add(point.name)
                self.spent[point.host] = self.clock() - self.started.get(point.host,
                                                                          self.clock())
            eta = self._eta(point) if point.host in self.by_host else None
            return i, len(points), eta
