"""A stored profile file (``profile-<stamp>.json``, schema ``variantctl.profile-run/1``,
written by ``bench --profile`` and ``profile: true`` sweeps), read back validated.

Pure: the run store reads the bytes (:meth:`RunStore.read_profile`). Every field the
``profile`` command, the report and the Chrome trace use is checked here, so a
damaged file is one :class:`~variantctl.jsonfields.StoredFileError` naming the file
and the field (``levels[0]: should be an object, got a number``), never a crash in a
renderer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from variantctl.jsonfields import Fields, kind_of

PROFILE_RUN_SCHEMA = "variantctl.profile-run/1"

#: one raw event: name, start_ns, dur_ns, pid, tid, parent, depth
RawEvent = tuple[str, int, int, int, int, str | None, int]


@dataclass(frozen=True)
class ProfileLevel:
    """One level's events and their breakdown (``variantctl.profile/1``)."""

    label: str
    concurrency: int | None
    repeat: int
    dropped: int
    events: tuple[RawEvent, ...]
    #: the breakdown as stored (only validated fields), None when the level has none
    breakdown: Mapping[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "concurrency": self.concurrency, "repeat": self.repeat,
                "dropped": self.dropped, "events": [list(e) for e in self.events],
                "breakdown": None if self.breakdown is None else _thaw(self.breakdown)}


@dataclass(frozen=True)
class StoredProfile:
    """One ``profile-<stamp>.json`` of a run."""

    name: str
    variant: str
    when: str
    directory: str
    levels: tuple[ProfileLevel, ...]

    @classmethod
    def from_json(cls, name: str, data: Any, *, source: str) -> StoredProfile:
        f = Fields(data, source)
        schema = f.data.get("schema", PROFILE_RUN_SCHEMA)  # early files had none
        if schema != PROFILE_RUN_SCHEMA:
            raise f.error("schema", f"is {schema!r}: not a {PROFILE_RUN_SCHEMA} profile file")
        return cls(name=name, variant=f.text("variant", ""), when=f.text("when", ""),
                   directory=f.text("directory", ""),
                   levels=tuple(_level(lv) for lv in f.objs("levels", Fields.REQUIRED)))


def _level(f: Fields) -> ProfileLevel:
    b = f.opt_obj("breakdown")
    return ProfileLevel(
        label=f.text("label", ""), concurrency=f.opt_integer("concurrency"),
        repeat=f.integer("repeat", 0), dropped=f.integer("dropped", 0),
        events=tuple(_event(f, i, e) for i, e in enumerate(f.items("events"))),
        breakdown=None if b is None else MappingProxyType(_breakdown(b)))


def _event(f: Fields, i: int, e: Any) -> RawEvent:
    ok = (isinstance(e, list) and len(e) == 7 and isinstance(e[0], str)
          and all(isinstance(x, int) and not isinstance(x, bool) for x in (*e[1:5], e[6]))
          and (e[5] is None or isinstance(e[5], str)))
    if not ok:
        raise f.error(f"events[{i}]", "should be [name, start_ns, dur_ns, pid, tid, parent, "
                      f"depth], got {kind_of(e)}")
    return (e[0], e[1], e[2], e[3], e[4], e[5], e[6])


def _breakdown(b: Fields) -> dict[str, Any]:
    """The stored breakdown, each field checked, in the order ``breakdown()`` writes it."""
    processes = b.numbers("processes")
    between = b.opt_obj("between_steps")
    out: dict[str, Any] = {
        "schema": b.text("schema", "variantctl.profile/1"),
        "events": b.integer("events", 0),
        "dropped": b.integer("dropped", 0),
        "processes": [int(p) for p in processes],
        "step": b.opt_text("step"),
        "points": [{
            "name": p.text("name"), "parent": p.opt_text("parent"), "calls": p.integer("calls"),
            "total_s": p.number("total_s"), "mean_ms": p.number("mean_ms"),
            "p50_ms": p.number("p50_ms"), "p99_ms": p.number("p99_ms"),
            "share_of_parent": p.opt_number("share_of_parent"),
            "share_of_step": p.opt_number("share_of_step"),
        } for p in b.objs("points")],
        "unaccounted": [{
            "parent": u.text("parent"), "total_s": u.number("total_s"),
            "share_of_parent": u.number("share_of_parent"),
        } for u in b.objs("unaccounted")],
        "between_steps": None if between is None else {
            "gaps": between.integer("gaps"), "total_s": between.number("total_s"),
            "mean_ms": between.number("mean_ms"), "p50_ms": between.number("p50_ms"),
            "share_of_wall": between.number("share_of_wall"),
        },
        "step_period_ms": b.opt_number("step_period_ms"),
    }
    return out


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value
