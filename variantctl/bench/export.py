"""``--export-vllm FILE``: a level as ``vllm bench serve``'s result JSON.

Same field names and units as ``vllm/benchmarks/serve.py`` writes with
``--save-result`` and ``--percentile-metrics ttft,tpot,itl,e2el
--metric-percentiles 10,50,90,99`` (durations in s, latencies in ms, throughputs per
s, ``request_rate`` "inf" as a string). The per-request lists vLLM keeps by default
(``queue_times``, ``latencies``) are included; the ``--save-detailed`` lists are
written too except ``generated_texts`` (the client does not keep the text), which
is a list of empty strings so readers that zip the lists still work.

Sampling differs by default: variantctl sends ``temperature`` 0 (greedy) unless told
otherwise, ``vllm bench serve`` 0.32 sends no temperature at all (the server's or
model's default decides, often sampling). The exported result says which temperature
was sent (``temperature``) and why it matters (``variantctl_note``); pass
``--temperature 0`` to ``vllm bench serve`` for the same requests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from variantctl.bench.metrics import stats
from variantctl.bench.model import BenchResult, LevelResult, Stats
from variantctl.benchparams import BenchParams
from variantctl.jsontypes import JsonObject

PERCENTILES = (10, 50, 90, 99)
TEMPERATURE_NOTE = (
    "variantctl sent this temperature (default 0: greedy); vllm bench serve 0.32 sends "
    "none by default, so the server's default sampling applies: give it --temperature "
    "0 to compare like with like")
_BACKEND = {"chat": "openai-chat", "completions": "openai"}


def _metric(out: JsonObject, name: str, s: Stats) -> None:
    out[f"mean_{name}_ms"] = s.mean
    out[f"median_{name}_ms"] = s.median
    out[f"std_{name}_ms"] = s.std
    for p in PERCENTILES:
        out[f"p{p}_{name}_ms"] = getattr(s, f"p{p}")


def vllm_result(level: LevelResult, params: BenchParams, *, model: str,
                date: datetime | None = None) -> JsonObject:
    """The dict ``vllm bench serve`` would have saved for this level."""
    m = level.metrics
    reqs = level.requests
    backend = _BACKEND[params.endpoint]
    rate = level.profile.rate if level.profile is not None else params.request_rate
    out: JsonObject = {
        "date": (date or datetime.now()).strftime("%Y%m%d-%H%M%S"),
        "endpoint_type": backend,
        "backend": backend,
        "label": None,
        "model_id": model,
        "tokenizer_id": model,
        "num_prompts": len(reqs),
        "request_rate": "inf" if math.isinf(rate) else rate,
        "burstiness": params.burstiness,
        "max_concurrency": level.concurrency,
        "duration": m.duration_s,
        "completed": m.completed,
        "failed": m.failed,
        "total_input_tokens": m.total_input_tokens,
        "total_output_tokens": m.total_output_tokens,
        "request_throughput": m.request_throughput,
        "request_goodput": m.request_goodput,
        "output_throughput": m.output_throughput,
        "total_token_throughput": m.total_token_throughput,
        "input_lens": [r.prompt_tokens for r in reqs],
        "output_lens": [r.output_tokens if r.ok else 0 for r in reqs],
        "ttfts": [r.ttft_s for r in reqs],
        "itls": [list(r.itl_s) for r in reqs],
        "latencies": [r.latency_s if r.ok else 0.0 for r in reqs],
        "start_times": [r.start_s for r in reqs],
        "queue_times": [r.queue_s for r in reqs],
        "generated_texts": ["" for _ in reqs],
        "errors": [("" if r.ok else (r.error_detail or r.error or "")) for r in reqs],
        "max_output_tokens_per_s": m.max_output_tokens_per_s,
        "max_concurrent_requests": m.max_concurrent_requests,
        "rtfx": 0.0,
        "temperature": params.temperature,
        "variantctl_note": TEMPERATURE_NOTE,
    }
    if level.profile is not None and level.profile.kind == "ramp-up":
        out |= {"ramp_up_strategy": level.profile.ramp,
                "ramp_up_start_rps": level.profile.ramp_start,
                "ramp_up_end_rps": level.profile.ramp_end}
    _metric(out, "ttft", m.ttft_ms)
    _metric(out, "tpot", m.tpot_ms)
    _metric(out, "itl", m.itl_ms)
    _metric(out, "e2el", m.e2el_ms)
    ok = [r for r in reqs if r.ok]
    _metric(out, "client_queue_time", stats((r.queue_s for r in ok), 1000.0))
    if not math.isinf(rate) or out.get("ramp_up_strategy"):
        _metric(out, "e2el_including_client_queue",
                stats((r.latency_s + r.queue_s for r in ok), 1000.0))
    return out


def export_paths(path: Path, levels: Sequence[LevelResult]) -> list[Path]:
    """One level: ``path`` itself; a ladder: ``NAME-c<C>[-r<R>].json`` beside it."""
    if len(levels) == 1:
        return [path]
    repeats = len({lv.repeat for lv in levels}) > 1
    suffix = path.suffix or ".json"
    out = []
    for lv in levels:
        rated = lv.profile is not None and lv.profile.kind == "rate"
        tag = (f"-rate{lv.profile.rate:g}" if rated and lv.profile is not None
               else f"-c{lv.concurrency}") + (f"-r{lv.repeat + 1}" if repeats else "")
        out.append(path.with_name(path.stem + tag + suffix))
    return out


def write_exports(results: Sequence[tuple[str, BenchResult]], base: Path,
                  on_written: Callable[[Path], None]) -> None:
    """``--export-vllm FILE``: vLLM's result JSON; one level = FILE, a ladder = one file
    per level (``FILE-c<C>``), several variants = ``FILE-<variant>[-c<C>]``; each path
    written goes to ``on_written``. An OSError is one error naming the file (exit 1)."""
    import json

    from variantctl.errors import VariantctlError
    from variantctl.exitcodes import ExitCode
    from variantctl.runs.store import write_local_atomic

    several = len(results) > 1
    for label, result in results:
        levels = result.levels
        own = base.with_name(f"{base.stem}-{label}{base.suffix or '.json'}") if several else base
        for path, level in zip(export_paths(own, levels), levels, strict=True):
            data = vllm_result(level, result.params, model=result.target.model or "")
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_local_atomic(path, text.encode())
            except OSError as exc:
                raise VariantctlError(f"--export-vllm {path}: {exc.strerror or exc}",
                                      exit_code=ExitCode.FAILED) from None
            on_written(path)
