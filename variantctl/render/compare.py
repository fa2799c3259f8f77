"""``variantctl compare``: the metric deltas table and the settings that differ.

Returns blocks (rich tables) and the JSON document; the CLI prints them.
"""

from __future__ import annotations

from typing import Any

from variantctl.render.output import Block, rich_line, text
from variantctl.report.compare import Comparison, MetricDelta
from variantctl.report.tables import fig_text, num
from variantctl.variants.diff import format_value


def _scale(m: MetricDelta) -> tuple[float, int, str]:
    """Display scale, digits and unit: TTFT in seconds like the seeds wrote it."""
    if m.metric == "ttft_p90":
        return 1e-3, 2, "s"
    if m.metric == "success":
        return 1.0, 0, m.unit
    if m.metric in ("tpot_mean", "e2el_p90"):
        return 1.0, 1, m.unit
    return 1.0, 2, m.unit


def delta_text(m: MetricDelta) -> tuple[str, str]:
    """(absolute, %) with a sign, ``–`` when one side has no value."""
    d, pct = m.delta, m.pct
    if d is None:
        return "–", "–"
    scale, digits, _ = _scale(m)
    return f"{d * scale:+.{digits}f}", "–" if pct is None else f"{pct:+.1f}%"


def metrics_table(c: Comparison) -> Any:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold",
                  title=f"A = {c.a.record.variant_name} ({c.a.run_id})   "
                        f"B = {c.b.record.variant_name} ({c.b.run_id})", title_justify="left")
    for col in ("c", "metric", "A", "B", "Δ", "Δ %", ""):
        table.add_column(col, justify="right" if col in ("c", "A", "B", "Δ", "Δ %") else "left")
    last = None
    for m in c.metrics:
        scale, digits, unit = _scale(m)
        d, pct = delta_text(m)
        mark = "" if m.better is None else ("B better" if m.better else "B worse")
        table.add_row("" if m.concurrency == last else str(m.concurrency),
                      f"{m.heading} ({unit})", fig_text(m.a, digits, scale),
                      fig_text(m.b, digits, scale), d, pct, mark)
        last = m.concurrency
    return table


def changes_table(c: Comparison) -> Any:
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
    if c.metrics:
        out.append(Block(metrics_table(c)))
        if any((m.a is not None and m.a.n > 1) or (m.b is not None and m.b.n > 1)
               for m in c.metrics):
            out.append(text("with repeats: mean (min–max)"))
    out.append(text(""))
    if c.changes:
        out += [rich_line("[bold]What differs[/]"), Block(changes_table(c))]
    else:
        out.append(text("no configuration, patch, host or fact differs"))
    out += [text(f"note: {n}", err=True) for n in c.notes]
    return out


def comparison_json(c: Comparison) -> dict[str, Any]:
    doc = c.to_json()
    for m, row in zip(c.metrics, doc["metrics"], strict=True):
        row["a_text"], row["b_text"] = fig_text(m.a), fig_text(m.b)
        row["delta_text"] = num(m.delta)
    return {"compare": doc}
