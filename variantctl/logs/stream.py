"""Streaming classification: feed lines as the server prints them.

The same engine as whole-file mode; a verdict is returned the moment it is
decided (a specific failure, or ready), and :meth:`StreamClassifier.tick` turns
"no new line for ``stall_seconds``" into a hang verdict naming the phase.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from variantctl.logs.engine import Engine, scan_regex
from variantctl.logs.facts import Facts
from variantctl.logs.model import Catalog
from variantctl.logs.normalize import normalize
from variantctl.logs.result import Evidence, Result, Verdict

_HISTORY = 64


class StreamClassifier:
    """Incremental classifier over one server's log lines (pure: the caller supplies the
    lines and the clock)."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        stall_seconds: float | None = None,
        clock: Callable[[], float],
        settle_seconds: float = 0.5,
    ):
        self.catalog = catalog
        self.stall_seconds = stall_seconds
        #: a match whose optional captures may continue on a hard-wrapped next line waits
        #: for that line, or this long without one (see :meth:`tick`)
        self.settle_seconds = settle_seconds
        self._clock = clock
        self._rx = scan_regex(catalog)
        self._recent: deque[tuple[int, str]] = deque(maxlen=_HISTORY)
        self._engine = Engine(catalog, self._history)
        self._lineno = 0
        self._first_stamp = False
        self._last_activity = clock()
        self._verdict: Verdict | None = None

    def _history(self, count: int) -> list[tuple[int, str]]:
        # the line being processed is appended after processing, so this is "before it"
        if count <= 0:
            return []
        return list(self._recent)[-count:]

    @property
    def phase(self) -> str:
        """The startup phase reached so far (``not-started`` before any marker)."""
        return self._engine.phase

    @property
    def facts(self) -> Facts:
        """Facts known so far."""
        return self._engine.facts.snapshot()

    @property
    def last_line(self) -> str | None:
        """The last non-blank line fed (original text)."""
        ev = self._engine.last_line
        return ev.text if ev else None

    @property
    def verdict(self) -> Verdict | None:
        """The verdict returned by :meth:`feed` or :meth:`tick`, if any yet."""
        return self._verdict

    def feed(self, line: str) -> Verdict | None:
        """Consume one line (a trailing newline is ignored). Returns a verdict only on the
        line that decides it (a specific failure or ready); later lines return None."""
        line = line.rstrip("\r\n") if line.endswith("\n") else line
        self._lineno += 1
        self._last_activity = self._clock()
        eng = self._engine
        eng.lines = self._lineno
        if line.strip():
            eng.last_line = Evidence(self._lineno, line)
        if not self._first_stamp:
            self._first_stamp = eng.note_first_timestamp(normalize(line))
        new = []
        if eng.wants_next or self._rx.search(line.lower()) is not None:
            new = eng.process(self._lineno, line)
            self._rx = eng.scan_pattern  # narrower once the server is seen serving
        self._recent.append((self._lineno, line))
        if self._verdict is not None:
            return None
        decisive = eng.decisive(new)
        if decisive is None:
            return None
        self._verdict = eng.result(end="eof")
        return self._verdict

    def activity(self) -> None:
        """Count now as progress (no line came because the server could not run yet,
        e.g. a SLURM job waiting in the queue): the stall clock restarts."""
        self._last_activity = self._clock()

    def quiet_for(self) -> float:
        """Seconds since the last line arrived (or :meth:`activity` was called)."""
        return self._clock() - self._last_activity

    def tick(self) -> Verdict | None:
        """Call periodically (e.g. every 0.1-1 s). Returns a verdict held back for a possible
        continuation line once ``settle_seconds`` passed without one, and once no line
        arrived for ``stall_seconds`` (and nothing was decided) the stall verdict: the hang
        of the current phase, or the generic failure already printed."""
        if self._verdict is not None:
            return None
        quiet = self._clock() - self._last_activity
        if quiet >= self.settle_seconds and self._engine.has_deferred:
            decisive = self._engine.decisive(self._engine.flush())
            if decisive is not None:
                self._verdict = self._engine.result(end="eof")
                return self._verdict
        if self.stall_seconds is None or quiet < self.stall_seconds:
            return None
        result = self._engine.result(end="stalled")
        self._verdict = result
        return result

    def finish(self, exited: bool) -> Result:
        """The final result at the end of the stream (``exited``: the process is gone)."""
        return self._engine.result(end="exited" if exited else "running")
