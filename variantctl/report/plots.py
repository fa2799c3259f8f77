"""PNG plots of a report with matplotlib's Agg backend (no display needed).

The data of every plot is built purely (:class:`PlotData`, in
:mod:`variantctl.report.build`); this module only draws. matplotlib is imported
inside :func:`render_png`, so importing the report package (and ``variantctl
--help``) never loads it.
"""

from __future__ import annotations

import functools
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.typing import LineStyleType
    from numpy.typing import NDArray


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


#: matplotlib's ten colours repeat from the eleventh series on: the marker changes with
#: each round of ten, the markers are hollow in the second hundred and the line style
#: changes with each two hundred, so 200 series' markers (the Pareto plot draws no
#: lines) and 800 series' lines all look apart
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_STYLES = ("-", "--", ":", "-.")
#: how many series colour, marker and fill alone tell apart
_BY_MARKER = 200
#: a legend of at most this many entries sits inside the axes; a longer one goes below
#: them, in columns, and the figure grows to hold it (200 entries hid the plot before)
_INSIDE = 10
_WIDTH, _HEIGHT, _DPI = 7.0, 4.2, 100
_CAPSIZE = 3.0  # points, as errorbar's capsize
#: more distinct x values than this: matplotlib picks the ticks (200 run numbers
#: written side by side were one black smear)
_TICKS = 20


@dataclass(frozen=True)
class _Look:
    colour: str
    marker: str
    hollow: bool
    style: str

    @property
    def face(self) -> str:
        return "none" if self.hollow else self.colour


def _look(i: int) -> _Look:
    """Series ``i``'s colour, marker, fill and line style."""
    return _Look(f"C{i % 10}", _MARKERS[i // 10 % len(_MARKERS)], i // 100 % 2 == 1,
                 _STYLES[i // _BY_MARKER % len(_STYLES)])


def _error_bars(ax: Axes, plot: PlotData, vertical: bool) -> None:
    """Every series' error bars in one direction as one collection, and their caps as
    one more: one ``errorbar`` per series made four artists each (a line, two cap lines,
    a collection), and drawing 200 series' cost more than their data."""
    from matplotlib.collections import LineCollection

    segments: list[list[tuple[float, float]]] = []
    colours: list[str] = []
    caps_x: list[float] = []
    caps_y: list[float] = []
    cap_colours: list[str] = []
    for i, line in enumerate(plot.lines):
        bars = _bars(line.yerr if vertical else line.xerr, len(line.xs))
        if bars is None:
            continue
        colour = _look(i).colour
        for x, y, below, above in zip(line.xs, line.ys, bars[0], bars[1], strict=True):
            ends = [(x, y - below), (x, y + above)] if vertical else \
                [(x - below, y), (x + above, y)]
            segments.append(ends)
            colours.append(colour)
            caps_x += [ends[0][0], ends[1][0]]
            caps_y += [ends[0][1], ends[1][1]]
            cap_colours += [colour, colour]
    if not segments:
        return
    ax.add_collection(LineCollection(segments, colors=colours, linewidths=1.0))
    # caps are markers (their length in points, not data), as errorbar draws them
    ax.scatter(caps_x, caps_y, s=(2 * _CAPSIZE) ** 2, c=cap_colours, linewidths=1.0,
               marker="_" if vertical else "|")


def render_png(plot: PlotData) -> bytes:
    """The figure as PNG bytes (deterministic: no timestamp in the metadata)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(_WIDTH, _HEIGHT), dpi=_DPI)
    ax = fig.add_subplot()
    fronts: list[Line2D] = []
    # the bars first: every series' line and markers are drawn over them
    _error_bars(ax, plot, vertical=True)
    _error_bars(ax, plot, vertical=False)
    for i, line in enumerate(plot.lines):
        look = _look(i)
        ax.plot(line.xs, line.ys, color=look.colour, marker=look.marker, markersize=6,
                markerfacecolor=look.face,
                linestyle="none" if plot.pareto else cast("LineStyleType", look.style),
                label=line.label)
    if plot.pareto:
        # a note repeated at the same point (runs that measured alike) is drawn once:
        # the same pixels, and 200 copies of one run drew 400 texts
        for note, x, y in dict.fromkeys((n, x, y) for ln in plot.lines
                                        for x, y, n in zip(ln.xs, ln.ys, ln.notes,
                                                           strict=False)):
            ax.annotate(note, (x, y), textcoords="offset points", xytext=(4, 4),
                        fontsize=8)
        front = pareto_front([(x, y) for ln in plot.lines for x, y in zip(ln.xs, ln.ys,
                                                                          strict=True)])
        if len(front) > 1:
            fronts = ax.plot([p[0] for p in front], [p[1] for p in front], linestyle="--",
                             color="grey", label="Pareto front")
    else:
        if plot.logx:
            ax.set_xscale("log", base=2)
        ticks = sorted({x for ln in plot.lines for x in ln.xs})
        if len(ticks) <= _TICKS:
            # the ladder's own levels as ticks: 1, 2, 4, not 1.0, 1.2, 1.4
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.minorticks_off()
    ax.set_title(plot.title)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.grid(True, alpha=0.3)
    if len(plot.lines) <= _INSIDE:
        if plot.lines:
            # "best" searches every artist's data for the emptiest corner: cheap for a
            # few series, the most of the drawing time for 200
            ax.legend(fontsize=8)
        _tight(fig)
    else:
        if fronts:  # the front's entry in the axes, the series' below them
            ax.legend(handles=fronts, fontsize=8, loc="lower left")
        _legend_below(fig, plot)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


#: a legend entry as drawn: label, its series' look, the handle's line style
_Entry = tuple[str, _Look, str]


def _legend_below(fig: Figure, plot: PlotData) -> None:
    """The series' legend under the axes, centred; the figure grows by its height (and to
    its width, should a column of 120-character labels be wider).

    Its handles are the markers alone while colour, marker and fill tell every series
    apart (up to 200): the plots vs concurrency and the Pareto plot (markers only) then
    share one legend, drawn once."""
    by_marker = len(plot.lines) <= _BY_MARKER
    entries = tuple((line.label, look, "none" if plot.pareto or by_marker else look.style)
                    for i, line in enumerate(plot.lines) for look in (_look(i),))
    image = _legend_image(entries)
    rows, cols = image.shape[0], image.shape[1]
    gap = 10  # pixels between the axes' labels and the legend
    width = max(_WIDTH, cols / _DPI)
    height = _HEIGHT + (rows + gap) / _DPI
    fig.set_size_inches(width, height)
    fig.figimage(image, xo=max(0, int((width * _DPI - cols) / 2)), yo=0)
    # the axes and their labels above the legend
    _tight(fig, rect=(0.0, (rows + gap) / _DPI / height, 1.0, 1.0))


@functools.lru_cache(maxsize=4)
def _legend_image(entries: tuple[_Entry, ...]) -> NDArray[np.uint8]:
    """The legend of ``entries`` as RGBA pixels, in as many columns as the figure's width
    holds. Drawn once for every figure that has the same series (a report's plots vs
    concurrency and its Pareto plot share one): 200 entries cost more to lay out and
    draw than the rest of a figure."""
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(_WIDTH, _HEIGHT), dpi=_DPI)
    handles = [Line2D([], [], color=look.colour, marker=look.marker, markersize=6,
                      markerfacecolor=look.face, linestyle=cast("LineStyleType", style))
               for _, look, style in entries]
    labels = [label for label, *_ in entries]
    longest = max(len(label) for label in labels)
    # a first guess from the longest label at 7 points (about 4 points a character, plus
    # the handle and the gap: 40 points), then fewer columns until it fits the width
    columns = max(1, min(6, int(_WIDTH * 72 // (longest * 4 + 40))))
    while True:
        legend = fig.legend(handles, labels, loc="lower left", bbox_to_anchor=(0.0, 0.0),
                            borderaxespad=0.0, ncols=columns, fontsize=7, frameon=False)
        box = legend.get_window_extent()
        if box.width <= _WIDTH * _DPI or columns == 1:
            break
        legend.remove()
        columns -= 1
    # the figure cut to the legend (anchored at its lower left corner)
    # (half a pixel more: the canvas truncates the size in inches times dpi)
    fig.set_size_inches((np.ceil(box.width) + 0.5) / _DPI, (np.ceil(box.height) + 0.5) / _DPI)
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba")
    width, height = fig.canvas.get_width_height()
    return np.frombuffer(buf.getvalue(), dtype=np.uint8).reshape(height, width, 4)


def _tight(fig: Figure, rect: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
           ) -> None:
    """``fig.tight_layout()``'s margins, set once: tight_layout leaves a placeholder
    layout engine on the figure, and savefig then draws the whole figure once more (a
    dry run for that engine) before drawing it for the PNG."""
    from matplotlib.layout_engine import TightLayoutEngine

    TightLayoutEngine(rect=rect).execute(fig)
