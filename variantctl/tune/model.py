"""Frozen models of a tuning spec ``tunes/NAME.yaml`` and of one candidate's settings (pure).

A *setting key* is ``args.FLAG``, ``env.NAME`` or ``patchsets``, as the spec's ``space:``
names it; a candidate is one value per key (:data:`Settings`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from variantctl.benchparams import BenchParams
from variantctl.jsontypes import JsonObject
from variantctl.sweeps.model import GridValue

PATCHSETS = "patchsets"
#: a setting's value: a grid value, or the patchsets added to the base's (``patchsets``)
SettingValue = GridValue | tuple[str, ...]
Settings = Mapping[str, SettingValue]

MAXIMIZE, MINIMIZE, SEARCH = "maximize", "minimize", "search"
SAMPLERS = ("auto", "tpe", "grid", "random")


@dataclass(frozen=True)
class Choices:
    """A setting that takes one of the listed values."""

    key: str
    values: tuple[SettingValue, ...]
    origin: str = ""

    @property
    def size(self) -> float:
        return float(len(self.values))


@dataclass(frozen=True)
class Range:
    """A numeric setting between ``lo`` and ``hi`` (both included)."""

    key: str
    lo: float
    hi: float
    log: bool = False
    integer: bool = False
    origin: str = ""

    @property
    def size(self) -> float:
        """Points a grid of it has: every integer, or infinitely many reals."""
        return float(int(self.hi) - int(self.lo) + 1) if self.integer else math.inf

    def values(self) -> tuple[int, ...]:
        return tuple(range(int(self.lo), int(self.hi) + 1))


Dimension = Choices | Range


@dataclass(frozen=True)
class Objective:
    """``{maximize: METRIC}``, ``{minimize: METRIC}`` or ``{search: concurrency|rate, slo}``
    (the capacity the search finds, maximised)."""

    kind: str
    metric: str
    #: the concurrency level the metric is read at (None: the ladder's last level)
    level: int | None = None

    @property
    def maximize(self) -> bool:
        return self.kind != MINIMIZE

    def label(self) -> str:
        if self.kind == SEARCH:
            return f"capacity ({self.metric} search)"
        return f"{self.kind} {self.metric}"

    def to_json(self) -> JsonObject:
        return {"kind": self.kind, "metric": self.metric, "level": self.level}


@dataclass(frozen=True)
class Budget:
    """At most ``launches`` server starts and/or ``minutes`` of wall time."""

    launches: int | None = None
    minutes: float | None = None

    def to_json(self) -> JsonObject:
        return {"launches": self.launches, "minutes": self.minutes}


@dataclass(frozen=True)
class Stages:
    """The staged measurement: one launch (the probe) for every candidate; ``repeats``
    launches for those whose probe is within ``reach_pct`` % of the best; more launches of
    the best (up to ``max_repeats``) until its 95 % interval is within ``ci_pct`` %."""

    repeats: int = 3
    max_repeats: int = 5
    reach_pct: float = 10.0
    ci_pct: float = 5.0

    def to_json(self) -> JsonObject:
        return {"repeats": self.repeats, "max_repeats": self.max_repeats,
                "reach_pct": self.reach_pct, "ci_pct": self.ci_pct}


@dataclass(frozen=True)
class TuneSpec:
    """A validated ``tunes/NAME.yaml``."""

    name: str
    source: str
    variant: str
    space: tuple[Dimension, ...]
    objective: Objective
    budget: Budget
    bench: tuple[BenchParams, ...] = (BenchParams(),)
    hosts: tuple[str, ...] = ()
    seed: int = 0
    sampler: str = "auto"
    stages: Stages = Stages()
    #: ``file:line`` of each space key (messages about a setting name where it is)
    origins: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def grid_size(self) -> float:
        return math.prod(d.size for d in self.space)


def settings_json(settings: Settings) -> JsonObject:
    """The settings as ``--json`` prints them (patchsets as a list)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()}
