"""The 95 % interval of each headline figure of a level, and A/B tests of two levels (PURE).

A *point* is every level of one concurrency measured alike (``--repeat``, or several
bench files of one run pooled by ``compare``). Its headline figures — output
throughput, TTFT and TPOT mean/P50/P90/P99, per-request output TPS P10/P50 — get:

- with ≥ 3 repeats: Student's t interval over the repeats' figures (the estimate is
  their mean, as the tables print it);
- with fewer: a percentile bootstrap over the requests, pooled over the repeats (the
  estimate is the figure of the pooled requests: for one repeat exactly the level's).
  That interval only covers request-to-request variation inside one server run, not
  the run-to-run noise of the server and machine, so it is narrower than the truth:
  such figures are marked (docs/report.md, "Statistics").

Output throughput over requests: Σ output tokens / duration = c̄ × Σ tokens / Σ E2EL,
where c̄ = Σ E2EL / duration is the mean number of requests in flight. The bootstrap
resamples the requests' (tokens, E2EL) pairs and holds c̄ fixed — a ratio estimator.

Two points are compared with Welch's t-test over repeats when both have ≥ 3, else with
the bootstrap of the relative difference over requests (:mod:`variantctl.bench.stats`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from variantctl.bench import stats
from variantctl.bench.metrics import BURST_FIGURES, NOT_MEASURABLE, burst_point, percentile
from variantctl.bench.model import LevelResult, RequestResult, Stats
from variantctl.jsontypes import JsonObject

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

#: fewer repeats than this: the interval is a bootstrap over requests (marked)
MIN_REPEATS = 3
#: fewer requests than this in a point: too few for any interval to mean much (marked)
MIN_REQUESTS = 20
METHOD_REPEATS = "repeats"
METHOD_REQUESTS = "requests"
METHOD_NONE = "none"  # fewer than 3 repeats and no per-request results: no interval


class _Sample(NamedTuple):
    """What the request-level statistics need of one successful request (a tuple: a
    trend or a report makes hundreds of thousands)."""

    ttft_ms: float
    tpot_ms: float | None
    tps: float | None
    tokens: int
    e2el_s: float


def _samples(requests: Sequence[RequestResult]) -> list[_Sample]:
    out = []
    for r in requests:
        if r.ok:
            tpot, tps = r.tpot_s, r.output_tps
            out.append(_Sample(r.ttft_s * 1000.0, None if tpot is None else tpot * 1000.0,
                               tps, r.output_tokens, r.latency_s))
    return out


class _PointSamples(list[_Sample]):
    """A point's samples, with the numpy columns its bootstraps read made once (a trend
    of a figure other than throughput bootstraps each point three times: its interval,
    and the tests against the runs before and after it; compare, each side twice).
    Read-only by convention: the columns are not remade."""

    def __init__(self, samples: Iterable[_Sample]):
        super().__init__(samples)
        self.columns: dict[str, NDArray[Any]] = {}


#: the last few points' samples, by the identity of their levels' request tuples (kept
#: here, so an id is not reused while its entry lives): asked for several times in a
#: row, and each time they cost a pass over every request
_POINT_SAMPLES: list[tuple[tuple[tuple[RequestResult, ...], ...], _PointSamples]] = []


def _point_samples(levels: Sequence[LevelResult]) -> list[_Sample]:
    """The samples of the requests of every level of a point, in order."""
    key = tuple(lv.requests for lv in levels)
    if not all(type(reqs) is tuple for reqs in key):  # a list could change: not kept
        return [s for reqs in key for s in _samples(reqs)]
    for kept, samples in _POINT_SAMPLES:
        if len(kept) == len(key) and all(a is b for a, b in zip(kept, key, strict=True)):
            return samples
    made = _PointSamples(s for reqs in key for s in _samples(reqs))
    _POINT_SAMPLES.insert(0, (key, made))
    del _POINT_SAMPLES[4:]
    return made


def _column(sample: Sequence[_Sample], field: str, dtype: type[Any]) -> NDArray[Any]:
    """``field`` of every sample as a numpy array (None: NaN), made once for a point's
    samples."""
    import numpy as np

    columns = sample.columns if isinstance(sample, _PointSamples) else None
    if columns is not None and field in columns:
        return columns[field]
    values = (getattr(s, field) for s in sample)
    column = np.array([math.nan if v is None else v for v in values], dtype=dtype)
    if columns is not None:
        column.flags.writeable = False
        columns[field] = column
    return column


class _FieldStat:
    """The mean or a percentile of one field over the requests that have it (None when
    none has), on one sample or, with :meth:`many`, on every bootstrap resample at once
    (the same values: :class:`variantctl.bench.stats.VectorStatistic`)."""

    def __init__(self, field: str, which: str):
        self.field, self.which = field, which

    def __call__(self, sample: Sequence[_Sample]) -> float | None:
        xs = sorted(v for v in (getattr(s, self.field) for s in sample) if v is not None)
        if not xs:
            return None
        if self.which == "mean":
            return math.fsum(xs) / len(xs)
        return percentile(xs, float(self.which[1:]))

    def many(self, sample: Sequence[_Sample], picks: NDArray[np.int64]) -> NDArray[np.float64]:
        import numpy as np

        column = _column(sample, self.field, np.float64)
        values = column[picks]
        have = ~np.isnan(values)
        count = have.sum(axis=1)
        if self.which == "mean":
            # math.fsum per resample, as the statistic sums: exactly rounded, order-free
            sums = stats.exact_sums(np.where(np.isnan(column), 0.0, column), picks)
            out = sums / np.maximum(count, 1)
        else:  # metrics.percentile on each sorted row (NaN sorts last)
            ordered = np.sort(values, axis=1)
            rank = (count - 1).astype(np.float64) * float(self.which[1:]) / 100.0
            lo = np.floor(rank).astype(np.int64)
            hi = np.minimum(lo + 1, count - 1)
            at_lo = np.take_along_axis(ordered, lo[:, None], axis=1)[:, 0]
            at_hi = np.take_along_axis(ordered, hi[:, None], axis=1)[:, 0]
            out = at_lo + (at_hi - at_lo) * (rank - lo)
        return np.where(count > 0, out, math.nan)


def _stat_of(field: str, which: str) -> Callable[[Sequence[_Sample]], float | None]:
    return _FieldStat(field, which)


def _level_stat(get: Callable[[LevelResult], Stats], which: str
                ) -> Callable[[LevelResult], float | None]:
    def value(lv: LevelResult) -> float | None:
        st = get(lv)
        if not st.count:
            return None
        v = float(getattr(st, which))
        return None if math.isnan(v) else v  # an imported file that lacks the figure

    return value


@dataclass(frozen=True)
class Headline:
    """One headline figure: how to read it from a level and from a sample of requests."""

    name: str
    heading: str
    unit: str
    higher_is_better: bool
    of_level: Callable[[LevelResult], float | None]
    #: None: the statistic needs the point (throughput: c̄ is fixed per point)
    of_requests: Callable[[Sequence[_Sample]], float | None] | None


def _headlines() -> dict[str, Headline]:
    out = {"output_throughput": Headline("output_throughput", "output throughput", "tok/s", True,
                               lambda lv: lv.metrics.output_throughput, None)}
    for metric, field, label in (("ttft", "ttft_ms", "TTFT"), ("tpot", "tpot_ms", "TPOT")):
        for which in ("mean", "p50", "p90", "p99"):
            name = f"{metric}_{which}"
            out[name] = Headline(
                name, f"{label} {which.upper() if which != 'mean' else 'mean'}", "ms", False,
                _level_stat((lambda f: lambda lv: getattr(lv.metrics, f))(field), which),
                _stat_of(field, which))
    for which in ("p10", "p50"):
        out[f"tps_{which}"] = Headline(
            f"tps_{which}", f"Output TPS {which.upper()}", "tok/s", True,
            _level_stat(lambda lv: lv.metrics.output_tps, which), _stat_of("tps", which))
    return out


#: name -> headline figure, in the order tables show them
HEADLINES: dict[str, Headline] = _headlines()


@dataclass(frozen=True)
class FigureCI:
    """A headline figure of a point with its 95 % interval and what it rests on."""

    metric: str
    interval: stats.Interval
    method: str  # METHOD_REPEATS | METHOD_REQUESTS
    repeats: int
    requests: int

    @property
    def estimate(self) -> float:
        return self.interval.estimate

    @property
    def n(self) -> int:
        """What the interval rests on: requests (bootstrap), else repeats (t, or the
        mean of repeats without an interval)."""
        return self.requests if self.method == METHOD_REQUESTS else self.repeats

    @property
    def few_repeats(self) -> bool:
        return self.repeats < MIN_REPEATS

    @property
    def few_requests(self) -> bool:
        return self.requests < MIN_REQUESTS

    @property
    def marks(self) -> str:
        """``*``: fewer than 3 repeats (bootstrap over requests); ``!``: < 20 requests."""
        return ("*" if self.few_repeats else "") + ("!" if self.few_requests else "")

    def to_json(self) -> JsonObject:
        iv = self.interval
        return {"estimate": iv.estimate, "ci95": [_finite(iv.lo), _finite(iv.hi)],
                "half_width_pct": _finite(iv.half_width_pct),
                "method": self.method, "n_repeats": self.repeats, "n_requests": self.requests,
                "few_repeats": self.few_repeats, "few_requests": self.few_requests}


MARKS_LEGEND = (f"±: 95 % confidence interval; * fewer than {MIN_REPEATS} repeats (bootstrap "
                "over requests: understates run-to-run noise); ! fewer than "
                f"{MIN_REQUESTS} requests")


def _usable(levels: Sequence[LevelResult]) -> list[LevelResult]:
    return [lv for lv in levels if lv.metrics.completed > 0]


class _Throughput:
    """Output throughput of a resample of a point's requests: c̄ × Σ tokens / Σ E2EL with
    the point's c̄ held fixed (None when Σ E2EL is 0); :meth:`many` on every resample."""

    def __init__(self, in_flight: float):
        self.in_flight = in_flight

    def __call__(self, sample: Sequence[_Sample]) -> float | None:
        return self.of_sums(math.fsum(s.e2el_s for s in sample), sum(s.tokens for s in sample))

    def of_sums(self, e2el: float, tokens: int) -> float | None:
        """The figure of requests whose E2EL add up to ``e2el`` and tokens to ``tokens``."""
        return self.in_flight * tokens / e2el if e2el > 0 else None

    def many(self, sample: Sequence[_Sample], picks: NDArray[np.int64]) -> NDArray[np.float64]:
        import numpy as np

        e2el = _column(sample, "e2el_s", np.float64)
        tokens = stats.int_sums(_column(sample, "tokens", np.int64), picks)
        sums = stats.exact_sums(e2el, picks)
        ok = sums > 0
        out = self.in_flight * tokens.astype(np.float64) / np.where(ok, sums, 1.0)
        return np.where(ok, out, math.nan)


def _throughput_stat(levels: Sequence[LevelResult], samples: Sequence[_Sample]
                     ) -> _Throughput:
    """``samples``: those of ``levels``' requests (the caller has them already)."""
    return _Throughput(_in_flight(levels, math.fsum(s.e2el_s for s in samples)))


def _in_flight(levels: Sequence[LevelResult], e2el: float) -> float:
    """c̄ of a point whose requests' E2EL add up to ``e2el``."""
    duration = math.fsum(lv.metrics.duration_s for lv in levels)
    return e2el / duration if duration > 0 else 0.0


def _request_stat(metric: str, levels: Sequence[LevelResult], samples: Sequence[_Sample]
                  ) -> Callable[[Sequence[_Sample]], float | None]:
    stat = HEADLINES[metric].of_requests
    return stat if stat is not None else _throughput_stat(levels, samples)


def point_intervals(levels: Sequence[LevelResult], metrics: Sequence[str] | None = None,
                    *, seed: int = stats.SEED, by_requests: bool = False
                    ) -> dict[str, FigureCI]:
    """The interval of each headline figure (``metrics``: a subset) of one point; a figure
    with no value (no TPOT for one-token requests) or no completed level is left out."""
    names = list(metrics) if metrics is not None else list(HEADLINES)
    levels = _usable(levels)
    out: dict[str, FigureCI] = {}
    if not levels:
        return out
    samples = _point_samples(levels)
    if len(levels) >= MIN_REPEATS and not by_requests:
        for name in names:
            values = [v for v in (HEADLINES[name].of_level(lv) for lv in levels)
                      if v is not None]
            if len(values) >= MIN_REPEATS:
                out[name] = FigureCI(name, stats.t_interval(values), METHOD_REPEATS,
                                     len(values), len(samples))
    elif samples:
        funcs = {name: _request_stat(name, levels, samples) for name in names}
        for name, iv in stats.bootstrap_intervals(samples, funcs, seed=seed).items():
            out[name] = FigureCI(name, iv, METHOD_REQUESTS, len(levels), len(samples))
    for name in names:  # no interval can be made: the figure alone (method "none")
        if name not in out:
            unsure = _unsure(name, levels)
            if unsure is not None:
                out[name] = unsure
    return {name: out[name] for name in names if name in out}


@dataclass(frozen=True)
class MetricTest:
    """B against A on one figure of one concurrency (``difference`` None: one side has no
    interval — fewer than 3 repeats and no per-request results — so nothing is decided)."""

    concurrency: int
    metric: str
    a: FigureCI
    b: FigureCI
    difference: stats.Difference | None
    #: why the figure is not compared (a side's tokens arrived in one burst), None if it is
    not_measurable: str | None = None

    @property
    def significant(self) -> bool:
        return self.difference is not None and self.difference.significant

    @property
    def one_launch(self) -> bool:
        """Tested over the requests of one launch a side (a bootstrap, no repeats): how
        much two launches of the same configuration differ is unknown, so the test can
        claim no winner."""
        return self.difference is not None and self.difference.method == "bootstrap"

    @property
    def delta_pct(self) -> float | None:
        if self.difference is not None:
            return self.difference.delta_pct
        a, b = self.a.estimate, self.b.estimate
        return 100.0 * (b - a) / abs(a) if a else None

    @property
    def better(self) -> bool | None:
        """B better than A beyond the noise (None: no significant difference)."""
        if self.difference is None or not self.significant:
            return None
        return (self.difference.delta_pct > 0) == HEADLINES[self.metric].higher_is_better

    def to_json(self) -> JsonObject:
        """Exactly the row the brief fixes (docs/report.md: compare --json)."""
        d = self.difference
        delta = self.delta_pct
        return {"level": self.concurrency, "metric": self.metric, "a": self.a.estimate,
                "b": self.b.estimate, "delta_pct": None if delta is None else _finite(delta),
                "ci95_pct": [None, None] if d is None else [_finite(d.lo_pct),
                                                            _finite(d.hi_pct)],
                "significant": self.significant, "n_a": self.a.n, "n_b": self.b.n,
                **({"not_measurable": self.not_measurable} if self.not_measurable else {})}


def _finite(value: float) -> float | None:
    return None if math.isinf(value) or math.isnan(value) else value


def _unsure(name: str, levels: Sequence[LevelResult]) -> FigureCI | None:
    """A figure without an interval: the mean over the repeats, no bounds."""
    values = [v for v in (HEADLINES[name].of_level(lv) for lv in levels) if v is not None]
    if not values:
        return None
    m = stats.mean(values)
    return FigureCI(name, stats.Interval(m, math.nan, math.nan), METHOD_NONE, len(values),
                    sum(len(lv.requests) for lv in levels))


def compare_points(concurrency: int, a_levels: Sequence[LevelResult],
                   b_levels: Sequence[LevelResult], metrics: Sequence[str] | None = None,
                   *, seed: int = stats.SEED,
                   intervals: tuple[Mapping[str, FigureCI], Mapping[str, FigureCI]] | None
                   = None) -> list[MetricTest]:
    """Each headline figure of B against A: Welch over repeats when both sides have ≥ 3,
    else the bootstrap of the relative difference over requests.

    ``intervals``: A's and B's :func:`point_intervals` of ``metrics`` with this seed, when
    the caller has them already (a trend has each run's from the run before): the same
    values, not made again."""
    names = list(metrics) if metrics is not None else list(HEADLINES)
    a_lv, b_lv = _usable(a_levels), _usable(b_levels)
    if intervals is not None:
        ci_a, ci_b = intervals
    else:
        ci_a = point_intervals(a_lv, names, seed=seed)
        ci_b = point_intervals(b_lv, names, seed=seed)
    sa, sb = _point_samples(a_lv), _point_samples(b_lv)
    out = []
    for name in names:
        fa, fb = ci_a.get(name), ci_b.get(name)
        if fa is None or fb is None:
            continue
        diff: stats.Difference | None = None
        if fa.method == fb.method == METHOD_REPEATS:
            get = HEADLINES[name].of_level
            diff = stats.welch([v for v in (get(lv) for lv in a_lv) if v is not None],
                               [v for v in (get(lv) for lv in b_lv) if v is not None])
        elif METHOD_NONE not in (fa.method, fb.method) and sa and sb:
            stat_a, stat_b = _request_stat(name, a_lv, sa), _request_stat(name, b_lv, sb)
            diff = stats.bootstrap_difference(sa, sb, stat_a, stat_b, seed=seed)
            # a side with repeats, compared by requests: its interval from its requests too
            if fa.method == METHOD_REPEATS:
                fa = point_intervals(a_lv, [name], seed=seed, by_requests=True)[name]
            if fb.method == METHOD_REPEATS:
                fb = point_intervals(b_lv, [name], seed=seed, by_requests=True)[name]
        if name in BURST_FIGURES and (burst_point(a_lv) or burst_point(b_lv)):
            # TPOT ~0 and TPS unbounded say how the server delivered, not how it decoded
            out.append(MetricTest(concurrency, name, fa, fb, None, NOT_MEASURABLE))
            continue
        out.append(MetricTest(concurrency, name, fa, fb, diff))
    return out


class _Requests(NamedTuple):
    """What output throughput's bootstrap needs of a point's successful requests."""

    e2el: list[float]
    tokens: list[int]
    in_flight: float
    estimate: float


def _throughput_many(points: Sequence[_Requests], picks: NDArray[np.int64]
                     ) -> NDArray[np.float64]:
    """:meth:`_Throughput.many` of each point with the same ``picks``, as the columns of
    one array: the same float operations on each element, so the same values."""
    import numpy as np

    e2el = np.array([p.e2el for p in points], dtype=np.float64).T
    tokens = stats.int_sums_many(np.array([p.tokens for p in points], dtype=np.int64).T,
                                 picks)
    sums = stats.exact_sums_many(e2el, picks)
    ok = sums > 0
    in_flight = np.array([p.in_flight for p in points], dtype=np.float64)
    out = in_flight * tokens / np.where(ok, sums, 1.0)
    done: NDArray[np.float64] = np.where(ok, out, math.nan)
    return done


def _intervals(estimates: Sequence[float], draws: NDArray[np.float64]
               ) -> list[stats.Interval | None]:
    """The percentile interval of each column of ``draws`` around its estimate, as
    :func:`stats.bootstrap_intervals` makes it from one statistic's draws (a NaN draw is
    a resample without the figure, left out; None: no draw had it)."""
    import numpy as np

    bad = [bool(b) for b in np.asarray(np.isnan(draws).any(axis=0))]
    out: list[stats.Interval | None] = [None] * len(estimates)
    good = [j for j, b in enumerate(bad) if not b]
    if good:
        made = stats.percentile_intervals_many([estimates[j] for j in good], draws[:, good])
        for j, iv in zip(good, made, strict=True):
            out[j] = iv
    for j in (j for j, b in enumerate(bad) if b):
        kept = stats._kept(draws[:, j])
        out[j] = stats._percentile_interval(estimates[j], kept, stats.CONFIDENCE) \
            if kept else None
    return out


def _requests_of(levels: Sequence[LevelResult]) -> _Requests | None:
    """The point's successful requests for output throughput's bootstrap over requests
    (None: no such bootstrap — 3 or more repeats, no request, no figure)."""
    if not levels or len(levels) >= MIN_REPEATS:
        return None
    e2el = [r.latency_s for lv in levels for r in lv.requests if r.ok]
    tokens = [r.output_tokens for lv in levels for r in lv.requests if r.ok]
    if not e2el:
        return None
    total = math.fsum(e2el)
    stat = _Throughput(_in_flight(levels, total))
    estimate = stat.of_sums(total, sum(tokens))
    return None if estimate is None else _Requests(e2el, tokens, stat.in_flight, estimate)


#: points bootstrapped together at most (resamples × points arrays of 0.5 MB: the
#: numpy calls are few, the peak memory small)
_BATCH = 64


def series_tests(concurrency: int, points: Sequence[Sequence[LevelResult]], metric: str,
                 *, seed: int = stats.SEED
                 ) -> list[tuple[dict[str, FigureCI], int | None, MetricTest | None]]:
    """A series of points of one concurrency (a trend: run after run): for each, its
    :func:`point_intervals` of ``metric``, the index of the last point before it with
    that figure (None: none) and the test against that point
    (:func:`compare_points`' one test of ``metric``, None when there is none).

    The very values those functions give one point and one pair at a time; the trend's
    usual case — output throughput bootstrapped over requests — is made for every point
    at once (points with as many requests resample with the same indices), the others
    one at a time by those functions."""
    import numpy as np

    usable = [_usable(levels) for levels in points]
    fast: dict[int, _Requests] = {}
    if metric == "output_throughput":
        for k, u in enumerate(usable):
            got = _requests_of(u)
            if got is not None:
                fast[k] = got
    cis: list[dict[str, FigureCI] | None] = [None] * len(points)
    by_n: dict[int, list[int]] = {}
    for k, req in fast.items():
        by_n.setdefault(len(req.e2el), []).append(k)
    for n, group in by_n.items():
        (picks,) = stats.resample_picks(seed, stats.RESAMPLES, [n])
        for at in range(0, len(group), _BATCH):
            ks = group[at:at + _BATCH]
            made = _intervals([fast[k].estimate for k in ks],
                              _throughput_many([fast[k] for k in ks], picks))
            for k, iv in zip(ks, made, strict=True):
                if iv is not None:
                    cis[k] = {metric: FigureCI(metric, iv, METHOD_REQUESTS, len(usable[k]),
                                               len(fast[k].e2el))}
    intervals = [ci if ci is not None else point_intervals(points[k], [metric], seed=seed)
                 for k, ci in enumerate(cis)]
    # each point's test against the last point before it that has the figure
    before: list[int | None] = []
    last: int | None = None
    for ci in intervals:
        before.append(last)
        if metric in ci:
            last = len(before) - 1
    tests: list[MetricTest | None] = [None] * len(points)
    by_sizes: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for k, j in enumerate(before):
        if j is None:
            continue
        if j in fast and k in fast and cis[j] is not None and cis[k] is not None:
            by_sizes.setdefault((len(fast[j].e2el), len(fast[k].e2el)), []).append((j, k))
        else:
            one = compare_points(concurrency, points[j], points[k], [metric], seed=seed,
                                 intervals=(intervals[j], intervals[k]))
            tests[k] = one[0] if one else None
    for (na, nb), chain in by_sizes.items():
        pa, pb = stats.resample_picks(seed, stats.RESAMPLES, [na, nb])
        for at in range(0, len(chain), _BATCH):
            pairs = chain[at:at + _BATCH]
            xs = _throughput_many([fast[j] for j, _ in pairs], pa)
            ys = _throughput_many([fast[k] for _, k in pairs], pb)
            rel = stats._relative_many(xs, ys)
            unclean: NDArray[np.bool_] = np.isnan(xs) | np.isnan(ys) | np.isnan(rel)
            bad = [bool(b) for b in np.asarray(unclean.any(axis=0))]
            good = [col for col, b in enumerate(bad) if not b]
            diffs: dict[int, stats.Difference] = {}
            ivs = stats.percentile_intervals_many(
                [stats._relative(fast[pairs[col][0]].estimate, fast[pairs[col][1]].estimate)
                 for col in good], rel[:, good]) if good else []
            for col, d in zip(good, ivs, strict=True):
                diffs[col] = stats.Difference(d.estimate, d.lo, d.hi, None, "bootstrap")
            for col, (j, k) in enumerate(pairs):
                if bad[col]:  # a resample without a figure, or inf − inf: the one-pair path
                    diffs[col] = stats.bootstrap_difference(
                        _point_samples(usable[j]), _point_samples(usable[k]),
                        _Throughput(fast[j].in_flight), _Throughput(fast[k].in_flight),
                        seed=seed)
                tests[k] = MetricTest(concurrency, metric, intervals[j][metric],
                                      intervals[k][metric], diffs[col])
    return [(intervals[k], before[k], tests[k]) for k in range(len(points))]


VERDICTS = ("b-faster", "b-slower", "no-significant-difference")


#: the verdict of a level measured once a side: launch-to-launch noise is unknown
NOISE_UNKNOWN = "noise-unknown"


def verdict(tests: Sequence[MetricTest]) -> str | None:
    """On output throughput: ``b-faster`` | ``b-slower`` | ``no-significant-difference``
    | :data:`NOISE_UNKNOWN` (one launch a side: no winner claimed); None: the level has
    no throughput on one side."""
    for t in tests:
        if t.metric == "output_throughput":
            if t.one_launch:
                return NOISE_UNKNOWN
            if t.difference is None or not t.significant:
                return "no-significant-difference"
            return "b-faster" if t.difference.delta_pct > 0 else "b-slower"
    return None


def until_ci_done(levels: Sequence[LevelResult], pct: float) -> bool:
    """``bench --until-ci PCT``: the point has ≥ 3 repeats and its throughput interval's
    half-width is under ``pct`` % of the mean (a request bootstrap never ends it: it
    cannot see run-to-run noise)."""
    ci = point_intervals(levels, ["output_throughput"]).get("output_throughput")
    return (ci is not None and ci.method == METHOD_REPEATS
            and ci.interval.half_width_pct < pct)


def intervals_json(intervals: Mapping[str, FigureCI]) -> JsonObject:
    return {name: ci.to_json() for name, ci in intervals.items()}


def by_concurrency(levels: Sequence[LevelResult]) -> list[tuple[int, list[LevelResult]]]:
    """Levels grouped by concurrency (repeats together), in the order first run."""
    out: dict[int, list[LevelResult]] = {}
    for lv in levels:
        out.setdefault(lv.concurrency, []).append(lv)
    return list(out.items())


@dataclass(frozen=True)
class UntilCi:
    """How ``--until-ci`` ended for one concurrency."""

    concurrency: int
    target_pct: float
    repeats: int
    half_width_pct: float | None  # None: no interval (no completed level)
    reached: bool

    def line(self, max_repeat: int) -> str:
        got = ("no interval" if self.half_width_pct is None
               else f"±{self.half_width_pct:.1f} %")
        if self.reached:
            return (f"concurrency {self.concurrency}: throughput CI {got} after "
                    f"{self.repeats} repeats (under ±{self.target_pct:g} %)")
        why = (f"--max-repeat {max_repeat} reached" if self.repeats >= max_repeat
               else "stopped early")
        return (f"concurrency {self.concurrency}: gave up — throughput CI {got} after "
                f"{self.repeats} repeats, not under ±{self.target_pct:g} % ({why})")

    def to_json(self) -> JsonObject:
        return {"target_pct": self.target_pct, "repeats": self.repeats,
                "half_width_pct": self.half_width_pct, "reached": self.reached}


def until_ci_outcomes(levels: Sequence[LevelResult], pct: float) -> list[UntilCi]:
    """Per concurrency: whether ``--until-ci pct`` was met, from the levels run."""
    out = []
    for c, lvs in by_concurrency(levels):
        ci = point_intervals(lvs, ["output_throughput"]).get("output_throughput")
        hw = None if ci is None else _finite(ci.interval.half_width_pct)
        out.append(UntilCi(c, pct, len(lvs), hw, until_ci_done(lvs, pct)))
    return out


def levels_json(levels: Sequence[LevelResult], until_ci: float | None = None
                ) -> list[JsonObject]:
    """``bench --json``'s ``intervals``: per concurrency, each headline figure's interval."""
    outcomes = {u.concurrency: u for u in until_ci_outcomes(levels, until_ci)} \
        if until_ci is not None else {}
    out = []
    for c, lvs in by_concurrency(levels):
        doc: JsonObject = {"concurrency": c,
                               "figures": intervals_json(point_intervals(lvs))}
        if c in outcomes:
            doc["until_ci"] = outcomes[c].to_json()
        out.append(doc)
    return out
