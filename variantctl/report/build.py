"""A report as a document value: sections of paragraphs, tables and plots (PURE).

:func:`build` turns a :class:`~variantctl.report.model.ReportInput` into a
:class:`ReportDoc`; the Markdown and HTML writers only lay it out, and
:mod:`variantctl.report.plots` draws its :class:`PlotData`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from variantctl.report.model import ReportInput
from variantctl.report.plots import Line, PlotData
from variantctl.report.profile import StackedBars, breakdown_table, stacked_bars
from variantctl.report.roofline import roofline
from variantctl.report.series import METRICS, Series, series_of
from variantctl.report.summary import winner_lines
from variantctl.report.tables import (
    UP,
    Table,
    curve_table,
    failures_table,
    hardware_table,
    has_gpu_data,
    num,
    points_table,
    runs_table,
    steady_table,
)


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    plots: tuple[PlotData | StackedBars, ...] = ()


@dataclass(frozen=True)
class ReportDoc:
    title: str
    subtitle: str
    sections: tuple[Section, ...]

    @property
    def plots(self) -> tuple[PlotData | StackedBars, ...]:
        return tuple(p for s in self.sections for p in s.plots)


def _levels(series: Sequence[Series]) -> list[int]:
    return sorted({p.concurrency for s in series for p in s.points})


def _logx(series: Sequence[Series]) -> bool:
    levels = _levels(series)
    return bool(levels) and levels[-1] / levels[0] >= 8


def metric_plot(series: Sequence[Series], metric: str, name: str, scale: float = 1.0,
                unit: str | None = None) -> PlotData:
    """``metric`` (mean over repeats) vs concurrency, one line per series."""
    heading, default_unit, get, _ = METRICS[metric]
    lines = []
    for s in series:
        xs, ys = [], []
        for p in s.points:
            f = p.fig(get)
            if f is not None:
                xs.append(float(p.concurrency))
                ys.append(f.mean * scale)
        if xs:
            lines.append(Line(s.label, tuple(xs), tuple(ys)))
    return PlotData(name, f"{heading} vs concurrency", "concurrency",
                    f"{heading} ({unit or default_unit})", tuple(lines), logx=_logx(series))


def gpu_plot(series: Sequence[Series]) -> PlotData:
    """Mean GPU utilisation over the GPUs of a point vs concurrency."""
    lines = []
    for s in series:
        xs, ys = [], []
        for p in s.points:
            utils = [g.util_avg for g in (p.gpus or ()) if g.util_avg is not None]
            if utils:
                xs.append(float(p.concurrency))
                ys.append(sum(utils) / len(utils))
        if xs:
            lines.append(Line(s.label, tuple(xs), tuple(ys)))
    return PlotData("gpu_util.png", "GPU utilisation vs concurrency", "concurrency",
                    "GPU util % (avg over GPUs)", tuple(lines), logx=_logx(series))


def gpus_of(s: Series, report: ReportInput) -> tuple[int, str]:
    """How many GPUs a series ran on, and where that number comes from."""
    if s.gpu_count:
        return s.gpu_count, "sampled"
    peaks = report.peaks.get(s.host)
    if peaks is not None:
        return peaks.count, "declared"
    return 1, "assumed"


def pareto_plot(series: Sequence[Series], report: ReportInput) -> PlotData:
    """The second seed's trade-off: throughput per GPU vs what one user gets."""
    lines = []
    for s in series:
        n, _ = gpus_of(s, report)
        xs, ys, notes = [], [], []
        for p in s.points:
            user = p.fig(METRICS["tps_p50"][2])
            agg = p.fig(METRICS["agg_tps"][2])
            if user is None or agg is None:
                continue
            xs.append(user.mean)
            ys.append(agg.mean / n)
            notes.append(f"c{p.concurrency}")
        if xs:
            lines.append(Line(s.label, tuple(xs), tuple(ys), tuple(notes)))
    return PlotData("pareto.png", "Throughput per GPU vs per-user TPS",
                    "per-user output TPS (P50, tok/s)", "aggregate TPS per GPU (tok/s)",
                    tuple(lines), pareto=True)


def _context(s: Series) -> float:
    """Mean tokens in context while decoding: the prompt plus half the output."""
    p = s.result.params
    prompt = p.input_len
    if prompt is None:
        done = [lv.metrics for pt in s.points for lv in pt.levels if lv.metrics.completed]
        prompt = int(sum(m.total_input_tokens / m.completed for m in done) / len(done)) \
            if done else 0
    return prompt + p.output_len / 2


def roofline_section(series: Sequence[Series], report: ReportInput) -> Section | None:
    rows = []
    notes = []
    for s in series:
        peaks = report.peaks.get(s.host)
        shape = report.models.get(s.run.run_id)
        if peaks is None:
            continue
        if shape is None:
            notes.append(f"{s.label}: the model's config.json could not be read here, "
                         "no roofline.")
            continue
        n, how = gpus_of(s, report)
        for p in s.points:
            agg = p.fig(METRICS["agg_tps"][2])
            if agg is None:
                continue
            r = roofline(shape, peaks, p.concurrency, _context(s), agg.mean, n)
            rows.append((s.label, str(p.concurrency), f"{n} ({how})", num(r.oi, 2),
                         num(r.ridge, 1), r.bound, num(r.achieved_tflops, 3),
                         num(r.ceiling_tflops, 3), num(r.achieved_bandwidth_gbs, 1),
                         f"{100 * r.attainment:.1f}"))
    if not rows and not notes:
        return None
    names = sorted({f"{h}: {p.name or 'GPU'} {num(p.bandwidth_gbs, 0)} GB/s, "
                    f"{num(p.tflops, 1)} TFLOPS" for h, p in report.peaks.items()})
    return Section(
        "Roofline",
        paragraphs=(
            "Per decode step: FLOPs = 2 × active parameters + attention over the context, "
            "bytes = weights read once + every sequence's KV cache. OI = FLOPs / byte; "
            "ceiling = min(peak FLOPs, OI × peak bandwidth) over the GPUs used; attainment = "
            "aggregate TPS × FLOPs per token / ceiling. Declared peaks: " + "; ".join(names)
            + ".", *notes),
        tables=(Table("Roofline", ("point", "c", "GPUs", "OI FLOP/B", "ridge", "bound",
                                   "achieved TFLOPS", "ceiling TFLOPS", "achieved GB/s",
                                   "attainment %"), tuple(rows)),) if rows else (),
    )


def build(report: ReportInput) -> ReportDoc:
    series = series_of([r for r in report.runs if r.results])
    failed = [r for r in report.runs if r.record.verdict.kind not in UP]
    summary = (f"{len(report.runs)} run(s), {len(series)} benchmark(s), "
               f"{len(failed)} failed start(s), {len(report.skips)} skipped point(s).")
    unused = tuple(f"Benchmark of {r.run_id} not used: {u}" for r in report.runs
                   for u in r.unreadable) + tuple(r.note for r in report.runs if r.note)
    sections = [Section("Runs", (summary, *unused), (runs_table(report.runs),))]
    if series:
        sections.append(Section(
            "Results",
            paragraphs=winner_lines(series),
            tables=(points_table(series), curve_table(series, "agg_tps"),
                    curve_table(series, "ttft_p90", 1e-3, "s")),
            plots=(metric_plot(series, "agg_tps", "agg_tps.png"),
                   metric_plot(series, "tpot_mean", "tpot.png"),
                   metric_plot(series, "ttft_p90", "ttft_p90.png", 1e-3, "s")),
        ))
        gpu = has_gpu_data(series)
        sections.append(Section(
            "Hardware",
            paragraphs=() if gpu else (
                "GPU figures not available: no level was sampled by a GPU monitor "
                "(a CPU host, or a host without nvidia-smi / ixsmi).",),
            tables=(hardware_table(series),),
            plots=(gpu_plot(series),) if gpu else (),
        ))
        sections.append(Section("Throughput vs latency", plots=(pareto_plot(series, report),),
                                paragraphs=(_gpu_note(series, report),)))
        sections.append(Section("Steady state", tables=(steady_table(series),)))
        roof = roofline_section(series, report)
        if roof is not None:
            sections.append(roof)
    else:
        sections.append(Section("Results", ("No benchmark results in these runs.",)))
    profiled = [(r.name, r.profiles) for r in report.runs if r.profiles]
    if profiled:
        bars = stacked_bars(profiled)
        sections.append(Section(
            "Code-level profile",
            ("Per variant and level (bench --profile): calls, total and share of each "
             "instrumented point, the unaccounted rest of a step and the time between "
             "steps; GPU points without sync: true measure host time only "
             "(docs/profiling.md).",),
            tables=(breakdown_table(profiled),),
            plots=(bars,) if bars is not None else (),
        ))
    if failed or report.skips:
        sections.append(Section("Failures and skipped points",
                                tables=(failures_table(report.runs, report.skips),)))
    subtitle = f"sweep {report.sweep}" if report.sweep else "runs " + ", ".join(
        r.run_id for r in report.runs[:6]) + (" …" if len(report.runs) > 6 else "")
    if report.created_at:
        subtitle += f" · {report.created_at}"
    return ReportDoc(report.title, subtitle, tuple(sections))


def _gpu_note(series: Sequence[Series], report: ReportInput) -> str:
    parts = []
    for s in series:
        n, how = gpus_of(s, report)
        parts.append(f"{s.label}: {n} GPU ({how})")
    return ("Throughput per GPU divides aggregate TPS by the GPUs used — " + "; ".join(parts)
            + ". 'assumed': no samples and no gpu count in hosts.yaml. Labels: concurrency.")
