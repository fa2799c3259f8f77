"""What a capacity search found (:mod:`variantctl.bench.search` runs it): every probed
level and the best one, as a benchmark result stores them (``bench/model.py`` holds one,
so these values live below both the search and the result model)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from variantctl.jsonfields import Fields
from variantctl.jsontypes import JsonObject


@dataclass(frozen=True)
class Probe:
    """One probed level: its value, whether it met every SLO, and what limited it."""

    level: float
    passed: bool
    values: Mapping[str, float]
    limiting: str | None  # the SLO metric furthest over its limit, or "errors"

    def to_json(self) -> JsonObject:
        return {"level": self.level, "passed": self.passed,
                "values_ms": {k: (None if math.isnan(v) else v) for k, v in self.values.items()},
                "limiting": self.limiting}

    @classmethod
    def from_fields(cls, f: Fields) -> Probe:
        values = f.mapping("values_ms", {})
        return cls(level=f.number("level"), passed=f.flag("passed"),
                   values=MappingProxyType({str(k): math.nan if v is None else float(v)
                                            for k, v in values.items()
                                            if v is None or isinstance(v, (int, float))}),
                   limiting=f.opt_text("limiting"))



@dataclass(frozen=True)
class SearchResult:
    mode: str  # concurrency | rate
    slo: Mapping[str, float]
    percentile: float
    max_level: float
    best_level: float | None  # None: not even the first level met the SLOs
    limiting: str | None  # what stopped the next level up (None: max level reached)
    probes: tuple[Probe, ...] = field(default=())

    def to_json(self) -> JsonObject:
        return {"mode": self.mode, "slo_ms": dict(self.slo), "percentile": self.percentile,
                "max_level": self.max_level, "best_level": self.best_level,
                "limiting": self.limiting, "probes": [p.to_json() for p in self.probes]}

    @classmethod
    def from_fields(cls, f: Fields) -> SearchResult:
        mode = f.text("mode")
        if mode not in ("concurrency", "rate"):
            raise f.error("mode", "should be concurrency or rate")
        return cls(mode=mode, slo=MappingProxyType(f.number_map("slo_ms")),
                   percentile=f.number("percentile"), max_level=f.number("max_level"),
                   best_level=f.opt_number("best_level"), limiting=f.opt_text("limiting"),
                   probes=tuple(Probe.from_fields(p) for p in f.objs("probes")))
