"""A level whose tokens arrived in one burst (issue 32): TPOT and per-user TPS are shown
as not measurable, with the reason, in bench, the report and compare — not "0.0 ±0.0"."""

from __future__ import annotations

import re

from tests.unit.report.builders import level, record, result
from variantctl.bench.metrics import NOT_MEASURABLE, burst_point
from variantctl.bench.uncertainty import compare_points
from variantctl.render.bench import ci_tables
from variantctl.render.compare import decision_text
from variantctl.report.model import RunInput
from variantctl.report.series import series_of
from variantctl.report.tables import points_table

ZERO = re.compile(r"(?<![\d.])0\.0+ ±0\.0")


def _burst(seq: int) -> list:  # type: ignore[type-arg]
    return [level(1, agg=50.0, ttft_p90_ms=900, tps_p10=0.0, tps_p50=0.0, tpot_ms=0.0,
                  repeat=r) for r in range(3)]


def _paced() -> list:  # type: ignore[type-arg]
    return [level(1, agg=40.0, ttft_p90_ms=100, tps_p10=9.0, tps_p50=10.0, tpot_ms=90.0,
                  repeat=r) for r in range(3)]


def test_a_burst_level_is_not_measured_on_tpot_and_tps() -> None:
    assert burst_point(_burst(0)) and not burst_point(_paced())
    tests = {t.metric: t for t in compare_points(1, _paced(), _burst(0))}
    assert decision_text(tests["tpot_mean"]) == NOT_MEASURABLE
    assert tests["tpot_mean"].to_json()["not_measurable"] == NOT_MEASURABLE
    assert tests["tps_p50"].not_measurable and tests["output_throughput"].not_measurable is None
    runs = [RunInput(record("aaaaaaaaaa-1", "burst"), (("b.json", result(_burst(0))),))]
    table = points_table(series_of(runs))
    row = table.rows[0]
    assert row[-1] == NOT_MEASURABLE and row[5] == row[6] == NOT_MEASURABLE
    assert not ZERO.search(" ".join(row))
    from rich.console import Console
    console = Console(record=True, width=400)
    for t in ci_tables([("b.json", result(_burst(0)))]):
        console.print(t)
    printed = console.export_text()
    assert printed.count(NOT_MEASURABLE) == 6 and not ZERO.search(printed)
