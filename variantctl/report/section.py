"""One section of a report document: a title, paragraphs, tables and plots (PURE).

Below :mod:`variantctl.report.build` so that the modules making a part of a report
(report/tunesection.py) build sections without importing the builder that calls them.
"""

from __future__ import annotations

from dataclasses import dataclass

from variantctl.report.plots import PlotData
from variantctl.report.profile import StackedBars
from variantctl.report.tables import Table
from variantctl.report.tuneplot import TuneCurve


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    plots: tuple[PlotData | StackedBars | TuneCurve, ...] = ()
