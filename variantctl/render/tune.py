"""``tune --dry-run``: the space, the sampler, what the rules prune and the budget."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonMapping, JsonObject
from variantctl.logs.bounded import visible_lines
from variantctl.render.output import Block, text
from variantctl.report.tuneresult import setting_text
from variantctl.tune.model import Choices, settings_json
from variantctl.tune.preflight import SpacePlan

if TYPE_CHECKING:
    from variantctl.usecases.tune import TuneOutcome


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
            shown = ", ".join(setting_text(settings_json({d.key: v})[d.key]) for v in d.values)
        else:
            shown = (f"{d.lo:g} … {d.hi:g}" + (" (log)" if d.log else "")
                     + (" integers" if d.integer else ""))
        table.add_row(d.key, shown)
    blocks = [text(head), Block(table)]
    for p in plan.pruned:
        blocks.append(text(f"pruned: {p.key}={setting_text(settings_json({p.key: p.value})[p.key])}"
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


def _label(settings: object) -> str:
    return " ".join(f"{str(k).split('.', 1)[-1]}={setting_text(v)}"
                    for k, v in (settings.items() if isinstance(settings, Mapping)
                                 else ())) or "(base)"


def _ci(ci: list[object]) -> str:
    lo, hi = ci
    return (f"{lo:.4g} … {hi:.4g}" if isinstance(lo, (int, float))
            and isinstance(hi, (int, float)) else "—")


def result_blocks(doc: JsonMapping) -> list[Block]:
    """The trials in order (objective, best so far, state and reason), then the verdict."""
    from rich.table import Table

    tune = doc["tune"]
    assert isinstance(tune, Mapping)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("#", "SETTINGS", "STATE", "N", "OBJECTIVE", "95 % CI", "NOTE"):
        table.add_column(col)
    trials = tune["trials"]
    assert isinstance(trials, list)
    dropped: list[str] = []
    for i, t in enumerate(trials):
        assert isinstance(t, Mapping)
        label = _label(t["settings"])
        obj = t["objective"]
        ci = t.get("ci95")
        table.add_row(str(i), label, str(t["state"]), str(t["launches"]),
                      f"{obj:.4g}" if isinstance(obj, (int, float)) else "—",
                      _ci(ci) if isinstance(ci, list) else "—",
                      visible_lines(str(t["reason"] or "")))
        if t["state"] in ("pruned", "predicted", "historical", "failed"):
            dropped.append(f"  #{i} {label}: {t['state']} — "
                           + visible_lines(str(t["reason"] or "")))
    blocks = [text("trials in order (N launches each; the objective their mean, the "
                   "interval Student's t over launches):"), Block(table)]
    trace = tune.get("best_so_far")
    if isinstance(trace, list) and trace:
        blocks.append(text("best so far, after each batch: " + " → ".join(
            f"{v:.4g}" for v in trace if isinstance(v, (int, float)))))
    importance = tune.get("importance")
    if isinstance(importance, Mapping) and importance:
        blocks.append(text("each setting's effect (Optuna's PED-ANOVA importance over the "
                           "measured trials, shares of 1): " + ", ".join(
                               f"{k} {v:.2f}" for k, v in importance.items()
                               if isinstance(v, (int, float)))))
    else:
        blocks.append(text("each setting's effect: not computed — "
                           + str(tune.get("importance_note") or "no measured trials")))
    if dropped:
        blocks.append(text("pruned and failed candidates:\n" + "\n".join(dropped)))
    best = tune["best"]
    if isinstance(best, Mapping):
        ci = best["ci95"]
        blocks.append(text(f"best: {_label(best['settings'])} {best['objective']:.4g} "
                           f"(95 % CI {_ci(ci) if isinstance(ci, list) else '—'})"))
    blocks.append(text(f"{tune['verdict']}; {tune['launches']} launches"))
    eq = tune["equivalent"]
    if isinstance(eq, list) and eq:
        blocks.append(text("not significantly different from the best: "
                           + "; ".join(_label(e) for e in eq)))
    rec = tune.get("recommended")
    if isinstance(rec, Mapping):
        ci = rec["ci95"]
        blocks.append(text(f"recommended (cheaper, as good): {_label(rec['settings'])} "
                           f"{rec['objective']:.4g} (95 % CI "
                           f"{_ci(ci) if isinstance(ci, list) else '—'}) — {rec['why']}"))
    written = tune["variant_written"]
    blocks.append(text(f"wrote {written}" if written else "no variant written"))
    return blocks


def notes_blocks(outcome: TuneOutcome) -> list[Block]:
    """Before the result (stderr): the servers an interrupted run left that were stopped,
    and the hosts that failed."""
    out = []
    if outcome.stopped:
        out.append(text("tune: stopped server(s) the interrupted run left: "
                        + ", ".join(outcome.stopped), err=True))
    out += [text(f"tune: host {host}: {err.message}", err=True)
            for host, err in outcome.host_errors.items()]
    return out


def tune_json(outcome: TuneOutcome) -> JsonObject:
    """``tune --json``: the winner with its interval, the equivalent candidates, every
    trial, the launches, the best-so-far trace, the variant written and the verdict (the
    same object the tune's state keeps for ``report --tune``: tune/result.py)."""
    from variantctl.tune.result import result_json

    return {"tune": result_json(outcome.spec, outcome.log, outcome.verdict,
                                outcome.recommended, written=outcome.written,
                                resumed=outcome.resumed, stopped=outcome.stopped,
                                host_errors=outcome.host_errors)}
