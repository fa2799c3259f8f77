"""A configuration's figure across its stored runs, in time order (PURE).

``runs trend VARIANT|CONFIG_KEY [--metric M]``: per concurrency, each run's figure with
its 95 % interval (bench.uncertainty), and between consecutive runs the test of the
change (Welch over repeats, else a bootstrap over requests); a change beyond the noise
is shown with what changed between the two runs — patches (state and fingerprint),
vLLM version and the other engine facts, host and environment, configuration — as
``compare`` finds it (:func:`variantctl.report.compare.setting_changes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from variantctl.bench.model import BenchResult
from variantctl.bench.uncertainty import HEADLINES, FigureCI, MetricTest, series_tests
from variantctl.jsontypes import JsonObject
from variantctl.report.compare import NOT_PERFORMANCE, SettingChange, pick, setting_changes
from variantctl.report.model import RunInput
from variantctl.report.series import points_of


@dataclass(frozen=True)
class TrendPoint:
    """One run at one concurrency, and its change from the run before it."""

    concurrency: int
    run: RunInput
    figure: FigureCI
    #: the test against the previous run that measured this concurrency (None: the first)
    change: MetricTest | None = None
    #: what differs from that run, when the change is beyond the noise
    changed: tuple[SettingChange, ...] = ()

    @property
    def beyond_noise(self) -> bool:
        return self.change is not None and self.change.significant

    def to_json(self) -> JsonObject:
        iv = self.figure.interval
        ch = self.change.to_json() if self.change is not None else None
        return {"level": self.concurrency, "run_id": self.run.run_id,
                "created_at": self.run.record.created_at, "estimate": iv.estimate,
                "ci95": [None if iv.lo != iv.lo else iv.lo, None if iv.hi != iv.hi else iv.hi],
                "n": self.figure.n, "method": self.figure.method,
                "delta_pct": None if ch is None else ch["delta_pct"],
                "ci95_pct": None if ch is None else ch["ci95_pct"],
                "significant": self.beyond_noise,
                "changed": [c.to_json() for c in self.changed]}


@dataclass(frozen=True)
class Trend:
    metric: str
    runs: tuple[RunInput, ...]
    points: tuple[TrendPoint, ...]
    #: runs left out (no benchmark sent like the latest one)
    skipped: tuple[str, ...] = ()

    def to_json(self) -> JsonObject:
        return {"metric": self.metric, "runs": [r.run_id for r in self.runs],
                "points": [p.to_json() for p in self.points], "skipped": list(self.skipped)}


def trend(runs: Sequence[RunInput], metric: str = "output_throughput",
          damaged: Sequence[str] = ()) -> Trend:
    """``runs`` in time order (created_at); each concurrency's figure run by run.
    ``damaged``: runs that could not be read (``RUN: why``), listed first in ``skipped``."""
    if metric not in HEADLINES:
        raise ValueError(f"unknown metric {metric!r}")
    ordered = sorted((r for r in runs if r.results),
                     key=lambda r: (r.record.created_at, r.record.seq))
    if not ordered:
        return Trend(metric, (), (), tuple(damaged))
    latest = ordered[-1]
    used: list[tuple[RunInput, list[BenchResult]]] = []
    skipped: list[str] = list(damaged)
    for r in ordered:
        # the benchmarks sent like the latest run's latest (compare's rule; pooled)
        _, alike, notes = pick(latest, r)
        if alike and not any("different parameters" in n for n in notes):
            used.append((r, [res for _, res in alike]))
        else:
            skipped.append(r.run_id)
    out: list[TrendPoint] = []
    levels = list(dict.fromkeys(p.concurrency for _, rs in used for res in rs
                                for p in points_of(res.levels)))
    # each run's points, grouped once (not once per concurrency)
    points = [(r, {p.concurrency: p for p in points_of(
        [lv for res in results for lv in res.levels])}) for r, results in used]
    for c in levels:
        # the runs that measured c, and each one's interval and test against the run
        # before it with the figure (all made at once: bench.uncertainty.series_tests)
        series = [(r, by_c[c]) for r, by_c in points if c in by_c]
        made = series_tests(c, [point.levels for _, point in series], metric)
        for (r, _), (cis, before, test) in zip(series, made, strict=True):
            fig = cis.get(metric)
            if fig is None:
                continue
            changed: tuple[SettingChange, ...] = ()
            if before is not None and test is not None and test.significant:
                changed = tuple(ch for ch in setting_changes(series[before][0], r)
                                if ch.key not in NOT_PERFORMANCE)
            out.append(TrendPoint(c, r, fig, test, changed))
    return Trend(metric, tuple(r for r, _ in used), tuple(out), tuple(skipped))
