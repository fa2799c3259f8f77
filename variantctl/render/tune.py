"""``tune --dry-run``: the space, the sampler, what the rules prune and the budget."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonMapping, JsonObject
from variantctl.logs.bounded import visible_lines
from variantctl.render.output import Block, text
from variantctl.tune.model import Choices, settings_json
from variantctl.tune.preflight import SpacePlan

if TYPE_CHECKING:
    from variantctl.usecases.tune import TuneOutcome


def _value(v: object) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return str(v)


def space_blocks(plan: SpacePlan) -> list[Block]:
    from rich.table import Table

    spec = plan.spec
    size = plan.grid_size
    head = (f"tune {spec.name} ({spec.source}): variant {spec.variant} on "
            f"{', '.join(spec.hosts) or plan.host}, {spec.objective.label()}, "
            + ("a space of reals (no grid)" if math.isinf(size)
               else f"{size:,.0f} configurations in the grid"))
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("SETTING", "VALUES"):
        table.add_column(col)
    for d in spec.space:
        if isinstance(d, Choices):
            shown = ", ".join(_value(settings_json({d.key: v})[d.key]) for v in d.values)
        else:
            shown = (f"{d.lo:g} … {d.hi:g}" + (" (log)" if d.log else "")
                     + (" integers" if d.integer else ""))
        table.add_row(d.key, shown)
    blocks = [text(head), Block(table)]
    for p in plan.pruned:
        blocks.append(text(f"pruned: {p.key}={_value(settings_json({p.key: p.value})[p.key])}"
                           f" — rule {p.rule}" + (f" ({p.signature})" if p.signature else "")
                           + f": {p.message}"))
    budget = spec.budget
    parts = ([f"{budget.launches} launches"] if budget.launches is not None else []) + (
        [f"{budget.minutes:g} minutes"] if budget.minutes is not None else [])
    st = spec.stages
    blocks.append(text(
        f"sampler {plan.sampler} (seed {spec.seed}); budget {' and '.join(parts)}; "
        f"stages: one probe launch per candidate, {st.repeats}–{st.max_repeats} launches "
        f"for those within {st.reach_pct:g} % of the best (until its 95 % interval is "
        f"within ±{st.ci_pct:g} %)"))
    blocks.append(text("dry run: nothing launched", err=True))
    return blocks


def result_blocks(doc: JsonMapping) -> list[Block]:
    """The trials in order (objective, best so far, state and reason), then the verdict."""
    from rich.table import Table

    tune = doc["tune"]
    assert isinstance(tune, Mapping)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("#", "SETTINGS", "STATE", "LAUNCHES", "OBJECTIVE", "NOTE"):
        table.add_column(col)
    trials = tune["trials"]
    assert isinstance(trials, list)
    for i, t in enumerate(trials):
        assert isinstance(t, Mapping)
        settings = t["settings"]
        label = " ".join(f"{str(k).split('.', 1)[-1]}={_value(v)}"
                         for k, v in (settings.items() if isinstance(settings, Mapping)
                                      else ())) or "(base)"
        obj = t["objective"]
        table.add_row(str(i), label, str(t["state"]), str(t["launches"]),
                      f"{obj:.4g}" if isinstance(obj, (int, float)) else "—",
                      visible_lines(str(t["reason"] or "")))
    blocks = [Block(table)]
    trace = tune.get("best_so_far")
    if isinstance(trace, list) and trace:
        blocks.append(text("best so far: " + " → ".join(
            f"{v:.4g}" for v in trace if isinstance(v, (int, float)))))
    best = tune["best"]
    if isinstance(best, Mapping):
        ci = best["ci95"]
        lo, hi = ci if isinstance(ci, list) else (None, None)
        blocks.append(text(f"best: {best['settings']} {best['objective']:.4g} "
                           f"(95 % CI {lo:.4g} … {hi:.4g})"))
    blocks.append(text(f"{tune['verdict']}; {tune['launches']} launches"))
    eq = tune["equivalent"]
    if isinstance(eq, list) and eq:
        blocks.append(text(f"not significantly different from the best: {eq}"))
    written = tune["variant_written"]
    blocks.append(text(f"wrote {written}" if written else "no variant written"))
    return blocks


def tune_json(outcome: TuneOutcome) -> JsonObject:
    """``tune --json``: the winner with its interval, the equivalent candidates, every
    trial, the launches, the best-so-far trace, the variant written and the verdict."""
    verdict, log = outcome.verdict, outcome.log
    best: JsonObject | None = None
    if verdict.best is not None and verdict.interval is not None:
        iv = verdict.interval
        best = {"settings": settings_json(verdict.best.settings),
                "objective": iv.estimate, "ci95": [iv.lo, iv.hi],
                "run_id": verdict.best.runs[-1][0] if verdict.best.runs else None}
    return {"tune": {
        "best": best,
        "equivalent": [settings_json(c.settings) for c in verdict.equivalent],
        "trials": [{"settings": settings_json(c.settings), "state": c.state,
                    "objective": c.mean(),
                    "run_id": c.runs[-1][0] if c.runs else None,
                    "reason": c.reason or None,
                    "launches": len(c.runs)} for c in log.candidates],
        "launches": log.launches, "best_so_far": log.trace,
        "variant_written": outcome.written, "verdict": verdict.reason,
        "host_errors": {h: e.to_json() for h, e in outcome.host_errors.items()}}}
