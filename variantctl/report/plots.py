"""PNG plots of a report with matplotlib's Agg backend (no display needed).

The data of every plot is built purely (:class:`PlotData`, in
:mod:`variantctl.report.build`); this module only draws. matplotlib is imported
inside :func:`render_png`, so importing the report package (and ``variantctl
--help``) never loads it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    #: per point text drawn beside it (the Pareto plot's concurrencies)
    notes: tuple[str, ...] = ()
    #: per point (below, above) the 95 % interval reaches from y (x): error bars; empty
    #: when the figure has no interval
    yerr: tuple[tuple[float, float], ...] = ()
    xerr: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class PlotData:
    """One figure: file name (``agg_tps.png``), titles, one line per series."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    lines: tuple[Line, ...]
    #: concurrency ladders double (1, 2, 4 … 200): a log-2 axis spaces them evenly
    logx: bool = False
    #: draw markers only, and the upper-right frontier over all lines
    pareto: bool = False


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both axes (higher is better), by x."""
    front: list[tuple[float, float]] = []
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if not front or y > front[-1][1]:
            front.append((x, y))
    return sorted(front)


def _bars(err: tuple[tuple[float, float], ...], n: int) -> list[list[float]] | None:
    """matplotlib's asymmetric error form ([below...], [above...]); None: no bars."""
    if len(err) != n or not err:
        return None
    return [[max(0.0, b) for b, _ in err], [max(0.0, a) for _, a in err]]


def render_png(plot: PlotData) -> bytes:
    """The figure as PNG bytes (deterministic: no timestamp in the metadata)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.2), dpi=100)
    ax = fig.add_subplot()
    for line in plot.lines:
        yerr = _bars(line.yerr, len(line.ys))
        xerr = _bars(line.xerr, len(line.xs))
        if plot.pareto:
            ax.errorbar(line.xs, line.ys, yerr=yerr, xerr=xerr, fmt="o", label=line.label,
                        markersize=6, capsize=3, elinewidth=1)
            for x, y, note in zip(line.xs, line.ys, line.notes, strict=False):
                ax.annotate(note, (x, y), textcoords="offset points", xytext=(4, 4),
                            fontsize=8)
        else:
            ax.errorbar(line.xs, line.ys, yerr=yerr, marker="o", label=line.label, capsize=3,
                        elinewidth=1)
    if plot.pareto:
        front = pareto_front([(x, y) for ln in plot.lines for x, y in zip(ln.xs, ln.ys,
                                                                          strict=True)])
        if len(front) > 1:
            ax.plot([p[0] for p in front], [p[1] for p in front], linestyle="--",
                    color="grey", label="Pareto front")
    if not plot.pareto:
        # the ladder's own levels as ticks: 1, 2, 4, not 1.0, 1.2, 1.4
        if plot.logx:
            ax.set_xscale("log", base=2)
        ticks = sorted({x for ln in plot.lines for x in ln.xs})
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    ax.set_title(plot.title)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.grid(True, alpha=0.3)
    if plot.lines:
        ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
