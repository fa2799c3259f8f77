"""Per-level figures of every benchmark, grouped into series (PURE).

A *series* is one benchmark result of one run: one curve in the plots, one block of
rows in the tables. Levels of the same concurrency (``--repeat``) are folded into
one :class:`Point` whose figures are the mean over the repeats, with the spread
(min, max) kept for ``compare`` and the tables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.bench.model import BenchResult, LevelResult, Stats
from variantctl.bench.uncertainty import FigureCI, point_intervals
from variantctl.report.model import RunInput
from variantctl.secretmask import DEFAULT, SecretRule

if TYPE_CHECKING:
    from variantctl.bench.gpu import Stat


@dataclass(frozen=True)
class Figure:
    """A mean over repeats and its spread (equal to the mean for one repeat)."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def spread(self) -> float:
        return self.hi - self.lo


def figure(values: Sequence[float]) -> Figure | None:
    if not values:
        return None
    return Figure(sum(values) / len(values), min(values), max(values), len(values))


@dataclass(frozen=True)
class GpuFigures:
    """One GPU over one point: avg/max utilisation, memory (MiB) and power (W)."""

    index: int
    util_avg: float | None
    util_max: float | None
    mem_avg: float | None
    mem_max: float | None
    mem_total: float | None
    power_avg: float | None
    power_max: float | None
    power_limit: float | None


def _stat(stats: Mapping[str, Stat], key: str, attr: str) -> float | None:
    stat = stats.get(key)
    if stat is None:
        return None
    value: float | None = getattr(stat, attr)
    return value


@dataclass(frozen=True)
class Point:
    """One concurrency of one series (repeats folded)."""

    concurrency: int
    levels: tuple[LevelResult, ...]

    def fig(self, get: Callable[[LevelResult], float | None]) -> Figure | None:
        return figure([v for v in (get(lv) for lv in self.levels) if v is not None])

    @functools.cached_property
    def intervals(self) -> dict[str, FigureCI]:
        """Each headline figure's 95 % interval (bench.uncertainty), computed once."""
        return point_intervals(self.levels)

    @property
    def completed(self) -> int:
        return sum(lv.metrics.completed for lv in self.levels)

    @property
    def failed(self) -> int:
        return sum(lv.metrics.failed for lv in self.levels)

    @property
    def partial(self) -> bool:
        return any(lv.partial for lv in self.levels)

    @property
    def gpus(self) -> tuple[GpuFigures, ...] | None:
        """Per GPU, from the first repeat that sampled GPUs; None when none did."""
        for lv in self.levels:
            if lv.gpu is not None and lv.gpu.available:
                return tuple(
                    GpuFigures(d.index, _stat(d.stats, "util_gpu_pct", "avg"),
                               _stat(d.stats, "util_gpu_pct", "max"),
                               _stat(d.stats, "mem_used_mib", "avg"),
                               _stat(d.stats, "mem_used_mib", "max"), d.mem_total_mib,
                               _stat(d.stats, "power_w", "avg"), _stat(d.stats, "power_w", "max"),
                               d.power_limit_w)
                    for d in lv.gpu.devices)
        return None

    @property
    def gpu_reason(self) -> str | None:
        """Why the GPUs were not sampled (the monitor's reason), when they were not."""
        for lv in self.levels:
            if lv.gpu is not None and not lv.gpu.available:
                return lv.gpu.reason or "not available"
        return None if self.gpus is not None else "not sampled"


@dataclass(frozen=True)
class Series:
    """One benchmark result of one run."""

    run: RunInput
    file: str
    result: BenchResult
    label: str
    points: tuple[Point, ...]

    @property
    def host(self) -> str:
        return str(self.run.record.host.get("name") or self.result.target.host or "")

    @property
    def gpu_count(self) -> int | None:
        """GPUs the monitor saw (the most in any level); None without samples."""
        counts = [len(p.gpus or ()) for p in self.points if p.gpus]
        return max(counts) if counts else None


def bench_label(result: BenchResult) -> str:
    """What distinguishes one benchmark of a run from another: prompt and lengths."""
    p = result.params
    words = [p.prompt]
    if p.input_len is not None:
        words.append(f"in {p.input_len}")
    words.append(f"out {p.output_len}")
    return " ".join(words)


def series_of(runs: Sequence[RunInput], secrets: SecretRule = DEFAULT) -> list[Series]:
    """Every benchmark of every run as a series, labelled uniquely.

    The label is the settings that vary between the runs (``eager=off seqs=2``,
    :mod:`variantctl.report.labels`), else the run's name; a run with several benchmarks
    adds what tells them apart (prompt, lengths), and a label shared by two runs adds the
    run's sequence number, so no two curves share a legend entry.
    """
    from variantctl.report.labels import labels

    by_settings = labels(runs, secrets)
    raw: list[tuple[RunInput, str, BenchResult, str]] = []
    for run in runs:
        many = len(run.results) > 1
        for i, (file, result) in enumerate(run.results):
            label = by_settings.get(run.run_id) or run.name
            if many:
                label += f" [{bench_label(result)}]"
                if sum(bench_label(r) == bench_label(result) for _, r in run.results) > 1:
                    label += f" #{i + 1}"
            raw.append((run, file, result, label))
    counts: dict[str, int] = {}
    for *_, label in raw:
        counts[label] = counts.get(label, 0) + 1
    out = []
    for run, file, result, label in raw:
        if counts[label] > 1:
            label = f"{label} (run {run.record.seq})" if run.record.seq else \
                f"{label} ({run.run_id})"
        out.append(Series(run, file, result, label, points_of(result.levels)))
    return out


def points_of(levels: Sequence[LevelResult]) -> tuple[Point, ...]:
    """Levels grouped by concurrency, in the order the ladder first ran them."""
    order: list[int] = []
    by_c: dict[int, list[LevelResult]] = {}
    for lv in levels:
        if lv.concurrency not in by_c:
            order.append(lv.concurrency)
        by_c.setdefault(lv.concurrency, []).append(lv)
    return tuple(Point(c, tuple(by_c[c])) for c in order)


# -- the metrics every table and plot shows, by name ----------------------------------------


def _stat_of(get: Callable[[LevelResult], Stats], field: str
             ) -> Callable[[LevelResult], float | None]:
    """A statistic of a level, None when its sample was empty (vLLM writes 0 then: a TPS of
    0 for a level whose requests all came in one chunk would read as a measurement)."""

    def value(lv: LevelResult) -> float | None:
        stats = get(lv)
        if not stats.count:
            return None
        v = float(getattr(stats, field))
        return None if v != v else v  # NaN: an imported file that lacks the figure

    return value


#: name -> (heading, unit, getter, higher is better)
METRICS: dict[str, tuple[str, str, Callable[[LevelResult], float | None], bool]] = {
    "success": ("success", "%", lambda lv: 100.0 * lv.metrics.success_rate, True),
    "ttft_p90": ("TTFT P90", "ms", _stat_of(lambda lv: lv.metrics.ttft_ms, "p90"), False),
    "tps_p10": ("Output TPS P10", "tok/s", _stat_of(lambda lv: lv.metrics.output_tps, "p10"),
                True),
    "tps_p50": ("Output TPS P50", "tok/s", _stat_of(lambda lv: lv.metrics.output_tps, "p50"),
                True),
    "agg_tps": ("aggregate TPS", "tok/s", lambda lv: lv.metrics.output_throughput, True),
    "tpot_mean": ("TPOT mean", "ms", _stat_of(lambda lv: lv.metrics.tpot_ms, "mean"), False),
    "itl_p50": ("ITL P50", "ms", _stat_of(lambda lv: lv.metrics.itl_ms, "p50"), False),
    "e2el_p90": ("E2EL P90", "ms", _stat_of(lambda lv: lv.metrics.e2el_ms, "p90"), False),
    "req_tput": ("requests/s", "req/s", lambda lv: lv.metrics.request_throughput, True),
}
