"""Capacity search: the highest level whose percentile latencies meet every SLO.

PURE (no I/O). ``bench --search concurrency|rate --slo ttft:MS,tpot:MS[,e2el:MS]``
probes levels one at a time — exponentially (1, 2, 4, … up to ``--max-level``) until
one misses an SLO, then by bisection between the last level that met them and the
first that did not — and reports the highest level that met every SLO
(``best_level``), every probe, and the metric that limited the next level up.

A level *meets* the SLOs when none of its requests failed and, for every SLO metric,
the ``--slo-percentile`` (numpy's linear interpolation, as ``vllm bench serve``'s
percentiles) of its per-request values is at most the SLO: TTFT and E2EL of every
successful request, TPOT of those with more than one output token.

Concurrency levels are integers, so the answer is exact. Rates are bisected until
the bracket is within 5 % (and 0.01 req/s) of the best rate found.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

from variantctl.bench.arrival import Level, Profile
from variantctl.bench.model import LevelResult
from variantctl.bench.searchresult import Probe, SearchResult
from variantctl.benchparams import BenchParams

#: rate search: stop when the bracket is this narrow relative to the best rate
RATE_RESOLUTION = 0.05


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's default (linear) percentile; NaN for no values."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def slo_values(level: LevelResult, q: float) -> dict[str, float]:
    """The level's percentile ``q`` of TTFT, TPOT and E2EL in ms (successful requests)."""
    ok = [r for r in level.requests if r.ok]
    tpots = [t * 1000.0 for r in ok if (t := r.tpot_s) is not None]
    return {
        "ttft": percentile([r.ttft_s * 1000.0 for r in ok], q),
        "tpot": percentile(tpots, q),
        "e2el": percentile([r.latency_s * 1000.0 for r in ok], q),
    }


def judge(level: LevelResult, slo: Mapping[str, float], q: float, value: float) -> Probe:
    values = slo_values(level, q)
    if level.metrics.failed or not level.metrics.completed:
        return Probe(value, False, values, "errors")
    over = {k: values[k] / ms for k, ms in slo.items()
            if math.isnan(values[k]) or values[k] > ms}
    if not over:
        return Probe(value, True, values, None)
    worst = max(over, key=lambda k: math.inf if math.isnan(over[k]) else over[k])
    return Probe(value, False, values, worst)


class Search:
    """Drives the probes: :meth:`steps` yields the next level to run, :meth:`record` takes
    its result (the generator decides the following level from it)."""

    def __init__(self, params: BenchParams):
        assert params.search is not None
        self.params = params
        self.mode = params.search
        self.max_level = params.max_level
        self.probes: list[Probe] = []

    def _level(self, value: float) -> Level:
        p = self.params
        if self.mode == "concurrency":
            return Level(int(value), Profile("concurrency", rate=p.request_rate))
        return Level(p.concurrency[0], Profile("rate", rate=value))

    def record(self, level: LevelResult, value: float) -> None:
        self.probes.append(judge(level, self.params.slo, self.params.slo_percentile, value))

    def steps(self) -> Iterator[tuple[float, Level]]:
        """(probed value, level) pairs; stops when the answer is known (or a probe was not
        recorded: the run was stopped)."""
        lo: float | None = None  # highest level known to pass
        hi: float | None = None  # lowest level known to fail
        value = 1.0
        while True:  # exponential phase
            value = min(value, self.max_level)
            n = len(self.probes)
            yield value, self._level(value)
            if len(self.probes) == n:
                return
            if self.probes[-1].passed:
                lo = value
                if value >= self.max_level:
                    return
                value *= 2
            else:
                hi = value
                break
        while lo is not None and hi is not None and not self._narrow(lo, hi):
            mid = (lo + hi) / 2
            mid = float(math.floor(mid)) if self.mode == "concurrency" else round(mid, 3)
            n = len(self.probes)
            yield mid, self._level(mid)
            if len(self.probes) == n:
                return
            if self.probes[-1].passed:
                lo = mid
            else:
                hi = mid

    def _narrow(self, lo: float, hi: float) -> bool:
        if self.mode == "concurrency":
            return hi - lo <= 1
        return hi - lo <= max(RATE_RESOLUTION * lo, 0.01)

    def result(self) -> SearchResult:
        passed = [p for p in self.probes if p.passed]
        best = max((p.level for p in passed), default=None)
        failed_above = sorted((p for p in self.probes if not p.passed
                               and (best is None or p.level > best)), key=lambda p: p.level)
        return SearchResult(
            mode=self.mode, slo=dict(self.params.slo), percentile=self.params.slo_percentile,
            max_level=self.max_level,
            best_level=(int(best) if best is not None and self.mode == "concurrency" else best),
            limiting=failed_above[0].limiting if failed_above else None,
            probes=tuple(self.probes))
