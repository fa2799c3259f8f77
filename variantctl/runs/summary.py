"""One run's summary row: what ``runs`` lists and ``runs --json`` prints for each run
(a value built from the record, below both the use case that lists and the renderer)."""

from __future__ import annotations

from typing import Any

from variantctl.runs.run import RunFileError, RunRecord, as_object
from variantctl.runs.store import RunDir

#: facts shown in the listing (the full set is in ``runs show`` and the JSON)
_FACTS = ("vllm_version", "engine", "attention_backend", "kv_cache_tokens")


def summary_json(d: RunDir, rec: RunRecord | RunFileError) -> dict[str, Any]:
    if isinstance(rec, RunFileError):
        return {"run_id": d.run_id, "dir": str(d.path), "variant": d.variant,
                "error": rec.to_json()}
    facts = {k: rec.facts[k] for k in _FACTS if rec.facts.get(k) is not None}
    config = as_object(rec.facts.get("config"))
    for key in ("enforce_eager", "max_seq_len"):
        if key in config:
            facts[key] = config[key]
    return {
        "run_id": rec.run_id,
        "key": rec.key,
        "dir": str(d.path),
        "variant": rec.variant_name,
        "host": rec.host.get("name"),
        "created_at": rec.created_at,
        "verdict": rec.verdict.kind,
        "signature": rec.verdict.signature,
        "expect_ok": rec.expect_ok,
        "time_to_ready_s": rec.timings.get("time_to_ready_s"),
        "facts": facts,
        "benchmarks": list(rec.benchmarks),
    }
