"""A tune's result as one JSON object (pure): what ``tune --json`` prints under ``"tune"``
and what the tune's state keeps as ``"result"`` when it finishes, so that ``variantctl
report --tune NAME`` shows the same figures later without searching again (docs/tune.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from variantctl.bench import stats
from variantctl.errors import VariantctlError
from variantctl.jsontypes import JsonObject
from variantctl.tune.model import TuneSpec, settings_json
from variantctl.tune.search import SearchLog
from variantctl.tune.verdict import Recommendation, Verdict


def _ci95(values: list[float]) -> list[float] | None:
    if len(values) < 2:  # one launch has no interval
        return None
    iv = stats.t_interval(values)
    return [iv.lo, iv.hi]


def result_json(spec: TuneSpec, log: SearchLog, verdict: Verdict,
                recommended: Recommendation | None, *, written: str | None,
                resumed: bool = False, stopped: Sequence[str] = (),
                host_errors: Mapping[str, VariantctlError] | None = None) -> JsonObject:
    """The winner with its interval, the equivalent candidates, every trial in order, the
    launches, the best-so-far trace, each setting's importance, the variant written and
    the verdict."""
    best: JsonObject | None = None
    if verdict.best is not None and verdict.interval is not None:
        iv = verdict.interval
        best = {"settings": settings_json(verdict.best.settings),
                "objective": iv.estimate, "ci95": [iv.lo, iv.hi],
                "run_id": verdict.best.runs[-1][0] if verdict.best.runs else None}
    rec: JsonObject | None = None
    if recommended is not None:
        c = recommended.candidate
        rec = {"settings": settings_json(c.settings),
               "objective": recommended.interval.estimate,
               "ci95": [recommended.interval.lo, recommended.interval.hi],
               "run_id": c.runs[-1][0] if c.runs else None, "why": recommended.why}
    return {
        "name": spec.name, "variant": spec.variant,
        "objective": {**spec.objective.to_json(), "label": spec.objective.label(),
                      "maximize": spec.objective.maximize},
        "best": best,
        "equivalent": [settings_json(c.settings) for c in verdict.equivalent],
        "recommended": rec,
        "trials": [{"settings": settings_json(c.settings), "state": c.state,
                    "objective": c.mean(), "ci95": _ci95(c.values),
                    "run_id": c.runs[-1][0] if c.runs else None,
                    "reason": c.reason or None,
                    "launches": len(c.runs)} for c in log.candidates],
        "launches": log.launches, "best_so_far": list(log.trace),
        "importance": dict(log.importance), "importance_note": log.importance_note or None,
        "variant_written": written, "verdict": verdict.reason,
        "beats_base": verdict.beats_base,
        "resumed": resumed, "stopped_leftovers": list(stopped),
        "host_errors": {h: e.to_json() for h, e in (host_errors or {}).items()}}
