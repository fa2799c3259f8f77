"""Which variant won, in a sentence or two (PURE): the report's first lines.

The seeds asked two questions of every comparison: which configuration gives the most
aggregate output throughput (at its best concurrency), and which answers first (TTFT
P90 at the lowest concurrency every benchmark ran). The report states both before its
tables, and ``variantctl report`` prints them after writing the files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from variantctl.bench.uncertainty import METHOD_NONE, METHOD_REQUESTS, FigureCI, compare_points
from variantctl.report.series import METRICS, Point, Series


def _best_agg(s: Series) -> tuple[float, int] | None:
    """The series' highest aggregate output TPS and the concurrency it came at."""
    best: tuple[float, int] | None = None
    for p in s.points:
        f = p.fig(METRICS["agg_tps"][2])
        if f is not None and (best is None or f.mean > best[0]):
            best = (f.mean, p.concurrency)
    return best


def _ttft_at(s: Series, concurrency: int) -> float | None:
    for p in s.points:
        if p.concurrency == concurrency:
            f = p.fig(METRICS["ttft_p90"][2])
            return f.mean if f is not None else None
    return None


def _versus(best: float, other: float, label: str, word: str) -> str:
    """``, 21 % more than B`` (nothing when the runner-up's figure is 0)."""
    if not other:
        return ""
    return f", {abs(100.0 * (best - other) / other):.0f} % {word} than {label}"


def capacity_lines(series: Sequence[Series]) -> tuple[str, ...]:
    """``bench --search``: each searched series' capacity, the largest first (a series
    whose search found none is named too: no level met its SLOs)."""
    searched = [s for s in series if s.result.search is not None]
    ranked = sorted(searched, key=lambda s: -(s.result.search.best_level or 0)
                    if s.result.search is not None else 0)
    lines = []
    for i, s in enumerate(ranked):
        sr = s.result.search
        assert sr is not None
        slo = ", ".join(f"{k} ≤ {v:g} ms" for k, v in sr.slo.items())
        unit = "" if sr.mode == "concurrency" else " req/s"
        if sr.best_level is None:
            lines.append(f"Capacity of {s.label}: none — no {sr.mode} met P{sr.percentile:g} "
                         f"{slo}.")
            continue
        why = f"limited by {sr.limiting}" if sr.limiting else "the highest level probed"
        line = (f"{'Most capacity' if i == 0 and len(ranked) > 1 else 'Capacity'}: "
                f"{s.label}, {sr.mode} {sr.best_level:g}{unit} under P{sr.percentile:g} "
                f"{slo} ({why})")
        nxt = ranked[1].result.search if i == 0 and len(ranked) > 1 else None
        if nxt is not None and nxt.best_level:
            line += _versus(sr.best_level, nxt.best_level, ranked[1].label, "more")
        lines.append(line + ".")
    return tuple(lines)


def winner_lines(series: Sequence[Series]) -> tuple[str, ...]:
    """The winners among ``series``: most aggregate throughput; with several, the
    lowest TTFT P90 at the lowest concurrency they all ran. Each figure carries its 95 %
    interval and what it rests on, and the margin over the runner-up at the same
    concurrency says whether it is beyond the noise (bench.uncertainty.compare_points)."""
    lines = list(capacity_lines(series))
    ranked = sorted(((b, s) for s in series if (b := _best_agg(s)) is not None),
                    key=lambda x: -x[0][0])
    if not ranked:
        return tuple(lines)
    (tps, c), top = ranked[0]
    line, compared = _claim(series, top, c, "output_throughput", tps, higher=True, say=(
        lambda v: f"Most throughput: {top.label}, {v:.1f} tok/s aggregate at concurrency {c}"))
    if not compared and len(ranked) > 1:  # no other point ran c: the runner-up's best
        (tps2, _c2), second = ranked[1]
        line += _versus(tps, tps2, second.label, "more")
    lines.append(line + ".")
    common = set.intersection(*({p.concurrency for p in s.points} for s in series))
    if len(series) > 1 and common:
        low = min(common)
        firsts = sorted(((t, s) for s in series if (t := _ttft_at(s, low)) is not None),
                        key=lambda x: x[0])
        if firsts:
            t, s = firsts[0]
            line, _ = _claim(series, s, low, "ttft_p90", t, higher=False, say=(
                lambda v: f"Fastest first token: {s.label}, TTFT P90 {v:.0f} ms at "
                          f"concurrency {low}"))
            lines.append(line + ".")
    return tuple(lines)


def _claim(series: Sequence[Series], top: Series, concurrency: int, metric: str,
           value: float, *, higher: bool, say: Callable[[float], str]) -> tuple[str, bool]:
    """``say(figure)`` with its interval, and the margin over the best other point at the
    same concurrency; whether there was one to compare with."""
    f = _interval(top, concurrency, metric)
    line = say(f.estimate if f is not None else value) + _basis(f, 1 if higher else 0)
    rival = _runner_up(series, top, concurrency, metric, higher=higher)
    if rival is None:
        return line, False
    return line + _margin(top, rival, concurrency, metric, "more" if higher else "less"), True


def _point(s: Series, concurrency: int) -> Point | None:
    return next((p for p in s.points if p.concurrency == concurrency), None)


def _interval(s: Series, concurrency: int, metric: str) -> FigureCI | None:
    p = _point(s, concurrency)
    return p.intervals.get(metric) if p is not None else None


def _basis(f: FigureCI | None, digits: int) -> str:
    """`` (95 % CI 300.1–340.2, n=4 repeats)``: the interval and what it rests on."""
    if f is None:
        return ""
    what = "requests" if f.method == METHOD_REQUESTS else "repeats"
    iv = f.interval
    if f.method == METHOD_NONE or iv.lo != iv.lo:  # nan: no interval could be made
        return f" (n={f.n} {what}{f.marks}, no interval)"
    return f" (95 % CI {iv.lo:.{digits}f}–{iv.hi:.{digits}f}, n={f.n} {what}{f.marks})"


def _runner_up(series: Sequence[Series], top: Series, concurrency: int, metric: str, *,
               higher: bool) -> Series | None:
    """The best other series at the same concurrency (the fair comparison)."""
    others = [(f.estimate, s) for s in series if s is not top
              and (f := _interval(s, concurrency, metric)) is not None]
    if not others:
        return None
    return (max if higher else min)(others, key=lambda x: x[0])[1]


def _margin(top: Series, rival: Series, concurrency: int, metric: str, word: str) -> str:
    """``, 21 % more than B, beyond the noise (B −17 %, 95 % CI −25 to −9 %)`` — or
    *within the noise*, or *untested* when a side has no interval."""
    tp, rp = _point(top, concurrency), _point(rival, concurrency)
    assert tp is not None and rp is not None
    tests = compare_points(concurrency, tp.levels, rp.levels, [metric],
                           intervals=(tp.intervals, rp.intervals))
    if not tests:
        return ""
    (test,) = tests
    a, b = test.a.estimate, test.b.estimate
    text = _versus(a, b, rival.label, word)
    if not text:
        return ""
    d = test.difference
    if d is None:
        return text + " (untested: a side has no interval)"
    if test.one_launch:  # requests of one launch a side: no winner can be claimed
        return (f"{text}; launch-to-launch noise unknown (one launch a side): no winner "
                f"claimed ({rival.label} {_signed(d.delta_pct)} % over requests)")
    verdict = "beyond the noise" if d.significant else "within the noise"
    return (f"{text}, {verdict} ({rival.label} {_signed(d.delta_pct)} %, 95 % CI "
            f"{_signed(d.lo_pct)} to {_signed(d.hi_pct)} %)")


def _signed(pct: float) -> str:
    """``+3``, ``-17``; a value that rounds to zero is ``+0``, never ``-0``."""
    text = f"{pct:+.0f}"
    return "+0" if text == "-0" else text
