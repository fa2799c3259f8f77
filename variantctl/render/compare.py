"""``variantctl compare``: the metric deltas table and the settings that differ.

Returns blocks (rich tables) and the JSON document; the CLI prints them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from variantctl.bench.uncertainty import HEADLINES, MARKS_LEGEND, NOISE_UNKNOWN, MetricTest
from variantctl.jsontypes import JsonObject
from variantctl.render.output import Block, rich_line, text
from variantctl.report.compare import Comparison
from variantctl.report.tables import ci_text
from variantctl.secretmask import MASK
from variantctl.variants.diff import format_value

if TYPE_CHECKING:
    from rich.table import Table


def _digits(m: MetricTest) -> int:
    return 1 if HEADLINES[m.metric].unit == "ms" else 2


def delta_text(m: MetricTest) -> tuple[str, str]:
    """(Δ %, its 95 % interval) with signs; ``–`` when unknown."""
    pct, d = m.delta_pct, m.difference
    if pct is None:
        return "–", "–"
    if d is None or d.lo_pct != d.lo_pct:  # no interval (nan)
        return f"{pct:+.1f}%", "–"
    return f"{pct:+.1f}%", f"[{d.lo_pct:+.1f}, {d.hi_pct:+.1f}]"


def decision_text(m: MetricTest) -> str:
    if m.not_measurable:
        return m.not_measurable
    if m.difference is None:
        return "undecided (no interval)"
    if m.one_launch:
        return "launch noise unknown"
    if not m.significant:
        return "within noise"
    return "B better" if m.better else "B worse"


VERDICT_TEXT = {"b-faster": "B is faster", "b-slower": "B is slower",
                "no-significant-difference": "no significant difference",
                NOISE_UNKNOWN: "no winner claimed: one launch a side, so how much two "
                               "launches of one configuration differ is unknown (bench "
                               "--repeat 3 measures it)"}


def metrics_table(c: Comparison) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold",
                  title=f"A = {c.a.record.variant_name} ({c.a.run_id})   "
                        f"B = {c.b.record.variant_name} ({c.b.run_id})", title_justify="left")
    for col in ("c", "metric", "A", "B", "Δ %", "95 % CI of Δ", ""):
        table.add_column(col, justify="left" if col in ("metric", "") else "right")
    last = None
    for m in c.tests:
        h = HEADLINES[m.metric]
        pct, ci = delta_text(m)
        table.add_row("" if m.concurrency == last else str(m.concurrency),
                      f"{h.heading} ({h.unit})",
                      *(("–", "–", "", "") if m.not_measurable else
                        (ci_text(m.a, _digits(m)), ci_text(m.b, _digits(m)), pct, ci)),
                      decision_text(m))
        last = m.concurrency
    return table


def changes_table(c: Comparison) -> Table:
    from rich.table import Table
    from rich.text import Text

    from variantctl.logs.bounded import visible

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("GROUP", "SETTING", "A", "B"):
        table.add_column(col, overflow="fold")
    for ch in c.changes:
        # values come from runs and their servers' logs: text through the one filter
        table.add_row(*(Text(visible(str(v))) for v in (
            ch.group, ch.key, format_value(ch.a), format_value(ch.b))))
    return table


def comparison_blocks(c: Comparison) -> list[Block]:
    out: list[Block] = []
    if c.tests:
        out.append(Block(metrics_table(c)))
        out.append(text(MARKS_LEGEND + "; n: repeats (±t) or requests (bootstrap)"))
        for level, v in c.verdicts.items():
            out.append(text(f"concurrency {level}: output throughput — {VERDICT_TEXT[v]}"))
    out.append(text(""))
    if c.changes:
        out += [rich_line("[bold]What differs[/]"), Block(changes_table(c))]
    else:
        out.append(text("no configuration, patch, host or fact differs"))
    if c.also:
        out.append(text("also differs (cannot change performance): "
                        + ", ".join(f"{ch.group}.{ch.key} (secret: ***)" if ch.a == MASK
                                    or ch.b == MASK else f"{ch.key}" for ch in c.also)))
    out += [text(f"note: {n}", err=True) for n in c.notes]
    return out


def comparison_json(c: Comparison) -> JsonObject:
    return {"compare": c.to_json()}
