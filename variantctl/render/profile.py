"""The profile breakdown of ``bench --profile`` as tables (returned, never printed here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape as _markup_escape
from rich.table import Table

from variantctl.logs.bounded import visible


def escape(text: str) -> str:
    """Point names come from files the patched server wrote: control characters made
    visible (the one filter), then rich markup escaped."""
    return _markup_escape(visible(text))


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.1f}%"


def _of(p: Mapping[str, Any], step: str | None) -> str:
    if p.get("share_of_parent") is not None:
        return _share(p["share_of_parent"])
    if p.get("share_of_step") is not None and p["name"] != step:
        return _share(p["share_of_step"]) + " of step"
    return "-"


def breakdown_table(label: str, b: Mapping[str, Any]) -> Table:
    """One level: a row per point (indented under its parent), unaccounted, between steps."""
    level = b.get("level", "")
    title = f"profile {label} {level}: {b['events']} events"
    if b.get("step_period_ms") is not None:
        title += f", step period {b['step_period_ms']:.2f} ms"
    if b.get("dropped"):
        title += f", {b['dropped']} dropped"
    table = Table(title=escape(title), title_justify="left", show_edge=False, pad_edge=False)
    for col in ("point", "calls", "total s", "mean ms", "P50 ms", "P99 ms", "of parent"):
        table.add_column(col, justify="left" if col == "point" else "right")
    points = list(b.get("points", []))
    children: dict[str | None, list[Mapping[str, Any]]] = {}
    for p in points:
        children.setdefault(p["parent"], []).append(p)
    unacc = {u["parent"]: u for u in b.get("unaccounted", [])}
    known = {p["name"] for p in points}

    def rows(parent: str | None, depth: int, seen: frozenset[str]) -> None:
        for p in children.get(parent, []):
            if p["name"] in seen:
                continue
            table.add_row("  " * depth + escape(p["name"]), str(p["calls"]),
                          f"{p['total_s']:.3f}", _ms(p["mean_ms"]), _ms(p["p50_ms"]),
                          _ms(p["p99_ms"]), _of(p, b.get("step")))
            rows(p["name"], depth + 1, seen | {p["name"]})
            u = unacc.get(p["name"])
            if u is not None:
                table.add_row("  " * (depth + 1) + "[dim](unaccounted)[/]", "",
                              f"{u['total_s']:.3f}", "", "", "", _share(u["share_of_parent"]))

    rows(None, 0, frozenset())
    # parents that were not recorded themselves (their calls are outside the window)
    for parent in children:
        if parent is not None and parent not in known:
            rows(parent, 0, frozenset())
    between = b.get("between_steps")
    if between:
        table.add_row(f"[dim](between {escape(str(b.get('step')))} calls)[/]",
                      str(between["gaps"]), f"{between['total_s']:.3f}",
                      _ms(between["mean_ms"]), _ms(between["p50_ms"]), "",
                      _share(between["share_of_wall"]) + " of wall")
    return table


def breakdown_tables(label: str, levels: Sequence[Mapping[str, Any]]) -> list[Table]:
    return [breakdown_table(label, b) for b in levels]

