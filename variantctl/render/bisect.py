"""``bisect``'s output: the dry run's plan and cost, the measurements and what they name
(blocks and ``--json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from variantctl.jsontypes import JsonObject
from variantctl.render.output import Block, cell, text
from variantctl.render.sweep import plan_blocks
from variantctl.secretmask import DEFAULT, SecretRule

if TYPE_CHECKING:
    from variantctl.sweeps.bisect import Effect, Subset
    from variantctl.sweeps.bisectmodel import Bisection, BisectResult
    from variantctl.sweeps.plan import Plan
    from variantctl.usecases.bisect import BisectPlan


def _head(bis: Bisection) -> str:
    return (f"bisect {bis.a.run_id} → {bis.b.run_id} on {bis.host}: "
            f"{len(bis.settings)} settings differ, {bis.strategy}")


def _strategy_line(bis: Bisection, first: int, at_most: int) -> str:
    k = len(bis.settings)
    if bis.strategy == "one-at-a-time":
        how = (f"round 1 measures A, B and each setting alone ({first} launches); if no "
               "setting holds half of the delta, round 2 measures every pair")
    else:
        how = (f"k = {k} > 4: group halving; round 1 measures A, B and the two halves "
               f"({first} launches), each later round the two halves of the half that "
               "holds the delta")
    return f"{how}: {first} launches in round 1, at most {at_most} in all"


def dry_run_blocks(bis: Bisection, plan: Plan, first: int, at_most: int,
                   secrets: SecretRule = DEFAULT) -> list[Block]:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("SETTING", "A", "B"):
        table.add_column(col)
    for s in bis.settings:
        table.add_row(cell(s.label), cell(_value(s.shown(s.a)), 400),
                      cell(_value(s.shown(s.b)), 400))
    return [text(_head(bis)), Block(table), text(_strategy_line(bis, first, at_most)),
            *[text(f"note: {n}") for n in bis.notes],
            *plan_blocks(plan, dry_run=True, secrets=secrets)]


def _value(v: Any) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:+.1f} %"


def _ci(lo: float | None, hi: float | None, scale: float = 1.0, unit: str = " %") -> str:
    if lo is None or hi is None:
        return "—"
    return f"[{lo * scale:+.1f}, {hi * scale:+.1f}]{unit}"


def bisect_blocks(result: BisectResult) -> list[Block]:
    from rich.table import Table

    bis = result.bisection
    total = result.total.delta_pct
    table = Table(box=None, pad_edge=False, header_style="bold",
                  title=f"output throughput at concurrency {result.level}, against A")
    for col in ("CONFIGURATION", "ROUND", "RUN", "Δ", "95 % CI", "SHARE", "SHARE CI",
                "SIGNIFICANT", "n"):
        table.add_column(col, no_wrap=col != "CONFIGURATION")
    for subset, m in result.measured.items():
        e = result.effects[subset]
        lo, hi = e.share_ci(total)
        table.add_row(result.label(subset), str(m.round), m.run_id or m.status,
                      _pct(e.delta_pct) if subset else "(reference)",
                      _ci(e.lo_pct, e.hi_pct) if subset else "",
                      f"{e.share:.0%}" if e.share is not None and subset else "",
                      _ci(lo, hi, 100.0) if subset else "",
                      ("yes" if e.significant else "no") if subset else "", str(e.n))
    blocks = [text(_head(bis)), Block(table)]
    blocks += [text(f"note: {n}") for n in bis.notes]
    if result.found is not None:
        e = result.effects.get(result.found, result.total)
        lo, hi = e.share_ci(total)
        what = "pair" if len(result.found) == 2 else (
            "setting" if len(result.found) == 1 else "group")
        blocks.append(text(
            f"found: the {what} {result.label(result.found)} — Δ {_pct(e.delta_pct)} "
            f"{_ci(e.lo_pct, e.hi_pct)} of A's throughput, "
            + (f"{e.share:.0%} {_ci(lo, hi, 100.0)} of the total Δ {_pct(total)}"
               if e.share is not None else "") + f" ({result.reason})"))
    else:
        blocks.append(text(f"not found: {result.reason}"))
    blocks.append(text(f"{sum(1 for m in result.measured.values() if m.run_id)} "
                       f"configurations measured in {result.rounds} round(s) "
                       f"(at most {result.at_most} launches)"))
    return blocks


def _effect_json(e: Effect, total: float | None) -> dict[str, Any]:
    lo, hi = e.share_ci(total)
    return {"delta_pct": e.delta_pct, "ci95_pct": [e.lo_pct, e.hi_pct],
            "significant": e.significant, "share": e.share, "share_ci95": [lo, hi], "n": e.n}


def bisect_json(result: BisectResult) -> dict[str, Any]:
    bis = result.bisection
    total = result.total.delta_pct

    def names(subset: Subset) -> list[str]:
        return [bis.settings[i].label for i in sorted(subset)]

    found: dict[str, Any] | None = None
    if result.found is not None:
        found = {"settings": names(result.found),
                 **_effect_json(result.effects.get(result.found, result.total), total)}
    return {
        "a": bis.a.run_id, "b": bis.b.run_id, "host": bis.host, "strategy": bis.strategy,
        "metric": "output_throughput", "level": result.level,
        "settings": [s.to_json() for s in bis.settings],
        "launches": {"first_round": result.first_launches, "at_most": result.at_most,
                     "made": sum(1 for m in result.measured.values() if m.run_id)},
        "rounds": result.rounds,
        "total": _effect_json(result.total, total),
        "measurements": [
            {"configuration": result.label(s), "settings": names(s), "round": m.round,
             "status": m.status, "run_id": m.run_id,
             **_effect_json(result.effects[s], total)}
            for s, m in result.measured.items()],
        "found": found, "reason": result.reason, "notes": list(bis.notes),
    }


def dry_run_json(p: BisectPlan, secrets: SecretRule = DEFAULT) -> JsonObject:
    """``bisect --dry-run --json``: the runs, the settings, the strategy, the cost and
    the first round's plan."""
    from variantctl.render.sweep import plan_json

    bis = p.bisection
    return {"dry_run": True, "a": bis.a.run_id, "b": bis.b.run_id, "host": bis.host,
            "strategy": bis.strategy, "settings": [s.to_json() for s in bis.settings],
            "launches": {"first_round": p.first_launches, "at_most": p.at_most},
            "notes": list(bis.notes), "plan": plan_json(p.plan, secrets)}
