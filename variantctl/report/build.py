"""A report as a document value: sections of paragraphs, tables and plots (PURE).

:func:`build` turns a :class:`~variantctl.report.model.ReportInput` into a
:class:`ReportDoc`; the Markdown and HTML writers only lay it out, and
:mod:`variantctl.report.plots` draws its :class:`PlotData`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from variantctl.bench.uncertainty import HEADLINES, MARKS_LEGEND, FigureCI
from variantctl.report.findings import KNEE_GAIN_PCT, best_points, knee, tp_scaling
from variantctl.report.model import ReportInput
from variantctl.report.plots import Line, PlotData
from variantctl.report.profile import StackedBars, breakdown_table, stacked_bars
from variantctl.report.roofline import roofline
from variantctl.report.section import Section
from variantctl.report.series import METRICS, Series, series_of
from variantctl.report.summary import winner_lines
from variantctl.report.tables import (
    UP,
    Table,
    ci_text,
    curve_table,
    failures_table,
    hardware_table,
    has_gpu_data,
    num,
    points_table,
    runs_table,
    steady_table,
)
from variantctl.report.trend import trend
from variantctl.report.tuneplot import TuneCurve
from variantctl.report.tunesection import tune_sections, verdict_line


@dataclass(frozen=True)
class ReportDoc:
    title: str
    subtitle: str
    sections: tuple[Section, ...]
    #: the winners (report.summary.winner_lines), as the command prints them too
    summary: tuple[str, ...] = ()

    @property
    def plots(self) -> tuple[PlotData | StackedBars | TuneCurve, ...]:
        return tuple(p for s in self.sections for p in s.plots)


def _levels(series: Sequence[Series]) -> list[int]:
    return sorted({p.concurrency for s in series for p in s.points})


def _logx(series: Sequence[Series]) -> bool:
    levels = _levels(series)
    return bool(levels) and levels[-1] / levels[0] >= 8


def _err(f: FigureCI | None, scale: float = 1.0) -> tuple[float, float] | None:
    """(below, above) of an interval around its estimate, scaled; None without one."""
    if f is None or f.interval.lo != f.interval.lo:  # nan: no interval
        return None
    iv = f.interval
    return ((iv.estimate - iv.lo) * scale, (iv.hi - iv.estimate) * scale)


def metric_plot(series: Sequence[Series], metric: str, name: str, scale: float = 1.0,
                unit: str | None = None) -> PlotData:
    """A headline figure vs concurrency, one line per series, with 95 % error bars."""
    h = HEADLINES[metric]
    lines = []
    for s in series:
        xs, ys, errs = [], [], []
        for p in s.points:
            f = p.intervals.get(metric)
            if f is not None:
                xs.append(float(p.concurrency))
                ys.append(f.estimate * scale)
                errs.append(_err(f, scale))
        if xs:
            lines.append(Line(s.label, tuple(xs), tuple(ys),
                              yerr=tuple(e or (0.0, 0.0) for e in errs)
                              if any(errs) else ()))
    return PlotData(name, f"{h.heading} vs concurrency (95 % CI)", "concurrency",
                    f"{h.heading} ({unit or h.unit})", tuple(lines), logx=_logx(series))


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
        xerr: list[tuple[float, float]] = []
        yerr: list[tuple[float, float]] = []
        for p in s.points:
            user = p.intervals.get("tps_p50")
            agg = p.intervals.get("output_throughput")
            if user is None or agg is None:
                continue
            xs.append(user.estimate)
            ys.append(agg.estimate / n)
            xerr.append(_err(user) or (0.0, 0.0))
            yerr.append(_err(agg, 1.0 / n) or (0.0, 0.0))
            notes.append(f"c{p.concurrency}")
        if xs:
            lines.append(Line(s.label, tuple(xs), tuple(ys), tuple(notes), tuple(yerr),
                              tuple(xerr)))
    return PlotData("pareto.png", "Throughput per GPU vs per-user TPS (95 % CI)",
                    "per-user output TPS (P50, tok/s)", "output tok/s per GPU",
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
    series = series_of([r for r in report.runs if r.results], report.secrets)
    failed = [r for r in report.runs if r.record.verdict.kind not in UP]
    summary = (f"{len(report.runs)} run(s), {len(series)} benchmark(s), "
               f"{len(failed)} failed start(s), {len(report.skips)} skipped point(s).")
    unused = tuple(f"Benchmark of {r.run_id} not used: {u}" for r in report.runs
                   for u in r.unreadable) + tuple(r.note for r in report.runs if r.note)
    sections: list[Section] = []
    winners = winner_lines(series)  # made once: the summary section and the command's
    said: tuple[str, ...] = winners  # what the command prints: the tune's verdict first
    if report.tune is not None:
        sections += tune_sections(report.tune)
        said = (verdict_line(report.tune), *winners)
        if not report.runs:  # the tune alone: no empty run sections under it
            return ReportDoc(report.title, _subtitle(report),
                             tuple(_one_heading(s) for s in sections), said)
    if series:
        sections.append(summary_section(series, winners))
    sections.append(Section("Runs", (summary, *unused),
                            (runs_table(report.runs, {s.run.run_id: s.label for s in series}),)))
    if series:
        sections.append(Section(
            "Results",
            tables=(points_table(series), curve_table(series, "output_throughput"),
                    curve_table(series, "ttft_p90", 1)),
            plots=(metric_plot(series, "output_throughput", "agg_tps.png"),
                   metric_plot(series, "tpot_mean", "tpot.png"),
                   metric_plot(series, "ttft_p90", "ttft_p90.png")),
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
        over_time = trend_section(report)
        if over_time is not None:
            sections.append(over_time)
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
    return ReportDoc(report.title, _subtitle(report),
                     tuple(_one_heading(s) for s in sections), said)


def _subtitle(report: ReportInput) -> str:
    parts = [f"tune {report.tune.name}"] if report.tune is not None else []
    if report.sweep:
        parts.append(f"sweep {report.sweep}")
    elif report.runs:
        parts.append("runs " + ", ".join(r.run_id for r in report.runs[:6])
                     + (" …" if len(report.runs) > 6 else ""))
    subtitle = ", ".join(parts)
    if report.created_at:
        subtitle += f" · {report.created_at}"
    return subtitle


def _one_heading(section: Section) -> Section:
    """A table named like its section is not headed twice (``## Runs`` then **Runs**)."""
    if not any(t.title == section.title for t in section.tables):
        return section
    return replace(section, tables=tuple(replace(t, title="") if t.title == section.title
                                         else t for t in section.tables))


def trend_section(report: ReportInput) -> Section | None:
    """Runs of one configuration (nothing varies between them): output throughput run by
    run, with the changes beyond the noise (report.trend) — ``runs trend`` drawn."""
    measured = [r for r in report.runs if r.results]
    if len(measured) < 2 or len({r.record.key for r in measured}) != 1:
        return None
    t = trend(measured)
    order = {r.run_id: i + 1 for i, r in enumerate(t.runs)}
    lines = []
    for c in dict.fromkeys(p.concurrency for p in t.points):
        pts = [p for p in t.points if p.concurrency == c]
        lines.append(Line(f"c={c}", tuple(float(order[p.run.run_id]) for p in pts),
                          tuple(p.figure.estimate for p in pts),
                          yerr=tuple(_err(p.figure) or (0.0, 0.0) for p in pts)))
    rows = []
    for p in t.points:
        ch = p.change
        if ch is None:
            change = ""
        elif p.beyond_noise:
            change = "beyond noise: " + ("; ".join(f"{x.group} {x.key}" for x in p.changed)
                                         or "no setting differs")
        else:
            change = "within noise"
        rows.append((str(p.concurrency), f"{order[p.run.run_id]}: {p.run.run_id}",
                     p.run.record.created_at[:16].replace("T", " "), ci_text(p.figure),
                     "" if ch is None or ch.delta_pct is None else f"{ch.delta_pct:+.1f}%",
                     change))
    return Section(
        "Trend across runs",
        (f"{len(t.runs)} runs of configuration {measured[0].record.key}, oldest first "
         "(variantctl runs trend draws the same).",),
        (Table("Output throughput by run", ("c", "run", "created", "output tok/s, 95 % CI",
                                            "Δ % vs previous", "change"), tuple(rows)),),
        (PlotData("trend.png", "Output throughput by run (95 % CI)", "run (oldest first)",
                  "output tok/s", tuple(lines)),))


def summary_section(series: Sequence[Series], winners: Sequence[str]) -> Section:
    """The answer first: which won (``winners``: report.summary.winner_lines of
    ``series``), then the best points with their ties, knees and TP scaling
    (report.findings)."""
    paras = list(winners)
    tables = []
    for metric, higher, digits in (("output_throughput", True, 2), ("ttft_p90", False, 1)):
        h = HEADLINES[metric]
        rows = []
        for b in best_points(series, metric, higher):
            ties = ", ".join(f"{s.label} ({ci_text(f, digits)})" for s, f in b.ties) or "none"
            if b.undecided:
                ties += "; untested (no interval): " + ", ".join(
                    f"{s.label} ({ci_text(f, digits)})" for s, f in b.undecided)
            rows.append((str(b.concurrency), b.series.label, ci_text(b.figure, digits), ties))
        if rows:
            tables.append(Table(
                f"Best {h.heading} ({h.unit}) per concurrency — "
                + ("highest" if higher else "lowest"),
                ("c", "best point", f"{h.heading}, 95 % CI", "not significantly different"),
                tuple(rows)))
    knees = [knee(s) for s in series]
    if any(len(s.points) > 1 for s in series):
        rows = []
        for k in knees:
            if k.concurrency is None:
                rows.append((k.series.label, "none in the ladder", "", ""))
            else:
                rows.append((k.series.label, str(k.concurrency),
                             f"{k.gain_pct:+.1f} % (c={k.concurrency}→{k.next_concurrency})",
                             f"{k.tpot_pct:+.1f} %"))
        tables.append(Table(
            "Knee of each throughput curve", ("point", "knee c", "throughput per doubling",
                                              "TPOT"), tuple(rows),
            note=f"The knee is the first concurrency past which doubling gains less than "
                 f"{KNEE_GAIN_PCT:g} % output throughput while mean TPOT grows: the best "
                 "cost-performance point (docs/report.md)."))
    scaling = tp_scaling(series)
    if scaling:
        tables.append(Table(
            "TP scaling efficiency", ("other settings", "TP", "c", "TP=1 tok/s", "TP=n tok/s",
                                      "efficiency"),
            tuple((t.label, str(t.tp), str(t.concurrency), num(t.throughput_tp1),
                   num(t.throughput_tpn), f"{100 * t.efficiency:.0f} %") for t in scaling),
            note="Throughput at TP=n / (n × throughput at TP=1), same other settings."))
    weak = sorted({f.marks for s in series for p in s.points for f in p.intervals.values()
                   if f.marks})
    if weak:
        paras.append(MARKS_LEGEND + ". A per-request bootstrap sees only the variation "
                     "between requests of one server run: benchmark with --repeat 3 (or "
                     "--until-ci) for intervals that include run-to-run noise.")
    return Section("Summary", tuple(paras), tuple(tables))


def _gpu_note(series: Sequence[Series], report: ReportInput) -> str:
    parts = []
    for s in series:
        n, how = gpus_of(s, report)
        parts.append(f"{s.label}: {n} GPU ({how})")
    return ("Throughput per GPU divides aggregate TPS by the GPUs used — " + "; ".join(parts)
            + ". 'assumed': no samples and no gpu count in hosts.yaml. Labels: concurrency.")
