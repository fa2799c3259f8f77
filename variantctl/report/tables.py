"""The seeds' tables, as plain values: headings and rows of text (PURE).

Every table here is what the seeds' worklogs wrote by hand: per point success,
TTFT P90, Output TPS P10/P50 and aggregate TPS; the concurrency curve; hardware
(per GPU avg/max utilisation, memory, power); the steady-state window; failures
and skipped points with signature, evidence and remediation. Markdown, HTML and
the terminal render the same values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from variantctl.bench.metrics import NOT_MEASURABLE, burst_point
from variantctl.bench.uncertainty import HEADLINES, MARKS_LEGEND, FigureCI
from variantctl.report.model import PlannedSkip, RunInput
from variantctl.report.series import METRICS, Figure, Series

#: verdicts that mean the server came up (a benchmark could run)
UP = frozenset({"ready", "started"})


@dataclass(frozen=True)
class Table:
    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    #: a line under the table (units, what "not available" means)
    note: str = ""


def num(value: float | None, digits: int = 2) -> str:
    """A figure as the tables print it: ``–`` for none, thousands unseparated."""
    if value is None:
        return "–"
    if abs(value) >= 1000:
        return f"{value:.0f}"
    return f"{value:.{digits}f}"


def fig_text(f: Figure | None, digits: int = 2, scale: float = 1.0) -> str:
    """Mean, and ``(min–max)`` when there were repeats that differ."""
    if f is None:
        return "–"
    text = num(f.mean * scale, digits)
    if f.n > 1 and f.spread > 0:
        text += f" ({num(f.lo * scale, digits)}–{num(f.hi * scale, digits)})"
    return text


def ci_text(f: FigureCI | None, digits: int = 2, scale: float = 1.0) -> str:
    """``estimate ±half-width n=N`` and the marks (``*`` fewer than 3 repeats: a bootstrap
    over requests; ``!`` fewer than 20 requests); no interval: the estimate alone."""
    if f is None:
        return "–"
    iv = f.interval
    out = num(iv.estimate * scale, digits)
    if iv.lo == iv.lo:  # not nan
        out += f" ±{num(iv.half_width * scale, digits)}"
    return f"{out} n={f.n}{f.marks}"


def runs_table(runs: Sequence[RunInput], labels: Mapping[str, str] | None = None) -> Table:
    """Which runs the report covers: id, variant, host, verdict, startup time, benchmarks
    (and the settings of each point, for a sweep's); ``labels`` (run id -> the label the
    other tables use) adds a first column when it names a run other than by its name."""
    labels = labels or {}
    with_labels = any(labels.get(r.run_id, r.name) != r.name for r in runs)
    with_settings = any(r.settings for r in runs)
    rows = []
    for r in runs:
        rec = r.record
        v = rec.verdict
        verdict = v.kind + (f" {v.signature}" if v.signature else "")
        ready = rec.timings.get("time_to_ready_s")
        row: tuple[str, ...] = (
            r.name, rec.run_id, str(rec.host.get("name") or ""), verdict,
            num(ready, 1) if isinstance(ready, (int, float)) else "–", str(len(r.results)))
        if with_labels:
            row = (labels.get(r.run_id, "–"), *row)
        rows.append((*row, r.settings) if with_settings else row)
    headers: tuple[str, ...] = ("point", "run", "host", "verdict", "ready s", "benchmarks")
    if with_labels:
        headers = ("label", "name", *headers[1:])
    return Table("Runs", (*headers, "settings") if with_settings else headers, tuple(rows))


def points_table(series: Sequence[Series]) -> Table:
    """The first seed's table: one row per point and concurrency, each figure with its
    95 % interval and n (bench.uncertainty)."""
    rows = []
    for s in series:
        for p in s.points:
            total = p.completed + p.failed
            cis = p.intervals
            rows.append((
                s.label, str(p.concurrency),
                f"{p.completed}/{total}" + (" partial" if p.partial else ""),
                fig_text(p.fig(METRICS["success"][2]), 0),
                ci_text(cis.get("ttft_p90"), 1),
                *((NOT_MEASURABLE,) * 2 if burst_point(p.levels) else
                  (ci_text(cis.get("tps_p10")), ci_text(cis.get("tps_p50")))),
                ci_text(cis.get("output_throughput")),
                NOT_MEASURABLE if burst_point(p.levels) else ci_text(cis.get("tpot_mean"), 1),
            ))
    return Table(
        "Per point",
        ("point", "c", "ok", "success %", "TTFT P90 ms", "Output TPS P10", "Output TPS P50",
         "output tok/s", "TPOT mean ms"),
        tuple(rows),
        note="Output TPS is per request (output tokens / (E2EL − TTFT)); output tok/s is "
             "output tokens / benchmark duration. " + MARKS_LEGEND
             + "; n: repeats (t interval) or requests (bootstrap).",
    )


def curve_table(series: Sequence[Series], metric: str = "output_throughput",
                digits: int = 2) -> Table:
    """The concurrency curve: one row per concurrency, one column per series."""
    h = HEADLINES[metric]
    levels = sorted({p.concurrency for s in series for p in s.points})
    rows = []
    for c in levels:
        row = [str(c)]
        for s in series:
            point = next((p for p in s.points if p.concurrency == c), None)
            row.append(ci_text(point.intervals.get(metric), digits) if point else "")
        rows.append(tuple(row))
    return Table(f"Concurrency curve: {h.heading} ({h.unit}), 95 % CI",
                 ("c", *(s.label for s in series)), tuple(rows))


def hardware_table(series: Sequence[Series]) -> Table:
    """Per GPU and point: utilisation, memory and power (avg / max), or why not sampled."""
    rows = []
    for s in series:
        for p in s.points:
            gpus = p.gpus
            if not gpus:
                rows.append((s.label, str(p.concurrency), "–",
                             f"not available ({p.gpu_reason})", "", ""))
                continue
            for g in gpus:
                mem = f"{num(g.mem_avg, 0)} / {num(g.mem_max, 0)}"
                if g.mem_total:
                    mem += f" of {num(g.mem_total, 0)}"
                power = f"{num(g.power_avg, 1)} / {num(g.power_max, 1)}"
                if g.power_limit:
                    power += f" of {num(g.power_limit, 0)}"
                rows.append((s.label, str(p.concurrency), str(g.index),
                             f"{num(g.util_avg, 1)} / {num(g.util_max, 1)}", mem, power))
    return Table("Hardware", ("point", "c", "GPU", "util % avg / max", "memory MiB avg / max",
                              "power W avg / max"), tuple(rows),
                 note="Sampled once a second during each level (nvidia-smi / ixsmi).")


def steady_table(series: Sequence[Series]) -> Table:
    """The second seed's steady-state window (in-flight ≥ ⌈0.95 × c⌉) per point; a window
    that is too short is said once, under the table (:func:`short_windows`)."""
    rows = []
    for s in series:
        for p in s.points:
            st = next((lv.metrics.steady for lv in p.levels if lv.metrics.steady), None)
            if st is None:
                rows.append((s.label, str(p.concurrency), "no window", "", "", "", ""))
                continue
            rows.append((s.label, str(p.concurrency),
                         num(st.duration_s, 1) + (" (short)" if st.short else ""),
                         f"{st.requests_started}/{st.requests_completed}",
                         num(st.output_throughput), num(st.ttft_ms.p90, 1),
                         num(st.tpot_ms.mean, 1)))
    short = short_windows(series)
    return Table("Steady state", ("point", "c", "window s", "started/completed",
                                  "TPS", "TTFT P90 ms", "TPOT ms"), tuple(rows),
                 note="Only the time when in-flight requests ≥ ⌈0.95 × concurrency⌉."
                      + (" " + short if short else ""))


def short_windows(series: Sequence[Series]) -> str:
    """One sentence for every point whose steady window is shorter than max(10 s, 10 % of
    the level): which points, and what to do; "" when none is."""
    short = [f"{s.label} c={p.concurrency}" for s in series for p in s.points
             if any(lv.metrics.steady is not None and lv.metrics.steady.short
                    for lv in p.levels)]
    if not short:
        return ""
    shown = ", ".join(short[:8]) + (f" and {len(short) - 8} more" if len(short) > 8 else "")
    return (f"{len(short)} point(s) have a steady window shorter than max(10 s, 10 % of the "
            f"level) — marked (short): {shown}. Their steady figures rest on few requests: "
            "use more requests or --duration.")


def failures_table(runs: Sequence[RunInput], skips: Sequence[PlannedSkip]) -> Table:
    """Runs that did not come up, and points a sweep skipped, with the why and the fix."""
    rows = []
    for r in runs:
        v = r.record.verdict
        if v.kind in UP:
            continue
        evidence = next((f"log:{e.line}: {e.text}" for e in v.evidence), "")
        if not evidence and v.last_lines:
            evidence = v.last_lines[-1]
        rows.append((r.name, f"{v.kind} ({r.run_id})", v.signature or "–",
                     _short(evidence), _short(v.remediation or v.message)))
    for s in skips:
        how = ("predicted" + (f" by {s.rule}" if s.rule else "")) if s.reason == "predicted" \
            else f"skipped: failed before ({s.run_id})" if s.run_id else s.reason
        # a rule's message ends in what to change ("…: vLLM refuses to start; raise …")
        fix = s.remediation or (s.message.rsplit("; ", 1)[-1] if s.reason == "predicted"
                                else "")
        rows.append((s.point, how, s.signature or "–", _short(s.evidence or s.message),
                     _short(fix) or "–"))
    return Table("Failures and skipped points",
                 ("point", "outcome", "signature", "evidence", "remediation"), tuple(rows))


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def has_gpu_data(series: Sequence[Series]) -> bool:
    return any(p.gpus for s in series for p in s.points)
