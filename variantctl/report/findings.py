"""The report summary's findings: which point wins beyond the noise, where the curve bends,
how TP scales (PURE).

- **Best point per concurrency**: the highest output throughput and the lowest TTFT
  P90, each with its 95 % interval, and the points not significantly different from
  it (:func:`variantctl.bench.uncertainty.compare_points`: Welch over ≥ 3 repeats, else
  a bootstrap over requests).
- **Knee** of each throughput curve (the seeds' "best cost-performance point"): the
  first concurrency past which doubling the concurrency gains less than
  :data:`KNEE_GAIN_PCT` % output throughput while mean TPOT grows.
- **TP scaling efficiency** where the runs differ in ``tensor-parallel-size``:
  throughput at TP=n / (n × throughput at TP=1), per concurrency, between series
  whose other settings are equal (the second seed's TP1-vs-TP2 table).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from variantctl.bench.uncertainty import FigureCI, compare_points
from variantctl.report.labels import settings_of, varying
from variantctl.report.series import Point, Series

#: a doubling of concurrency that gains less output throughput than this is past the knee
KNEE_GAIN_PCT = 10.0
TP_KEY = "args.tensor-parallel-size"


@dataclass(frozen=True)
class Best:
    """The best point of one concurrency on one figure, and its statistical ties."""

    concurrency: int
    metric: str  # output_throughput | ttft_p90
    series: Series
    figure: FigureCI
    #: the other points whose difference from the best is within the noise
    ties: tuple[tuple[Series, FigureCI], ...]
    #: the other points that cannot be tested (no interval: < 3 repeats, no requests)
    undecided: tuple[tuple[Series, FigureCI], ...] = ()


def best_points(series: Sequence[Series], metric: str, higher_is_better: bool
                ) -> list[Best]:
    levels = sorted({p.concurrency for s in series for p in s.points})
    out = []
    for c in levels:
        cands: list[tuple[Series, Point, FigureCI]] = []
        for s in series:
            p = next((p for p in s.points if p.concurrency == c), None)
            f = p.intervals.get(metric) if p is not None else None
            if p is not None and f is not None:
                cands.append((s, p, f))
        if not cands:
            continue
        sign = 1.0 if higher_is_better else -1.0
        bs, bp, bf = max(cands, key=lambda t: sign * t[2].estimate)
        ties, undecided = [], []
        for s, p, f in cands:
            if s is bs:
                continue
            # the points' intervals are made already (Point.intervals): not again
            (test,) = compare_points(c, bp.levels, p.levels, [metric],
                                     intervals=(bp.intervals, p.intervals)) or (None,)
            if test is None or test.difference is None:
                undecided.append((s, f))
            elif not test.significant:
                ties.append((s, f))
        out.append(Best(c, metric, bs, bf, tuple(ties), tuple(undecided)))
    return out


@dataclass(frozen=True)
class Knee:
    series: Series
    #: the concurrency past which throughput stops paying (None: never within the ladder)
    concurrency: int | None
    #: the next level's gain per doubling (%) and TPOT growth (%) that decided it
    gain_pct: float | None = None
    tpot_pct: float | None = None
    next_concurrency: int | None = None


def knee(s: Series) -> Knee:
    pts = sorted((p for p in s.points if "output_throughput" in p.intervals),
                 key=lambda p: p.concurrency)
    for lo, hi in pairwise(pts):
        t0, t1 = (p.intervals["output_throughput"].estimate for p in (lo, hi))
        tp0, tp1 = (p.intervals.get("tpot_mean") for p in (lo, hi))
        if t0 <= 0 or hi.concurrency <= lo.concurrency:
            continue
        doublings = math.log2(hi.concurrency / lo.concurrency)
        gain = 100.0 * ((max(t1, 0.0) / t0) ** (1.0 / doublings) - 1.0)
        tpot = None if tp0 is None or tp1 is None or tp0.estimate <= 0 else \
            100.0 * (tp1.estimate / tp0.estimate - 1.0)
        if gain < KNEE_GAIN_PCT and tpot is not None and tpot > 0:
            return Knee(s, lo.concurrency, gain, tpot, hi.concurrency)
    return Knee(s, None)


@dataclass(frozen=True)
class TpScaling:
    label: str  # the other settings the two series share
    tp: int
    concurrency: int
    throughput_tp1: float
    throughput_tpn: float

    @property
    def efficiency(self) -> float:
        return self.throughput_tpn / (self.tp * self.throughput_tp1)


def tp_scaling(series: Sequence[Series]) -> list[TpScaling]:
    """Per TP>1 series and concurrency, efficiency against the TP=1 series whose other
    varying settings (and benchmark) are the same; empty without a TP axis."""
    runs = list({id(s.run): s.run for s in series}.values())
    keys = varying(runs)
    if TP_KEY not in keys:
        return []
    others = [k for k in keys if k != TP_KEY]

    def tp_of(s: Series) -> int:
        value = settings_of(s.run).get(TP_KEY, 1)
        if not isinstance(value, (int, float, str)):
            return 1
        try:
            return int(value)
        except ValueError:
            return 1

    def rest(s: Series) -> tuple[str, ...]:
        flat = settings_of(s.run)
        shape = {k: v for k, v in s.result.params.to_json().items()
                 if k not in ("concurrency", "repeat", "until_ci", "max_repeat")}
        return (*(repr(flat.get(k)) for k in others), repr(shape))

    out = []
    for base in (s for s in series if tp_of(s) == 1):
        for other in (s for s in series if tp_of(s) > 1 and rest(s) == rest(base)):
            n = tp_of(other)
            words = [w for w in other.label.split() if not w.startswith("tp=")]
            for p in base.points:
                q = next((q for q in other.points if q.concurrency == p.concurrency), None)
                f1 = p.intervals.get("output_throughput")
                fn = q.intervals.get("output_throughput") if q is not None else None
                if f1 is not None and fn is not None and f1.estimate > 0:
                    out.append(TpScaling(" ".join(words) or "–", n, p.concurrency,
                                         f1.estimate, fn.estimate))
    return out
