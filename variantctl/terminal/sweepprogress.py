"""The live progress of ``sweep``, ``bisect`` and ``tune`` on stderr: one line per phase change,
point i/N per host, an ETA that learns from the points already done
(:class:`variantctl.sweeps.progress.HostProgress`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from variantctl.env import Environment
from variantctl.logs.bounded import visible_lines
from variantctl.sweeps.plan import Plan, PlannedPoint
from variantctl.sweeps.progress import HostProgress


class ProgressPrinter:
    """Live progress on stderr, one line per phase change: point i/N per host, ETA."""

    def __init__(self, env: Environment, plan: Plan, clock: Callable[[], float] = time.monotonic):
        self.env = env
        self.progress = HostProgress(plan, clock)
        self.lock = threading.Lock()

    def phase(self, point: PlannedPoint, phase: str, detail: str = "") -> None:
        from variantctl.render.sweep import progress_line

        i, n, eta = self.progress.advance(point, phase)
        # a detail can quote the server (an error body, a log line): filtered
        self.note(progress_line(point.host, i, n, point, phase, detail, eta))

    def note(self, text: str) -> None:
        with self.lock:
            self.env.stderr.print(visible_lines(text), markup=False, highlight=False,
                                  soft_wrap=True)
