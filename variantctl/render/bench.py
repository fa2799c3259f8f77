"""Rendering of ``variantctl bench``: rich tables in the seed studies' layout, live progress.

One row per level (and per variant when several are measured, so ``cpu-eager``
and ``cpu-base`` sit in one table):

1. **decode** — the first seed's table: requests, success, TTFT P90, Output
   TPS P10/P50 per request, aggregate output TPS, prompt/cached/reasoning tokens;
2. **latency** — ``vllm bench serve``'s TTFT, TPOT, ITL, E2EL (mean/P50/P99, ms)
   and the second seed's TPOT increase over concurrency 1;
3. **throughput** — request, output and total-token throughput, peak in-flight
   requests, peak output tok/s in a 1-s bucket, goodput;
4. **steady state** — the window with in-flight ≥ ⌈0.95 × concurrency⌉;
   then the 95 % confidence intervals of the headline figures (repeats folded: t over
   ≥ 3 repeats, else a bootstrap over requests, marked) and how ``--until-ci`` ended;
5. **GPU** — per GPU avg / busy avg / max utilisation, memory, power, temperature;
6. **vLLM /metrics** — running, waiting, KV cache, prefix-cache hits, preemptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from variantctl.bench.metrics import NOT_MEASURABLE, burst_point
from variantctl.logs.bounded import visible
from variantctl.render.output import Block, text

if TYPE_CHECKING:
    from rich.table import Table

    from variantctl.bench.gpu import Stat
    from variantctl.bench.model import BenchResult, LevelResult, Stats
    from variantctl.bench.searchresult import SearchResult
    from variantctl.bench.session import ServerDeath
    from variantctl.bench.uncertainty import FigureCI


def _n(value: float | None) -> str:
    """Compact: 3 significant-ish digits (1234, 123, 12.3, 1.23)."""
    if value is None:
        return "-"
    a = abs(value)
    return f"{value:.0f}" if a >= 100 else f"{value:.1f}" if a >= 10 else f"{value:.2f}"


def _s(ms: float) -> str:
    """Milliseconds as seconds (the seeds' TTFT P90 column is in seconds)."""
    return f"{ms / 1000:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _rows(results: Sequence[tuple[str, BenchResult]]) -> list[tuple[str, BenchResult,
                                                                       LevelResult]]:
    return [(label, res, lv) for label, res in results for lv in res.levels]


def _several(results: Sequence[tuple[str, BenchResult]]) -> int:
    return max(len(label) for label, _ in results) if len(results) > 1 else 0


def _level_name(lv: LevelResult, repeats: bool) -> str:
    name = str(lv.concurrency)
    if lv.profile is not None and lv.profile.kind == "rate":
        name = f"{lv.profile.rate:g}/s ≤{lv.concurrency}"
    elif lv.profile is not None and lv.profile.kind in ("ramp-up", "trace"):
        name += f" {lv.profile.label()}"
    if repeats:
        name += f" #{lv.repeat + 1}"
    if lv.partial:
        name += " (partial)"
    return name


def _table(title: str, columns: Sequence[str], several: int) -> Table:
    """``several``: the width of the longest variant label (0: one variant, no column)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    if several:
        table.add_column("variant", no_wrap=True, min_width=several)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
    return table


def decode_table(results: Sequence[tuple[str, BenchResult]]) -> Table:
    several = _several(results)
    repeats = any(res.params.repeat > 1 for _, res in results)
    table = _table("decode (Output TPS per request; tokens from usage)",
                   ["conc", "requests", "success", "TTFT P90 s", "TPS P10", "TPS P50",
                    "aggregate tok/s", "prompt", "cached", "reasoning"], several)
    for label, _res, lv in _rows(results):
        m = lv.metrics
        total = m.completed + m.failed
        cells = [_level_name(lv, repeats), f"{m.completed}/{total}", _pct(m.success_rate),
                 _s(m.ttft_ms.p90), _n(m.output_tps.p10), _n(m.output_tps.p50),
                 _n(m.output_throughput), str(m.total_input_tokens),
                 str(m.total_cached_tokens), str(m.total_reasoning_tokens)]
        table.add_row(*([label] if several else []), *cells)
    return table


def _three(st: Stats) -> str:
    return f"{_n(st.mean)}/{_n(st.p50)}/{_n(st.p99)}"


def latency_table(results: Sequence[tuple[str, BenchResult]]) -> Table:
    several = _several(results)
    repeats = any(res.params.repeat > 1 for _, res in results)
    table = _table("latency ms, mean/P50/P99, as vllm bench serve (TPOT + = over c=1)",
                   ["conc", "TTFT", "TPOT", "ITL", "E2EL", "TPOT +"], several)
    for label, res, lv in _rows(results):
        m = lv.metrics
        inc = res.tpot_increase.get(lv.concurrency)
        cells = [_level_name(lv, repeats), _three(m.ttft_ms), _three(m.tpot_ms),
                 _three(m.itl_ms), _three(m.e2el_ms),
                 "-" if inc is None else f"{inc * 100:+.1f}%"]
        table.add_row(*([label] if several else []), *cells)
    return table


def throughput_table(results: Sequence[tuple[str, BenchResult]]) -> Table:
    several = _several(results)
    repeats = any(res.params.repeat > 1 for _, res in results)
    goodput = any(res.params.goodput for _, res in results)
    cols = ["conc", "duration s", "req/s", "output tok/s", "total tok/s", "peak in-flight",
            "peak tok/s (1 s)"] + (["goodput req/s"] if goodput else [])
    table = _table("throughput", cols, several)
    for label, _res, lv in _rows(results):
        m = lv.metrics
        cells = [_level_name(lv, repeats), _n(m.duration_s), _n(m.request_throughput),
                 _n(m.output_throughput), _n(m.total_token_throughput), str(m.peak_concurrency),
                 f"{m.max_output_tokens_per_s:.0f}"]
        if goodput:
            cells.append(_n(m.request_goodput))
        table.add_row(*([label] if several else []), *cells)
    return table


def steady_table(results: Sequence[tuple[str, BenchResult]]) -> Table:
    several = _several(results)
    repeats = any(res.params.repeat > 1 for _, res in results)
    table = _table("steady state: in-flight ≥ ⌈0.95 × concurrency⌉ (output tok/s; TTFT P50 "
                   "and TPOT mean in ms)",
                   ["conc", "threshold", "window s", "of run", "tok/s", "started",
                    "completed", "TTFT", "TPOT", "note"], several)
    for label, _res, lv in _rows(results):
        m, w = lv.metrics, lv.metrics.steady
        if w is None:
            cells = [_level_name(lv, repeats), "-", "none", "-", "-", "-", "-", "-", "-", ""]
        else:
            share = w.duration_s / m.duration_s if m.duration_s > 0 else None
            cells = [_level_name(lv, repeats), str(w.threshold), _n(w.duration_s),
                     _pct(share), _n(w.output_throughput), str(w.requests_started),
                     str(w.requests_completed), _n(w.ttft_ms.p50), _n(w.tpot_ms.mean),
                     "short" if w.short else ""]
        table.add_row(*([label] if several else []), *cells)
    return table


def _ci(f: FigureCI | None) -> str:
    """``estimate ±half-width`` and the marks (* < 3 repeats, ! < 20 requests)."""
    if f is None:
        return "-"
    iv = f.interval
    return f"{_n(iv.estimate)} ±{_n(iv.half_width)}{f.marks}"


def ci_tables(results: Sequence[tuple[str, BenchResult]]) -> list[Table]:
    """Each level's headline figures with their 95 % intervals (repeats folded)."""
    from variantctl.bench.uncertainty import by_concurrency, point_intervals

    several = _several(results)
    first = _table("95 % confidence intervals: output throughput (tok/s), TTFT (ms)",
                   ["conc", "repeats", "requests", "output tok/s", "TTFT mean", "TTFT P50",
                    "TTFT P90", "TTFT P99"], several)
    second = _table("95 % confidence intervals: TPOT (ms), per-request output TPS (tok/s)",
                    ["conc", "TPOT mean", "TPOT P50", "TPOT P90", "TPOT P99", "TPS P10",
                     "TPS P50"], several)
    for label, res in results:
        for c, lvs in by_concurrency(res.levels):
            cis = point_intervals(lvs)
            thr = cis.get("output_throughput")
            requests = thr.requests if thr else sum(lv.metrics.completed for lv in lvs)
            first.add_row(*([label] if several else []), str(c), str(len(lvs)), str(requests),
                          *(_ci(cis.get(k)) for k in ("output_throughput", "ttft_mean",
                                                      "ttft_p50", "ttft_p90", "ttft_p99")))
            burst = burst_point(lvs)
            second.add_row(*([label] if several else []), str(c),
                           *(NOT_MEASURABLE if burst else _ci(cis.get(k))
                             for k in ("tpot_mean", "tpot_p50", "tpot_p90", "tpot_p99",
                                       "tps_p10", "tps_p50")))
    return [first, second]


def gpu_table(results: Sequence[tuple[str, BenchResult]]) -> Table:
    several = _several(results)
    repeats = any(res.params.repeat > 1 for _, res in results)
    table = _table("GPU: avg/busy avg/max (busy = GPU-Util > 0, per GPU, as the second seed; "
                   "memory, temperature: max; steady: avg/busy avg inside the steady-state "
                   "window)",
                   ["conc", "GPU", "busy/all", "util %", "steady util %", "mem util %",
                    "mem MiB", "power W", "limit W", "temp °C", "SM MHz"], several)
    for label, _res, lv in _rows(results):
        gpu = lv.gpu
        devices = list(getattr(gpu, "devices", ()) or ())
        if not devices:
            reason = getattr(gpu, "reason", None) or "not sampled"
            table.add_row(*([label] if several else []), _level_name(lv, repeats),
                          "-", "-", f"not available: {reason}", "", "", "", "", "", "")
            continue
        steady = {d.index: d for d in (getattr(lv.gpu_steady, "devices", ()) or ())}
        for i, d in enumerate(devices):
            st = d.stats
            limit = "-" if d.power_limit_w is None else f"{d.power_limit_w:.0f}"
            in_window = steady.get(d.index)
            table.add_row(
                *([label] if several else []), _level_name(lv, repeats) if i == 0 else "",
                str(d.index), f"{d.busy_samples}/{d.samples}",
                _pct3(st["util_gpu_pct"]),
                "-" if in_window is None else _pct2(in_window.stats["util_gpu_pct"]),
                _pct3(st["util_mem_pct"]),
                _n(st["mem_used_mib"].max), _pct3(st["power_w"]), limit,
                _n(st["temp_c"].max),
                _n(st["sm_clock_mhz"].avg_busy or st["sm_clock_mhz"].avg))
    return table


def _pct2(st: Stat) -> str:
    def one(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}"

    return f"{one(st.avg)}/{one(st.avg_busy)}"


def _pct3(st: Stat) -> str:
    def one(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}"

    return f"{one(st.avg)}/{one(st.avg_busy)}/{one(st.max)}"


def _unavailable(results: Sequence[tuple[str, BenchResult]], attr: str) -> list[str]:
    """Why ``attr`` (gpu / server_metrics) is missing, when no level of any variant has it."""
    reasons: dict[str, None] = {}
    for _label, _res, lv in _rows(results):
        value = getattr(lv, attr)
        if value is not None and getattr(value, "available", False):
            return []
        reasons[getattr(value, "reason", None) or "not sampled"] = None
    return list(reasons)


def server_table(results: Sequence[tuple[str, BenchResult]]) -> Table:
    several = _several(results)
    repeats = any(res.params.repeat > 1 for _, res in results)
    table = _table("vLLM /metrics during the level (avg/max; counters over the level)",
                   ["conc", "scrapes", "running", "waiting", "KV cache %", "prefix hit rate",
                    "prefix hits/queries", "preemptions"], several)
    for label, _res, lv in _rows(results):
        sm = lv.server_metrics
        name = _level_name(lv, repeats)
        if sm is None or not getattr(sm, "available", False):
            reason = getattr(sm, "reason", None) or "not scraped"
            table.add_row(*([label] if several else []), name, "-",
                          f"not available: {reason}", "", "", "", "", "")
            continue
        kv = sm.kv_cache_usage
        table.add_row(
            *([label] if several else []), name, str(sm.scrapes),
            f"{_n(sm.running.avg)}/{_n(sm.running.max)}",
            f"{_n(sm.waiting.avg)}/{_n(sm.waiting.max)}",
            "-" if kv.avg is None else f"{_n(kv.avg * 100)}/{_n((kv.max or 0) * 100)}",
            _pct(sm.prefix_cache_hit_rate),
            "-" if sm.prefix_cache_queries is None
            else f"{sm.prefix_cache_hits or 0:.0f}/{sm.prefix_cache_queries:.0f}",
            _n(sm.preemptions))
    return table


def result_blocks(results: Sequence[tuple[str, BenchResult]]) -> list[Block]:
    """Every table, then each level's errors and warnings (stdout)."""
    out: list[Block] = []

    def line(text_: str, *, wrap: bool = False) -> None:
        # a model id, an error kind or a warning can quote the server: filtered
        out.append(text(text_) if not wrap else Block(visible(text_), markup=False,
                                                       highlight=False, soft_wrap=True))

    for label, res in results:
        t = res.target
        where = f" on host {t.host}" if t.host else ""
        line(f"{label}: model {t.model or '?'}{where} via {t.url}; prompt "
             f"{res.params.prompt}, output {res.params.output_len} tokens"
             + (" (ignore EOS)" if res.params.ignore_eos else ""), wrap=True)
    out.append(Block(""))
    for make in (decode_table, latency_table, throughput_table, steady_table):
        out += [Block(make(results)), Block("")]
    from variantctl.bench.uncertainty import MARKS_LEGEND, until_ci_outcomes

    for table in ci_tables(results):
        out.append(Block(table))
    line(MARKS_LEGEND, wrap=True)
    for label, res in results:
        if res.params.until_ci is not None:
            for u in until_ci_outcomes(res.levels, res.params.until_ci):
                line(f"{label}: --until-ci: {u.line(res.params.max_repeat)}", wrap=True)
    out.append(Block(""))
    for attr, make, what in (("gpu", gpu_table, "GPU"),
                             ("server_metrics", server_table, "vLLM /metrics")):
        missing = _unavailable(results, attr)
        if missing:
            line(f"{what}: not available — {'; '.join(missing)}")
        else:
            out.append(Block(make(results)))
        out.append(Block(""))
    for label, _res, lv in _rows(results):
        prefix = f"{label} c={lv.concurrency}" + (f" #{lv.repeat + 1}" if lv.repeat else "")
        if lv.partial:
            line(f"{prefix}: partial — {lv.partial_reason or 'stopped early'}")
        if lv.errors:
            listed = ", ".join(f"{n} × {reason}" for reason, n in lv.errors.items())
            line(f"{prefix}: errors: {listed}")
        for w in lv.metrics.warnings:
            line(f"{prefix}: warning: {w}", wrap=True)
    for label, res in results:
        if res.search is not None:
            line(f"{label}: {search_line(res.search)}", wrap=True)
    return out


def search_line(sr: SearchResult) -> str:
    """``bench --search``: the capacity found, its SLOs and the probes, in one line."""
    slo = ", ".join(f"{k} ≤ {v:g} ms" for k, v in sr.slo.items())
    unit = "" if sr.mode == "concurrency" else " req/s"
    probes = " ".join(f"{p.level:g}{'✓' if p.passed else '✗'}" for p in sr.probes)
    if sr.best_level is None:
        found = f"no {sr.mode} meets the SLOs (P{sr.percentile:g} {slo})"
    else:
        found = f"capacity: {sr.mode} {sr.best_level:g}{unit} (P{sr.percentile:g} {slo})"
    why = (f"; limited by {sr.limiting}" if sr.limiting
           else f"; --max-level {sr.max_level:g} reached")
    return f"{found}{why}; probed {probes}"


def death_blocks(death: ServerDeath) -> list[Block]:
    """The server died during a level: what its log says, and its last lines (stderr)."""
    verdict = (death.kind or "unknown").upper()
    what = f"{verdict} {death.signature}" if death.signature else verdict
    who = f"job {death.job}" if death.job is not None else f"pid {death.pid}"
    out = [text(f"error: {death.variant} ({who}) died during the level at "
                f"concurrency {death.level}; its log says: {what}"
                + (f" — {death.title}" if death.title else ""), err=True)]
    if death.message:
        out.append(text(f"  {death.message}", err=True))
    if death.remediation:
        out.append(text(f"hint: {death.remediation}", err=True))
    if death.tail:
        out.append(text(f"last lines of {death.log}:", err=True))
        out += [text(f"  | {line}", err=True) for line in death.tail]
    return out


