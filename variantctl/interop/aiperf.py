"""AIPerf's aggregate profile export (``profile_export_aiperf.json``) as an
:class:`~variantctl.interop.imported.ImportedBench` (PURE).

The file (AIPerf's ``JsonExportData``, shaped like GenAI-Perf's) holds one object per
metric — ``{"unit", "avg", "p1"…"p99", "min", "max", "std"}`` in display units (ms,
sec, tokens/sec) — beside ``input_config`` (the user's configuration: ``endpoint``
with ``model_names`` and ``url``, ``loadgen`` with ``concurrency`` and
``request_rate``), ``start_time`` and ``end_time``. One file is one level.

Mapped by definition (docs/report.md "Import"): TTFT ← ``time_to_first_token``; TPOT
(E2EL − TTFT)/(tokens − 1) ← ``inter_token_latency`` (AIPerf's ITL is vLLM's TPOT);
vLLM's ITL (gaps between chunks) ← ``inter_chunk_latency`` when exported; E2EL ←
``request_latency``; output throughput ← ``output_token_throughput`` (total output
tokens / benchmark duration, vLLM's definition); requests/s ← ``request_throughput``.
AIPerf's per-user throughput is 1/TPOT, not the seeds' tokens/(E2EL − TTFT): not mapped.
The file names no AIPerf version (``--tool-version`` records one).
"""

from __future__ import annotations

import math

from variantctl.bench.model import Stats
from variantctl.interop.imported import ImportedBench, ImportedLevel, number_getter, stats_of
from variantctl.jsonfields import Fields

#: a time unit -> milliseconds
_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "sec": 1000.0, "s": 1000.0}
_KEYS = {"mean": "avg", "median": "p50", "std": "std", "min": "min", "max": "max",
         "p10": "p10", "p50": "p50", "p90": "p90", "p99": "p99"}
REQUIRED = ("request_latency", "time_to_first_token", "request_count", "benchmark_duration")


def _ms(f: Fields, key: str, count: int) -> Stats:
    """A time metric in milliseconds (absent: an empty Stats)."""
    m = f.opt_obj(key)
    if m is None:
        return Stats()
    unit = m.text("unit", "ms")
    if unit not in _TO_MS:
        raise m.error("unit", f"is {unit!r}, expected a time unit ({', '.join(_TO_MS)})")
    return stats_of(number_getter(m), count, scale=_TO_MS[unit], keys=_KEYS)


def _avg(f: Fields, key: str) -> float | None:
    m = f.opt_obj(key)
    return None if m is None else m.opt_number("avg")


def read(doc: object, source: str, version: str | None) -> ImportedBench:
    f = Fields(doc, source)
    for key in REQUIRED:
        if f.opt_obj(key) is None:
            raise f.error(key, "is missing: not an AIPerf profile_export_aiperf.json")
    completed = int(_avg(f, "request_count") or 0)
    failed = int(_avg(f, "error_request_count") or 0)
    dur = f.obj("benchmark_duration")
    unit = dur.text("unit", "sec")
    if unit not in _TO_MS:
        raise dur.error("unit", f"is {unit!r}, expected a time unit")
    duration = dur.number("avg") * _TO_MS[unit] / 1000.0
    cfg = f.opt_obj("input_config")
    loadgen = cfg.opt_obj("loadgen") if cfg is not None else None
    endpoint = cfg.opt_obj("endpoint") if cfg is not None else None
    conc = (loadgen.opt_integer("concurrency") if loadgen is not None else None) or 1
    rate_v = loadgen.opt_number("request_rate") if loadgen is not None else None
    tin = _avg(f, "total_isl") or 0.0
    tout = _avg(f, "total_osl") or _avg(f, "total_output_tokens") or 0.0
    out_tput = _avg(f, "output_token_throughput")
    req_tput = _avg(f, "request_throughput")
    level = ImportedLevel(
        concurrency=conc, duration_s=duration, completed=completed, failed=failed,
        input_tokens=int(tin), output_tokens=int(tout),
        request_throughput=req_tput if req_tput is not None else (
            completed / duration if duration > 0 else 0.0),
        output_throughput=out_tput if out_tput is not None else (
            tout / duration if duration > 0 else 0.0),
        total_token_throughput=(tin + tout) / duration if duration > 0 else 0.0,
        ttft_ms=_ms(f, "time_to_first_token", completed),
        tpot_ms=_ms(f, "inter_token_latency", completed),
        itl_ms=_ms(f, "inter_chunk_latency", completed),
        e2el_ms=_ms(f, "request_latency", completed), output_tps=Stats(),
        rate=math.inf if rate_v is None else rate_v)
    models = endpoint.data.get("model_names") if endpoint is not None else None
    model = models[0] if isinstance(models, list) and models and isinstance(
        models[0], str) else None
    url = endpoint.data.get("url") if endpoint is not None else None
    started = f.data.get("start_time")
    return ImportedBench(tool="aiperf", version=version, model=model,
                         url=url if isinstance(url, str) else None,
                         started_at=started if isinstance(started, str) else "",
                         levels=(level,))
