"""The live progress of ``sweep`` and ``bisect`` on stderr: one line per phase change,
point i/N per host, an ETA that learns from the points already done."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from variantctl.env import Environment
from variantctl.logs.bounded import visible_lines
from variantctl.sweeps.plan import Plan, PlannedPoint


class ProgressPrinter:
    """Live progress on stderr, one line per phase change: point i/N per host, ETA."""

    def __init__(self, env: Environment, plan: Plan, clock: Callable[[], float] = time.monotonic):
        self.env, self.clock = env, clock
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

    def phase(self, point: PlannedPoint, phase: str, detail: str = "") -> None:
        from variantctl.render.sweep import progress_line

        with self.lock:
            points = self.by_host.get(point.host, [point])
            i = next((k for k, p in enumerate(points, 1) if p.name == point.name), 1)
            if phase in ("measured", "failed", "error", "interrupted"):
                self.done.setdefault(point.host, set()).add(point.name)
                self.spent[point.host] = self.clock() - self.started.get(point.host,
                                                                          self.clock())
            eta = self._eta(point) if point.host in self.by_host else None
            line = progress_line(point.host, i, len(points), point, phase, detail, eta)
            # a detail can quote the server (an error body, a log line): filtered
            self.env.stderr.print(visible_lines(line), markup=False, highlight=False,
                                  soft_wrap=True)

    def note(self, text: str) -> None:
        with self.lock:
            self.env.stderr.print(visible_lines(text), markup=False, highlight=False,
                                  soft_wrap=True)
