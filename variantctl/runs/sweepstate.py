"""A sweep's journal (``runs/sweeps/NAME.json``, schema ``variantctl.sweep/1``, shape
in docs/sweep.md "The state file") as one typed value, and its one codec.

Pure: the run store reads and writes the bytes (:meth:`RunStore.read_sweep_state`,
:meth:`RunStore.write_sweep_state`); the sweep (``sweeps/state.py``: every change is a
new frozen entry made with :func:`dataclasses.replace`), ``--resume``, the sweep table,
``bisect`` and the report read this value, nothing parses the file by hand. Every
field is optional except ``schema`` and ``points`` (early and hand-made state files
have fewer), but a field that is there has its type: a damaged file is one
:class:`~variantctl.jsonfields.StoredFileError` naming the file and the field
(``points[2]: should be an object, got null``), exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from variantctl.jsonfields import Fields
from variantctl.jsontypes import Json, JsonMapping, JsonObject
from variantctl.runs.run import ARTIFACT_NAME, thaw

SWEEP_SCHEMA = "variantctl.sweep/1"
#: the statuses of a point: planned (``pending``) or not run (``skipped``), running,
#: and how it ended
STATUSES = ("pending", "skipped", "running", "measured", "failed", "error", "interrupted")


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _empty() -> JsonMapping:
    return MappingProxyType({})


@dataclass(frozen=True)
class SkipEntry:
    """Why a point was not run (``reason``: ``predicted`` or ``history``)."""

    reason: str = "skipped"
    rule: str | None = None
    signature: str | None = None
    message: str = ""
    run_id: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"reason": self.reason, "signature": self.signature,
                           "message": self.message}
        if self.reason == "history":  # sweeps/plan.py's HISTORY: the failed run it names
            out["run_id"] = self.run_id
        else:
            out["rule"] = self.rule
        return out


@dataclass(frozen=True)
class StoppedEarly:
    """A stop rule ended the point's ladder at ``concurrency`` (of prompt set ``prompt``)."""

    concurrency: int | None
    prompt: str | None
    reason: str

    def to_json(self) -> JsonObject:
        return {"prompt": self.prompt, "concurrency": self.concurrency, "reason": self.reason}


@dataclass(frozen=True)
class Capacity:
    """``bench: search``: the capacity the point's first search found (the summary of
    its :class:`~variantctl.bench.search.SearchResult`)."""

    prompt: str | None
    mode: str | None
    best_level: float | None
    limiting: str | None

    def to_json(self) -> JsonObject:
        return {"prompt": self.prompt, "mode": self.mode, "best_level": self.best_level,
                "limiting": self.limiting}


@dataclass(frozen=True)
class PointEntry:
    """One point of the grid and how far it got."""

    name: str | None
    status: str
    index: int | None = None
    base: str | None = None
    host: str | None = None
    values: JsonMapping = field(default_factory=_empty)
    point_key: str | None = None
    phase: str | None = None
    skip: SkipEntry | None = None
    findings: tuple[JsonMapping, ...] = ()
    eta_s: float | None = None
    run_id: str | None = None
    run_dir: str | None = None
    benchmarks: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    verdict: str | None = None
    signature: str | None = None
    message: str = ""
    stopped_early: StoppedEarly | None = None
    #: levels preceded by a successful ``POST /reset_prefix_cache``
    prefix_cache_resets: int = 0
    timings: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    capacity: Capacity | None = None
    #: kept from an earlier run by ``--resume``
    resumed: bool = False

    def to_json(self) -> JsonObject:
        out: JsonObject = {
            "index": self.index, "name": self.name, "base": self.base, "host": self.host,
            "values": thaw(self.values), "point_key": self.point_key, "status": self.status,
            "phase": self.phase, "skip": None if self.skip is None else self.skip.to_json(),
            "findings": [thaw(f) for f in self.findings], "eta_s": self.eta_s,
            "run_id": self.run_id, "run_dir": self.run_dir,
            "benchmarks": list(self.benchmarks), "profiles": list(self.profiles),
            "verdict": self.verdict, "signature": self.signature, "message": self.message,
            "stopped_early": None if self.stopped_early is None
            else self.stopped_early.to_json(),
            "prefix_cache_resets": self.prefix_cache_resets, "timings": dict(self.timings),
            "capacity": None if self.capacity is None else self.capacity.to_json(),
        }
        if self.resumed:
            out["resumed"] = True
        return out


@dataclass(frozen=True)
class SweepDoc:
    """The whole journal."""

    sweep: str
    status: str
    started_at: str | None
    points: tuple[PointEntry, ...]
    finished_at: str | None = None
    updated_at: str | None = None
    source: str = ""
    description: str = ""
    hosts: tuple[str, ...] = ()
    #: the sweep's benchmark settings, one object per prompt set, as the file gives them
    bench: tuple[JsonMapping, ...] = ()
    profile: bool = False
    rank: str | None = None
    stop: JsonMapping = field(default_factory=_empty)

    def point(self, name: str) -> PointEntry:
        for entry in self.points:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def to_json(self) -> JsonObject:
        return {
            "schema": SWEEP_SCHEMA, "sweep": self.sweep, "source": self.source,
            "description": self.description, "status": self.status,
            "started_at": self.started_at, "updated_at": self.updated_at,
            "finished_at": self.finished_at, "hosts": list(self.hosts),
            "bench": [thaw(b) for b in self.bench], "profile": self.profile,
            "rank": self.rank, "stop": thaw(self.stop),
            "points": [p.to_json() for p in self.points],
        }

    @classmethod
    def from_json(cls, data: Any, *, source: str) -> SweepDoc:
        f = Fields(data, source)
        schema = f.data.get("schema")
        if schema != SWEEP_SCHEMA:
            raise f.error("schema", f"is {schema!r}: not a {SWEEP_SCHEMA} state file")
        bench = tuple(_frozen(b.data) for b in f.objs("bench"))
        return cls(sweep=f.text("sweep", ""), status=f.text("status", ""),
                   started_at=f.opt_text("started_at"), finished_at=f.opt_text("finished_at"),
                   updated_at=f.opt_text("updated_at"), source=f.opt_text("source") or "",
                   description=f.opt_text("description") or "", hosts=f.texts("hosts"),
                   bench=bench, profile=f.data.get("profile") is True and f.flag("profile"),
                   rank=f.opt_text("rank"),
                   stop=_frozen(f.opt_mapping("stop") or {}),
                   points=tuple(_point(p) for p in f.objs("points", Fields.REQUIRED)))


def _names(f: Fields, key: str) -> tuple[str, ...]:
    names = f.texts(key)
    for i, name in enumerate(names):
        if ARTIFACT_NAME.fullmatch(name) is None:
            raise f.error(f"{key}[{i}]", f"{name!r} is not a file name in the run directory")
    return names


def _point(f: Fields) -> PointEntry:
    skip = f.opt_obj("skip")
    stop = f.opt_obj("stopped_early")
    capacity = f.opt_obj("capacity")  # bench: search — the capacity found
    findings: tuple[Json, ...] = tuple(_frozen(x) for x in f.items("findings"))
    return PointEntry(
        name=f.opt_text("name"), status=f.text("status", ""), index=f.opt_integer("index"),
        base=f.opt_text("base"), host=f.opt_text("host"),
        values=_frozen(f.mapping("values", {})), point_key=f.opt_text("point_key"),
        phase=f.opt_text("phase"),
        skip=None if skip is None else SkipEntry(
            reason=skip.opt_text("reason") or "skipped", rule=skip.opt_text("rule"),
            signature=skip.opt_text("signature"), message=skip.opt_text("message") or "",
            run_id=skip.opt_text("run_id")),
        findings=tuple(x for x in findings if isinstance(x, Mapping)),
        eta_s=f.opt_number("eta_s"), run_id=f.opt_text("run_id"),
        run_dir=f.opt_text("run_dir"), benchmarks=_names(f, "benchmarks"),
        profiles=_names(f, "profiles"), verdict=f.opt_text("verdict"),
        signature=f.opt_text("signature"), message=f.opt_text("message") or "",
        stopped_early=None if stop is None else StoppedEarly(
            concurrency=stop.opt_integer("concurrency"), prompt=stop.opt_text("prompt"),
            reason=stop.opt_text("reason") or ""),
        prefix_cache_resets=f.opt_integer("prefix_cache_resets") or 0,
        timings=MappingProxyType(f.number_map("timings")),
        capacity=None if capacity is None else Capacity(
            prompt=capacity.opt_text("prompt"), mode=capacity.opt_text("mode"),
            best_level=capacity.opt_number("best_level"),
            limiting=capacity.opt_text("limiting")),
        resumed=f.flag("resumed", False),
    )
