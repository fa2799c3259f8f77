"""The profile breakdown of ``bench --profile`` runs in a report: a table and a stacked bar.

PURE except :func:`render_stacked_png` (matplotlib, imported inside, like
report/plots.py); the breakdowns come from the run store (``report/load.py``).

The bar shows, per variant and level, where one step's time goes in ms per step:
the step's instrumented children, the points of another process that ran inside
the step (V1's worker: its model runner's children and the rest of it), the rest
of the step (unaccounted), and the time between steps — so the segments add up to
the step period, which is what one decode iteration costs.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from variantctl.report.tables import Table, num


def step_segments(b: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(label, ms per step) segments of one level's breakdown; they add up to the period."""
    step = b.get("step")
    points = {p["name"]: p for p in b.get("points", [])}
    if step is None or step not in points:
        return []
    n = points[step]["calls"] or 1

    def per(total_s: float) -> float:  # ms per step
        return float(total_s) * 1e3 / n

    segs: list[tuple[str, float]] = []
    unacc = {u["parent"]: u["total_s"] for u in b.get("unaccounted", [])}
    for p in points.values():
        if p["parent"] == step:
            segs.append((p["name"], per(p["total_s"])))
    inside = 0.0
    for p in points.values():
        if p["parent"] is None and p["name"] != step:  # another process, within the steps
            kids = [c for c in points.values() if c["parent"] == p["name"]]
            for c in kids:
                segs.append((c["name"], per(c["total_s"])))
            rest = unacc.get(p["name"], p["total_s"]) if kids else p["total_s"]
            segs.append((f"{p['name']} (rest)" if kids else p["name"], per(rest)))
            inside += p["total_s"]
    step_rest = max(0.0, unacc.get(step, points[step]["total_s"]) - inside)
    segs.append((f"{step} (unaccounted)", per(step_rest)))
    between = b.get("between_steps") or {}
    if between.get("gaps"):
        segs.append(("between steps", between["mean_ms"]))
    return segs


def breakdown_table(items: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> Table:
    """Per variant and level: each point's calls, mean, P99 and share of its parent."""
    rows: list[tuple[str, ...]] = []
    for label, levels in items:
        for b in levels:
            for p in b.get("points", []):
                share = p.get("share_of_parent")
                if share is None and p.get("share_of_step") is not None \
                        and p["name"] != b.get("step"):
                    share_text = f"{p['share_of_step'] * 100:.1f}% of step"
                else:
                    share_text = "–" if share is None else f"{share * 100:.1f}%"
                rows.append((label, str(b.get("level", "")), p["name"], str(p["calls"]),
                             num(p["mean_ms"], 3), num(p["p99_ms"], 3), share_text))
            between = b.get("between_steps")
            if between:
                rows.append((label, str(b.get("level", "")), "(between steps)",
                             str(between["gaps"]), num(between["mean_ms"], 3), "–",
                             f"{between['share_of_wall'] * 100:.1f}% of wall"))
    return Table("Profile points", ("variant", "level", "point", "calls", "mean ms", "P99 ms",
                                    "share"), tuple(rows),
                 note="Host time unless the patchset says sync: true (docs/profiling.md).")


@dataclass(frozen=True)
class StackedBars:
    """One stacked bar per (variant, level): segments in ms per step."""

    name: str
    title: str
    bars: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]

    @property
    def lines(self) -> tuple[tuple[str, tuple[tuple[str, float], ...]], ...]:
        """What the Markdown/HTML writers test for "has data" (as on PlotData)."""
        return self.bars


def stacked_bars(items: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                 name: str = "profile_steps.png") -> StackedBars | None:
    bars = tuple((f"{label} {b.get('level', '')}".strip(), tuple(step_segments(b)))
                 for label, levels in items for b in levels)
    bars = tuple(bar for bar in bars if bar[1])
    if not bars:
        return None
    return StackedBars(name, "Where a step's time goes (ms per step)", bars)


def render_stacked_png(plot: StackedBars) -> bytes:
    """The stacked bar chart as PNG bytes (no timestamp in the metadata)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.5), dpi=100)
    ax = fig.add_subplot()
    labels = [b[0] for b in plot.bars]
    names: list[str] = []
    for _, segs in plot.bars:
        for seg, _v in segs:
            if seg not in names:
                names.append(seg)
    bottoms = [0.0] * len(plot.bars)
    for seg in names:
        values = [dict(segs).get(seg, 0.0) for _, segs in plot.bars]
        ax.bar(labels, values, bottom=bottoms, label=seg)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    ax.set_title(plot.title)
    ax.set_ylabel("ms per step")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
