"""``variantctl runs trend``: a figure run by run, with changes beyond the noise flagged."""

from __future__ import annotations

from typing import TYPE_CHECKING

from variantctl.bench.uncertainty import HEADLINES, MARKS_LEGEND
from variantctl.render.output import Block, text
from variantctl.report.labels import shorten
from variantctl.report.tables import ci_text
from variantctl.report.trend import Trend, TrendPoint
from variantctl.variants.diff import format_value

if TYPE_CHECKING:
    from rich.table import Table


def _changed(p: TrendPoint) -> str:
    if p.change is None:
        return ""
    if not p.beyond_noise:
        return "within noise"
    what = "; ".join(f"{c.group} {c.key}: {format_value(c.a)} → {format_value(c.b)}"
                     for c in p.changed) or "no setting differs (machine or load?)"
    return f"CHANGED beyond noise — {what}"


def trend_table(t: Trend) -> Table:
    from rich.table import Table

    h = HEADLINES[t.metric]
    digits = 1 if h.unit == "ms" else 2
    table = Table(box=None, pad_edge=False, header_style="bold",
                  title=f"{h.heading} ({h.unit}) by run, oldest first", title_justify="left")
    for col in ("c", "run", "created", f"{h.heading}, 95 % CI", "Δ % vs previous", ""):
        table.add_column(col, justify="right" if col in ("c",) else "left",
                         overflow="fold")
    last = None
    for p in t.points:
        ch = p.change
        delta = ""
        if ch is not None and ch.delta_pct is not None:
            d = ch.difference
            delta = f"{ch.delta_pct:+.1f}%" + (
                f" [{d.lo_pct:+.1f}, {d.hi_pct:+.1f}]" if d is not None else "")
        table.add_row("" if p.concurrency == last else str(p.concurrency), p.run.run_id,
                      p.run.record.created_at[:19].replace("T", " "),
                      ci_text(p.figure, digits), delta, _changed(p))
        last = p.concurrency
    return table


def trend_blocks(target: str, t: Trend) -> list[Block]:
    if not t.points:
        return [text(f"{target}: no benchmark in its {len(t.skipped)} run(s)", err=True),
                *[text(f"note: left out (damaged) {shorten(s, 300)}", err=True)
                  for s in t.skipped if ": " in s]]
    out = [Block(trend_table(t)), text(MARKS_LEGEND)]
    damaged = [s for s in t.skipped if ": " in s]
    unlike = [s for s in t.skipped if ": " not in s]
    if unlike:
        out.append(text(f"note: left out (benchmarked differently from the latest run): "
                        f"{', '.join(unlike)}", err=True))
    out += [text(f"note: left out (damaged) {shorten(s, 300)}", err=True) for s in damaged]
    return out
