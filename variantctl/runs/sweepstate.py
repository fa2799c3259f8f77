"""A sweep's state file (``runs/sweeps/NAME.json``, schema ``variantctl.sweep/1``, shape
in docs/sweep.md "The state file") read back as one typed value, validated.

Pure: the run store reads the bytes (:meth:`RunStore.read_sweep_state`); the sweep
(``sweeps/state.py``, ``--resume``) and the report read this value, nothing parses
the file by hand. Every field is optional except ``schema`` and ``points`` (early
and hand-made state files have fewer), but a field that is there has its type: a
damaged file is one :class:`~variantctl.jsonfields.StoredFileError` naming the file
and the field (``points[2]: should be an object, got null``), exit 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from variantctl.jsonfields import Fields
from variantctl.runs.run import ARTIFACT_NAME, thaw

SWEEP_SCHEMA = "variantctl.sweep/1"

def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class SkipEntry:
    """Why a point was not run (``reason``: ``predicted`` or ``history``)."""

    reason: str = "skipped"
    rule: str | None = None
    signature: str | None = None
    message: str = ""
    run_id: str | None = None
    #: the other fields the plan wrote (kept for the state file)
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class StoppedEarly:
    """A stop rule ended the point's ladder at ``concurrency`` (of prompt set ``prompt``)."""

    concurrency: int | None
    prompt: str | None
    reason: str


@dataclass(frozen=True)
class PointEntry:
    """One point of the grid and how far it got."""

    name: str | None
    status: str
    index: int | None = None
    host: str | None = None
    point_key: str | None = None
    run_id: str | None = None
    run_dir: str | None = None
    benchmarks: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    verdict: str | None = None
    signature: str | None = None
    message: str = ""
    values: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    skip: SkipEntry | None = None
    stopped_early: StoppedEarly | None = None
    timings: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    #: the entry as stored (every field, for a resumed sweep to carry over)
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        """The entry as it was stored."""
        return thaw(self.raw)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class SweepDoc:
    """The whole state file."""

    sweep: str
    status: str
    started_at: str | None
    points: tuple[PointEntry, ...]
    finished_at: str | None = None

    @classmethod
    def from_json(cls, data: Any, *, source: str) -> SweepDoc:
        f = Fields(data, source)
        schema = f.data.get("schema")
        if schema != SWEEP_SCHEMA:
            raise f.error("schema", f"is {schema!r}: not a {SWEEP_SCHEMA} state file")
        return cls(sweep=f.text("sweep", ""), status=f.text("status", ""),
                   started_at=f.opt_text("started_at"), finished_at=f.opt_text("finished_at"),
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
    f.opt_text("phase")
    f.opt_text("base")
    f.opt_number("eta_s")
    f.opt_integer("prefix_cache_resets")
    capacity = f.opt_obj("capacity")  # bench: search — the capacity found
    if capacity is not None:
        capacity.opt_text("mode")
        capacity.opt_number("best_level")
        capacity.opt_text("limiting")
    f.items("findings")
    if f.has("resumed"):
        f.flag("resumed")
    return PointEntry(
        name=f.opt_text("name"), status=f.text("status", ""), index=f.opt_integer("index"),
        host=f.opt_text("host"),
        point_key=f.opt_text("point_key"), run_id=f.opt_text("run_id"),
        run_dir=f.opt_text("run_dir"), benchmarks=_names(f, "benchmarks"),
        profiles=_names(f, "profiles"), verdict=f.opt_text("verdict"),
        signature=f.opt_text("signature"), message=f.opt_text("message") or "",
        values=_frozen(f.mapping("values", {})),
        skip=None if skip is None else SkipEntry(
            reason=skip.opt_text("reason") or "skipped", rule=skip.opt_text("rule"),
            signature=skip.opt_text("signature"), message=skip.opt_text("message") or "",
            run_id=skip.opt_text("run_id"), raw=_frozen(skip.data)),
        stopped_early=None if stop is None else StoppedEarly(
            concurrency=stop.opt_integer("concurrency"), prompt=stop.opt_text("prompt"),
            reason=stop.opt_text("reason") or ""),
        timings=MappingProxyType(f.number_map("timings")),
        raw=_frozen(f.data),
    )
