"""``vllm bench serve --save-result`` (and 0.6's ``benchmarks/benchmark_serving.py``)
result JSON as an :class:`~variantctl.interop.imported.ImportedBench` (PURE).

Every release since 0.6 writes the same core: ``duration``, ``completed``,
``total_input_tokens``, ``total_output_tokens``, ``request_throughput``,
``output_throughput`` and, per metric M of ``--percentile-metrics`` (ttft, tpot, itl by
default; e2el when asked), ``mean_M_ms``, ``median_M_ms``, ``std_M_ms`` and ``pP_M_ms``
for each ``--metric-percentiles`` P (99 by default). Later releases added ``failed``,
``total_token_throughput``, ``max_concurrency``, ``burstiness``, ``endpoint_type``,
``max_output_tokens_per_s`` and ``max_concurrent_requests``; 0.6 kept the per-request
lists (``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``errors``) always, later
releases only with ``--save-detailed`` (and ``latencies``, ``start_times`` too).
``--append-result`` writes one JSON document per line: each is a level.

With the per-request lists the requests are kept (the report's intervals resample
them) and a figure the file lacks (p90 under ``--metric-percentiles 99``, output TPS,
which vLLM does not report) is computed from them with vLLM's definitions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from variantctl.bench import metrics
from variantctl.bench.model import RequestResult, Stats
from variantctl.interop.imported import ImportedBench, ImportedLevel, number_getter, stats_of
from variantctl.jsonfields import Fields, StoredFileError

_METRICS = ("ttft", "tpot", "itl", "e2el")
#: what a file must hold to be a vllm bench serve result
REQUIRED = ("duration", "completed", "total_input_tokens", "total_output_tokens",
            "request_throughput", "output_throughput", "mean_ttft_ms")


def _keys(metric: str) -> dict[str, str]:
    return {"mean": f"mean_{metric}_ms", "median": f"median_{metric}_ms",
            "std": f"std_{metric}_ms", "p10": f"p10_{metric}_ms", "p50": f"p50_{metric}_ms",
            "p90": f"p90_{metric}_ms", "p99": f"p99_{metric}_ms"}


def _merge(told: Stats, computed: Stats | None) -> Stats:
    """The file's figures; where it has none, the one computed from its requests."""
    if computed is None or not computed.count:
        return told
    values = {k: getattr(told, k) for k in told.__dataclass_fields__}
    for k, v in values.items():
        if isinstance(v, float) and math.isnan(v):
            values[k] = getattr(computed, k)
    values["count"] = told.count or computed.count
    return Stats(**values)


def _requests(f: Fields) -> tuple[RequestResult, ...]:
    """The requests, when the file kept the per-request lists (0.6, ``--save-detailed``)."""
    if not all(isinstance(f.data.get(k), list) for k in ("ttfts", "itls", "output_lens")):
        return ()
    ttfts = f.numbers("ttfts")
    n = len(ttfts)
    itls = f.items("itls")
    outs = f.items("output_lens")
    ins = f.items("input_lens", [0] * n)
    errors = f.items("errors", [""] * n)
    lat = f.numbers("latencies") if isinstance(f.data.get("latencies"), list) else ()
    starts = f.numbers("start_times") if isinstance(f.data.get("start_times"), list) else ()
    for key, seq in (("itls", itls), ("output_lens", outs), ("input_lens", ins),
                     ("errors", errors), ("latencies", lat or [0] * n),
                     ("start_times", starts or [0] * n)):
        if len(seq) != n:
            raise f.error(key, f"has {len(seq)} entries, ttfts {n}: not one per request")
    t0 = min(starts) if starts else 0.0
    out = []
    for i in range(n):
        gaps = _gaps(f, i, itls[i])
        error = errors[i] if isinstance(errors[i], str) and errors[i] else None
        offsets: list[float] = [ttfts[i]] if error is None else []
        for g in gaps:
            offsets.append(offsets[-1] + g)
        tokens = outs[i] if isinstance(outs[i], int) and not isinstance(outs[i], bool) else 0
        prompt = ins[i] if isinstance(ins[i], int) and not isinstance(ins[i], bool) else 0
        latency = lat[i] if lat else (offsets[-1] if offsets else 0.0)
        out.append(RequestResult(
            index=i, ok=error is None, start_s=starts[i] - t0 if starts else math.nan,
            ttft_s=ttfts[i], latency_s=latency, chunk_offsets_s=tuple(offsets),
            prompt_tokens=prompt, output_tokens=tokens, usage_seen=True,
            error="vllm error" if error else None,
            error_detail=error[:300] if error else None))
    return tuple(out)


def _gaps(f: Fields, i: int, value: object) -> tuple[float, ...]:
    """Request i's inter-token gaps (s); anything but a list of numbers names the field."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
            isinstance(g, (int, float)) and not isinstance(g, bool) for g in value):
        raise f.error(f"itls[{i}]", "should be a list of seconds")
    return tuple(float(g) for g in value)


def _computed(reqs: Sequence[RequestResult]) -> dict[str, Stats]:
    ok = [r for r in reqs if r.ok]
    return {
        "ttft": metrics.stats((r.ttft_s for r in ok), 1000.0),
        "tpot": metrics.stats((t for r in ok if (t := r.tpot_s) is not None), 1000.0),
        "itl": metrics.stats((g for r in ok for g in r.itl_s), 1000.0),
        "e2el": metrics.stats((r.latency_s for r in ok), 1000.0),
        "tps": metrics.stats(t for r in ok if (t := r.output_tps) is not None),
    }


def level_of(f: Fields) -> tuple[ImportedLevel, dict[str, object]]:
    """One result document as a level, and what it says of the whole run (model, ...)."""
    for key in REQUIRED:
        if key not in f.data:
            raise f.error(key, "is missing: not a vllm bench serve --save-result file")
    completed = f.integer("completed")
    reqs = _requests(f)
    failed = f.data.get("failed")
    if failed is None:  # 0.6 did not count them: its errors list does
        failed_n = sum(1 for r in reqs if not r.ok) if reqs else max(
            0, (f.opt_integer("num_prompts") or completed) - completed)
    else:
        failed_n = f.integer("failed")
    rate_v = f.data.get("request_rate", "inf")
    rate = math.inf if rate_v in ("inf", None) else f.number("request_rate")
    conc = f.opt_integer("max_concurrency") or (completed + failed_n) or 1
    duration = f.number("duration")
    tin, tout = f.integer("total_input_tokens"), f.integer("total_output_tokens")
    computed = _computed(reqs) if reqs else {}
    get = number_getter(f)
    figs = {m: _merge(stats_of(get, completed, keys=_keys(m)), computed.get(m))
            for m in _METRICS}
    tps = computed.get("tps") or Stats()
    total_tput = f.opt_number("total_token_throughput")
    level = ImportedLevel(
        concurrency=conc, duration_s=duration, completed=completed, failed=failed_n,
        input_tokens=tin, output_tokens=tout,
        request_throughput=f.number("request_throughput"),
        output_throughput=f.number("output_throughput"),
        total_token_throughput=(total_tput if total_tput is not None
                                else (tin + tout) / duration if duration > 0 else 0.0),
        ttft_ms=figs["ttft"], tpot_ms=figs["tpot"], itl_ms=figs["itl"], e2el_ms=figs["e2el"],
        output_tps=tps, rate=rate, requests=reqs,
        max_output_tokens_per_s=f.opt_number("max_output_tokens_per_s") or math.nan,
        max_concurrent_requests=f.opt_integer("max_concurrent_requests") or 0)
    about: dict[str, object] = {"model": f.opt_text("model_id"), "date": f.opt_text("date"),
                                "backend": f.opt_text("backend")}
    return level, about


def read(docs: Sequence[object], source: str, version: str | None) -> ImportedBench:
    """The documents of one file (one, or one per line with ``--append-result``)."""
    levels = []
    about: dict[str, object] = {}
    for i, doc in enumerate(docs):
        where = source if len(docs) == 1 else f"{source} (document {i + 1})"
        if not isinstance(doc, dict):
            raise StoredFileError(f"{where}: not a JSON object: not a vllm bench serve "
                                  "result")
        f = Fields(doc, where)
        level, first = level_of(f)
        levels.append(level)
        about = about or first
    date = str(about.get("date") or "")
    started = (f"{date[0:4]}-{date[4:6]}-{date[6:8]}T{date[9:11]}:{date[11:13]}:"
               f"{date[13:15]}" if len(date) == 15 and date[8] == "-" else "")
    backend = str(about.get("backend") or "")
    return ImportedBench(tool="vllm", version=version,
                         model=str(about["model"]) if about.get("model") else None,
                         url=None, started_at=started, levels=tuple(levels),
                         endpoint="completions" if backend in ("openai", "vllm") else "chat")
