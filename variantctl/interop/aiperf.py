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

Two shapes of ``input_config``: the early one (``endpoint.model_names``/``url``,
``loadgen.concurrency``/``request_rate``) and the one AIPerf 0.13.0 writes (checked on
its real files in tests/fixtures/interop/aiperf-0.13.0/): ``models.items[].name``,
``endpoint.urls``, and the load in ``phases`` — the one phase of kind ``profiling``
(``type`` ``concurrency`` with ``concurrency``; ``poisson``/``gamma``/``constant``/
``user_centric`` with ``rate`` and, when capped, ``concurrency``). A rate phase without
a cap is the mean ``effective_concurrency``. 0.13.0 names its version
(``aiperf_version``); the early files name none (``--tool-version`` records one).
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


#: AIPerf's phase types that send at a rate (``rate``), not as fast as the concurrency allows
_RATE_PHASES = ("poisson", "gamma", "constant", "user_centric")


def _first_text(value: object) -> str | None:
    """The first string of a list (the early ``model_names``, 0.13's ``urls``)."""
    if isinstance(value, list) and value and isinstance(value[0], str):
        return value[0]
    return value if isinstance(value, str) else None


def _target(f: Fields) -> tuple[str | None, str | None]:
    """The model and server URL the profile measured (None where the file does not say)."""
    cfg = f.opt_obj("input_config")
    endpoint = cfg.opt_obj("endpoint") if cfg is not None else None
    model = url = None
    if endpoint is not None:
        model = _first_text(endpoint.data.get("model_names"))
        url = _first_text(endpoint.data.get("url")) or _first_text(endpoint.data.get("urls"))
    models = cfg.opt_obj("models") if cfg is not None else None
    if model is None and models is not None:
        items = models.objs("items")
        model = items[0].opt_text("name") if items else None
    return model, url


def _profiling_phase(cfg: Fields) -> Fields | None:
    """0.13's one profiling phase (None: the file has no ``phases``)."""
    phases = cfg.objs("phases")
    if not phases:
        return None
    profiling = [ph for ph in phases
                 if (ph.opt_text("kind") or ph.opt_text("name")) == "profiling"]
    if len(profiling) != 1:
        raise cfg.error("phases", f"holds {len(profiling)} profiling phases: one file is "
                        "imported as one level, so it needs exactly one")
    return profiling[0]


def _load(f: Fields) -> tuple[int, float]:
    """The concurrency and the rate (inf: as fast as the concurrency allows)."""
    cfg = f.opt_obj("input_config")
    if cfg is None:
        return 1, math.inf
    phase = _profiling_phase(cfg)
    if phase is not None:
        kind = phase.text("type")
        rate = phase.number("rate") if kind in _RATE_PHASES else math.inf
        conc = phase.opt_integer("concurrency")
        if conc is None:
            eff = _avg(f, "effective_concurrency")
            conc = 1 if math.isinf(rate) or eff is None else max(1, round(eff))
        return conc, rate
    loadgen = cfg.opt_obj("loadgen")
    if loadgen is None:
        return 1, math.inf
    rate_v = loadgen.opt_number("request_rate")
    return (loadgen.opt_integer("concurrency") or 1,
            math.inf if rate_v is None else rate_v)


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
    conc, rate = _load(f)
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
        rate=rate)
    model, url = _target(f)
    started = f.data.get("start_time")
    return ImportedBench(tool="aiperf", version=version or f.opt_text("aiperf_version"),
                         model=model, url=url,
                         started_at=started if isinstance(started, str) else "",
                         levels=(level,))
