"""The state of a running sweep, kept by its host threads: ``runs/sweeps/NAME.json``.

Shape documented in docs/sweep.md (schema ``variantctl.sweep/1``). The run store writes
it (:meth:`RunStore.write_sweep_state`, atomically) and reads it back, validated, as
:class:`~variantctl.runs.sweepstate.SweepDoc` (here for ``--resume``, in ``variantctl
report``). Every change is written at once, so a killed variantctl leaves the last
phase it reached, and ``sweep --resume`` continues from there.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from variantctl.jsonfields import StoredFileError
from variantctl.runs.store import RunStore
from variantctl.runs.sweepstate import SWEEP_SCHEMA, PointEntry, SweepDoc
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


def point_entry(p: PlannedPoint) -> dict[str, Any]:
    return {
        "index": p.point.index, "name": p.name, "base": p.point.base, "host": p.host,
        "values": dict(p.point.values), "point_key": p.point_key,
        "status": "skipped" if not p.run else "pending", "phase": None,
        "skip": p.skip.to_json() if p.skip else None,
        "findings": [f.to_dict() for f in p.findings], "eta_s": round(p.eta_s, 1),
        "run_id": None, "run_dir": None, "benchmarks": [], "profiles": [], "verdict": None,
        "signature": None, "message": "", "stopped_early": None,
        "prefix_cache_resets": 0, "timings": {}, "capacity": None,
    }


class SweepState:
    """The state of one sweep run, shared by the host threads (one lock, one file)."""

    def __init__(self, store: RunStore, path: Path, doc: dict[str, Any],
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
                points.append({**old.to_json(), "index": p.point.index, "resumed": True})
            else:
                points.append(point_entry(p))
        stamp = now().isoformat()
        doc = {
            "schema": SCHEMA, "sweep": spec.name, "source": spec.source,
            "description": spec.description, "status": "running",
            "started_at": (previous.started_at or stamp) if previous is not None else stamp,
            "updated_at": stamp, "finished_at": None, "hosts": list(plan.hosts),
            "bench": spec.bench_json(), "profile": spec.profile, "rank": spec.rank,
            "stop": spec.stop.to_json(), "points": points,
        }
        state = cls(store, path, doc, now)
        state.save()
        return state

    def entry(self, name: str) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._find(name))

    def _find(self, name: str) -> dict[str, Any]:
        for entry in self.doc["points"]:
            if entry["name"] == name:
                return entry  # type: ignore[no-any-return]
        raise KeyError(name)

    def update(self, name: str, **fields: Any) -> None:
        with self._lock:
            self._find(name).update(fields)
            self._save_locked()

    def finish(self, status: str) -> None:
        with self._lock:
            self.doc["status"] = status
            if status == "done":
                self.doc["finished_at"] = self.now().isoformat()
            self._save_locked()

    def save(self) -> None:
        with self._lock:
            self._save_locked()

    def _save_locked(self) -> None:
        self.doc["updated_at"] = self.now().isoformat()
        self.store.write_sweep_state(self.path, self.doc)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self.doc)


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
