"""PURE: profile events (written by the inlined recorder) → per-point breakdown, Chrome trace.

Events come from ``prof-<pid>.jsonl`` files (format in
:mod:`variantctl.runtime.profile_recorder`). A breakdown of one benchmark level has, per
profile point: calls, total, mean, P50/P99, its parent point (the instrumented
function it was called from, per call stack) and its share of the parent's
time; per parent, the *unaccounted* time (the parent's time not spent in an
instrumented child); and for the **step** — the top-level point with the most
time, e.g. ``EngineCore.step`` or ``LLMEngine.step`` — the *time between steps*:
the gaps between one step's end and the next one's start in the same thread
(scheduling, output processing, the API server's turn: the gap the second
seed found with Nsight). ``step period = step mean + mean gap`` is what a
decode token costs, so it is directly comparable with the measured TPOT.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from variantctl import jsondepth
from variantctl.jsontypes import Json, JsonObject

SCHEMA = "variantctl.profile/1"


@dataclass(frozen=True)
class Event:
    """One call of a profile point (times in monotonic nanoseconds of the host)."""

    name: str
    start_ns: int
    dur_ns: int
    pid: int
    tid: int
    parent: str | None
    depth: int

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns

    def to_json(self) -> list[Json]:
        return [self.name, self.start_ns, self.dur_ns, self.pid, self.tid, self.parent,
                self.depth]

    @classmethod
    def from_json(cls, data: Sequence[Any]) -> Event:  # a stored row, read as written
        name, start, dur, pid, tid, parent, depth = data
        return cls(str(name), int(start), int(dur), int(pid), int(tid),
                   None if parent is None else str(parent), int(depth))


@dataclass
class Parsed:
    """What a chunk of profile files held."""

    events: list[Event]
    dropped: int = 0
    #: lines that were not the recorder's (a truncated line, another program's file)
    bad_lines: int = 0


def parse_lines(text: str, pid: int) -> Parsed:
    """Events of one process's file (complete lines only; the caller keeps the rest)."""
    out = Parsed([])
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = jsondepth.loads(line)
        except ValueError:
            out.bad_lines += 1
            continue
        if isinstance(item, list) and len(item) == 6:
            name, start, dur, tid, parent, depth = item
            try:
                out.events.append(Event(str(name), int(start), int(dur), pid, int(tid),
                                        None if parent is None else str(parent), int(depth)))
            except (TypeError, ValueError):
                out.bad_lines += 1
        elif isinstance(item, dict):
            out.dropped += int(item.get("dropped", 0) or 0)
        else:
            out.bad_lines += 1
    return out


def _pct(sorted_values: Sequence[int], q: float) -> float:
    """Nearest-rank percentile (values in ns → ms)."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100.0 * len(sorted_values)) - 1))
    return sorted_values[k] / 1e6


def _gaps(steps: Iterable[Event]) -> list[int]:
    """Gaps between consecutive step calls of one thread (ns, never negative)."""
    by_thread: dict[tuple[int, int], list[Event]] = defaultdict(list)
    for e in steps:
        by_thread[(e.pid, e.tid)].append(e)
    gaps: list[int] = []
    for evs in by_thread.values():
        evs.sort(key=lambda e: e.start_ns)
        gaps.extend(max(0, b.start_ns - a.end_ns) for a, b in itertools.pairwise(evs))
    return gaps


def breakdown(events: Sequence[Event], *, dropped: int = 0) -> JsonObject:
    """The per-point breakdown of one level's events (a JSON-ready dict)."""
    by_name: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        by_name[e.name].append(e)
    totals = {n: sum(e.dur_ns for e in evs) for n, evs in by_name.items()}
    parents = {n: Counter(e.parent for e in evs).most_common(1)[0][0]
               for n, evs in by_name.items()}
    top = [n for n, p in parents.items() if p is None]
    step = max(top, key=lambda n: totals[n]) if top else None
    # time inside each parent spent in instrumented children (per actual call stack)
    child_time: dict[str, int] = defaultdict(int)
    for e in events:
        if e.parent is not None:
            child_time[e.parent] += e.dur_ns
    points: list[JsonObject] = []
    for name, evs in sorted(by_name.items(), key=lambda kv: -totals[kv[0]]):
        durs = sorted(e.dur_ns for e in evs)
        parent = parents[name]
        parent_total = totals.get(parent) if parent is not None else None
        points.append({
            "name": name,
            "parent": parent,
            "calls": len(evs),
            "total_s": totals[name] / 1e9,
            "mean_ms": totals[name] / len(evs) / 1e6,
            "p50_ms": _pct(durs, 50),
            "p99_ms": _pct(durs, 99),
            "share_of_parent": (totals[name] / parent_total) if parent_total else None,
            # points of another process (the worker's model runner under V1's engine
            # core) have no parent in their stack: their share of the step's time
            "share_of_step": (totals[name] / totals[step]) if step and totals[step] else None,
        })
    unaccounted: list[JsonObject] = [
        {"parent": name, "total_s": max(0, totals[name] - child_time[name]) / 1e9,
         "share_of_parent": max(0, totals[name] - child_time[name]) / totals[name]
         if totals[name] else 0.0}
        for name in sorted(child_time, key=lambda n: -totals.get(n, 0)) if name in totals
    ]
    out: JsonObject = {
        "schema": SCHEMA,
        "events": len(events),
        "dropped": dropped,
        "processes": sorted({e.pid for e in events}),
        "step": step,
        "points": points,
        "unaccounted": unaccounted,
        "between_steps": None,
        "step_period_ms": None,
    }
    if step is not None:
        steps = by_name[step]
        gaps = _gaps(steps)
        mean_step = totals[step] / len(steps) / 1e6
        mean_gap = (sum(gaps) / len(gaps) / 1e6) if gaps else 0.0
        out["between_steps"] = {
            "gaps": len(gaps),
            "total_s": sum(gaps) / 1e9,
            "mean_ms": mean_gap,
            "p50_ms": _pct(sorted(gaps), 50),
            "share_of_wall": (sum(gaps) / (sum(gaps) + totals[step])) if gaps else 0.0,
        }
        out["step_period_ms"] = mean_step + mean_gap
    return out


def chrome_trace(levels: Sequence[tuple[str, Sequence[Event]]]) -> JsonObject:
    """A Chrome trace (``chrome://tracing`` / Perfetto "JSON trace") of the events.

    Complete events (``ph: X``) in microseconds of the host's monotonic clock, one
    track per process and thread; each level is an instant marker (``ph: i``) at its
    first event, named by its label.
    """
    trace: list[JsonObject] = []
    pids: set[int] = set()
    for label, events in levels:
        if events:
            first = min(events, key=lambda e: e.start_ns)
            trace.append({"name": label, "ph": "i", "s": "g", "ts": first.start_ns / 1e3,
                          "pid": first.pid, "tid": first.tid})
        for e in events:
            pids.add(e.pid)
            trace.append({"name": e.name, "cat": "variantctl", "ph": "X",
                          "ts": e.start_ns / 1e3, "dur": e.dur_ns / 1e3, "pid": e.pid,
                          "tid": e.tid, "args": {"parent": e.parent, "level": label}})
    for pid in sorted(pids):
        trace.append({"name": "process_name", "ph": "M", "pid": pid,
                      "args": {"name": f"vLLM pid {pid}"}})
    return {"traceEvents": trace, "displayTimeUnit": "ms"}
