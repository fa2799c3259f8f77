"""The report's PNG plots with many series (issue 27 item 8): every series told apart, the
legend below the axes and drawn once for the plots that share it, error bars drawn."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from tests.unit.report.browser import BLUE
from variantctl.report import plots
from variantctl.report.plots import Line, PlotData, render_png

XS = (1.0, 2.0, 4.0, 8.0)


def _lines(n: int, err: float = 0.0) -> tuple[Line, ...]:
    return tuple(Line(f"seqs={i}", XS, tuple(10.0 * x + i for x in XS),
                      tuple(f"c{x:g}" for x in XS), ((err, err),) * len(XS) if err else ())
                 for i in range(n))


def _size(png: bytes) -> tuple[int, int]:
    size: tuple[int, int] = Image.open(io.BytesIO(png)).size
    return size


def _blue(png: bytes) -> int:
    """Pixels near matplotlib's first colour (as the browser check counts them)."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int64)
    return int((np.abs(rgb - np.array(BLUE)).sum(axis=2) <= 40).sum())


def test_series_look_apart_by_marker_up_to_200_and_by_line_beyond() -> None:
    looks = [plots._look(i) for i in range(800)]
    assert len({(k.colour, k.marker, k.hollow) for k in looks[:200]}) == 200
    assert len({(k.colour, k.marker, k.hollow, k.style) for k in looks}) == 800
    # the first ten are matplotlib's own first ten colours, filled circles, solid lines
    assert {(k.marker, k.hollow, k.style) for k in looks[:10]} == {("o", False, "-")}


def test_a_few_series_keep_the_figure_size_and_many_grow_it_by_their_legend() -> None:
    few = render_png(PlotData("a.png", "t", "c", "y", _lines(2), logx=True))
    assert _size(few) == (700, 420)
    width, height = _size(render_png(PlotData("a.png", "t", "c", "y", _lines(120))))
    # 120 entries in columns below the axes: at least 20 rows of 7-point text
    assert width == 700 and height > 420 + 20 * 9, (width, height)
    _, shorter = _size(render_png(PlotData("a.png", "t", "c", "y", _lines(60))))
    assert 420 < shorter < height


def test_plots_of_the_same_series_draw_their_legend_once() -> None:
    plots._legend_image.cache_clear()
    lines = _lines(30, err=1.0)
    render_png(PlotData("a.png", "t", "c", "y", lines))
    render_png(PlotData("t.png", "t", "c", "y", lines))
    render_png(PlotData("p.png", "t", "x", "y", lines, pareto=True))
    info = plots._legend_image.cache_info()
    assert (info.misses, info.hits) == (1, 2), info
    render_png(PlotData("b.png", "t", "c", "y", _lines(31)))  # other series: drawn anew
    assert plots._legend_image.cache_info().misses == 2


def test_error_bars_are_drawn_in_the_series_colour() -> None:
    bare = _blue(render_png(PlotData("a.png", "t", "c", "y", _lines(1))))
    barred = _blue(render_png(PlotData("a.png", "t", "c", "y", _lines(1, err=8.0))))
    assert barred > bare + 100, (bare, barred)
    def pareto(err: float) -> PlotData:
        bars = ((err, err),) * len(XS) if err else ()
        return PlotData("p.png", "t", "x", "y", (Line("a", XS, (1.0, 2.0, 3.0, 4.0), (),
                                                      bars, bars),), pareto=True)

    p_bare, p_barred = _blue(render_png(pareto(0.0))), _blue(render_png(pareto(0.4)))
    assert p_barred > p_bare + 100, (p_bare, p_barred)
