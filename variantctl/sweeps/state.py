"""The journal of a running sweep, kept by its host threads: ``runs/sweeps/NAME.json``.

Shape documented in docs/sweep.md (schema ``variantctl.sweep/1``). The run store writes
it (:meth:`RunStore.write_sweep_state`, atomically) and reads it back, validated, as
:class:`~variantctl.runs.sweepstate.SweepDoc` (here for ``--resume``, in ``variantctl
report``). Every change is written at once, so a killed variantctl leaves the last
phase it reached, and ``sweep --resume`` continues from there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType

from variantctl.jsonfields import StoredFileError
from variantctl.runs.store import RunStore
from variantctl.runs.sweepstate import SWEEP_SCHEMA, PointEntry, SkipEntry, SweepDoc
from variantctl.sweeps.plan import Plan, PlannedPoint

SCHEMA = SWEEP_SCHEMA
#: point statuses that --resume does not run again
DONE = frozenset({"measured", "failed", "skipped"})


def read_state(store: RunStore, path: Path) -> SweepDoc | None:
    """The state, read through the command's run store: None when there is none; an
    error naming the file and field (exit 2) when it is damaged."""
    try:
        return store.read_sweep_state(path)
    except StoredFileError as exc:
        exc.hint = "delete it to start the sweep afresh"
        raise


def point_entry(p: PlannedPoint) -> PointEntry:
    """A planned point's first entry: ``pending``, or ``skipped`` with why."""
    return PointEntry(
        index=p.point.index, name=p.name, base=p.point.base, host=p.host,
        values=MappingProxyType(dict(p.point.values)), point_key=p.point_key,
        status="skipped" if not p.run else "pending",
        skip=None if p.skip is None else SkipEntry(
            reason=p.skip.reason, rule=p.skip.rule, signature=p.skip.signature,
            message=p.skip.message, run_id=p.skip.run_id),
        findings=tuple(MappingProxyType(f.to_dict()) for f in p.findings),
        eta_s=round(p.eta_s, 1))


class SweepState:
    """The journal of one sweep run, shared by the host threads (one lock, one file):
    a frozen :class:`SweepDoc`, replaced whole at every change and written at once."""

    def __init__(self, store: RunStore, path: Path, doc: SweepDoc,
                 now: Callable[[], datetime]):
        self.store, self.path, self.doc, self.now = store, path, doc, now
        self._lock = threading.Lock()

    @classmethod
    def begin(cls, path: Path, plan: Plan, now: Callable[[], datetime],
              previous: SweepDoc | None, *, store: RunStore) -> SweepState:
        """A state for ``plan`` at ``path``, written through the command's ``store``; with
        ``previous`` (--resume) the points it finished keep their entries (matched by
        point key, so an edited grid reruns what changed)."""
        spec = plan.spec
        done = kept_on_resume(previous)
        points = []
        for p in plan.points:
            old = done.get(p.point_key)
            if old is not None:
                points.append(replace(old, index=p.point.index, resumed=True))
            else:
                points.append(point_entry(p))
        stamp = now().isoformat()
        doc = SweepDoc(
            sweep=spec.name, source=spec.source, description=spec.description,
            status="running",
            started_at=(previous.started_at or stamp) if previous is not None else stamp,
            updated_at=stamp, finished_at=None, hosts=tuple(plan.hosts),
            bench=tuple(MappingProxyType(b) for b in spec.bench_json()),
            profile=spec.profile, rank=spec.rank,
            stop=MappingProxyType(spec.stop.to_json()), points=tuple(points))
        state = cls(store, path, doc, now)
        state.save()
        return state

    def entry(self, name: str) -> PointEntry:
        with self._lock:
            return self.doc.point(name)

    def update(self, name: str, change: Callable[[PointEntry], PointEntry]) -> None:
        """Point ``name``'s entry becomes ``change(entry)`` (made with ``replace``)."""
        with self._lock:
            self.doc = replace(self.doc, points=tuple(
                change(e) if e.name == name else e for e in self.doc.points))
            if not any(e.name == name for e in self.doc.points):
                raise KeyError(name)
            self._save_locked()

    def finish(self, status: str) -> None:
        with self._lock:
            self.doc = replace(self.doc, status=status, finished_at=self.now().isoformat()
                               if status == "done" else self.doc.finished_at)
            self._save_locked()

    def save(self) -> None:
        with self._lock:
            self._save_locked()

    def _save_locked(self) -> None:
        self.doc = replace(self.doc, updated_at=self.now().isoformat())
        self.store.write_sweep_state(self.path, self.doc.to_json())

    def snapshot(self) -> SweepDoc:
        with self._lock:
            return self.doc


def kept_on_resume(previous: SweepDoc | None) -> dict[str, PointEntry]:
    """The points an earlier run finished that ``--resume`` keeps, by point key (while
    their runs are still archived): they are not run again."""
    kept = {}
    for entry in previous.points if previous is not None else ():
        if entry.status in DONE - {"skipped"} and entry.point_key and _still_there(entry):
            kept[entry.point_key] = entry
    return kept


def _still_there(entry: PointEntry) -> bool:
    """A finished point counts only while its run (and benchmarks) are still archived."""
    run_dir = entry.run_dir
    if not run_dir or not Path(run_dir, "run.json").is_file():
        return False
    return all(Path(run_dir, b).is_file() for b in entry.benchmarks)
