"""Frozen models of a sweep file and of its expanded points (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from variantctl.benchparams import BenchParams
from variantctl.jsontypes import JsonObject
from variantctl.runs.identity import Measured
from variantctl.secretmask import DEFAULT, SecretRule

#: a grid key: ``args.<flag>`` or ``env.<NAME>``; ``base`` in exclusions/includes
GridKey = str
#: a grid value as YAML gives it (None removes the flag or variable)
GridValue = str | int | float | bool | None


def _empty() -> Mapping[GridKey, GridValue]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Axis:
    """One grid dimension: a key and the values it takes, in file order."""

    key: GridKey
    values: tuple[GridValue, ...]
    #: ``file:line`` of the key, for messages
    origin: str = ""


@dataclass(frozen=True)
class StopRules:
    """When a ladder stops early (the remaining levels of that ladder are skipped)."""

    min_success_pct: float | None = None
    max_ttft_p90_ms: float | None = None

    def to_json(self) -> JsonObject:
        return {"min_success_pct": self.min_success_pct, "max_ttft_p90_ms": self.max_ttft_p90_ms}


@dataclass(frozen=True)
class SweepSpec:
    """A validated ``sweeps/NAME.yaml``."""

    name: str
    source: str
    bases: tuple[str, ...]
    axes: tuple[Axis, ...] = ()
    #: groups of grid keys that move together (zipped)
    links: tuple[tuple[GridKey, ...], ...] = ()
    #: partial assignments; a point matching every key of one is dropped
    exclude: tuple[Mapping[GridKey, GridValue], ...] = ()
    #: extra points (assignments over a base) added after the grid
    include: tuple[Mapping[GridKey, GridValue], ...] = ()
    #: one benchmark per prompt set, run on the same server
    bench: tuple[BenchParams, ...] = (BenchParams(),)
    #: hosts to spread the points over (empty: each base variant's host)
    hosts: tuple[str, ...] = ()
    stop: StopRules = StopRules()
    port: int | None = None
    description: str = ""
    #: ``profile: true``: every point's server runs with VARIANTCTL_PROFILE set and each
    #: level's profile events are collected (as ``bench --profile`` does)
    profile: bool = False
    #: ``rank: capacity``: the result table orders the points by the capacity their
    #: ``bench: search`` found (variantctl.bench.search)
    rank: str | None = None

    def bench_json(self) -> list[JsonObject]:
        return [b.to_json() for b in self.bench]

    @property
    def measured(self) -> Measured:
        """What besides the point itself makes its measurement distinct (in its point
        key and its launch key: runs/identity.py)."""
        return Measured(self.bench, self.profile)


@dataclass(frozen=True)
class GridPoint:
    """One expanded point: a base variant and the values the grid sets on it."""

    index: int
    base: str
    values: Mapping[GridKey, GridValue] = field(default_factory=_empty)

    def label(self, secrets: SecretRule = DEFAULT) -> str:
        """``max-num-seqs=2 enforce-eager=false`` (keys without their section; a secret's
        value ``***``)."""
        parts = [f"{k.split('.', 1)[1]}={_show(secrets.mask(k, v))}"
                 for k, v in self.values.items()]
        return " ".join(parts) or "(base)"


def _show(value: GridValue) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def point_name(base: str, sweep: str, index: int) -> str:
    """The derived variant's name: ``BASE@SWEEP-NN`` (a valid file name via safe_name)."""
    return f"{base}@{sweep}-{index:02d}"


def sweep_of_name(name: str) -> tuple[str, int] | None:
    """``(sweep, index)`` of a point name, None for any other variant name."""
    base, at, rest = name.rpartition("@")
    sweep, dash, num = rest.rpartition("-")
    if not (at and base and dash and sweep and num.isdigit()):
        return None
    return sweep, int(num)
