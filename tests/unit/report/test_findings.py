"""The report summary's findings: best points and their ties, knees, TP scaling; labels."""

from __future__ import annotations

from tests.unit.report.builders import level, measured_level, record, result
from variantctl.report.build import build
from variantctl.report.findings import KNEE_GAIN_PCT, best_points, knee, tp_scaling
from variantctl.report.labels import labels
from variantctl.report.model import ReportInput, RunInput
from variantctl.report.series import series_of


def _run(rid: str, args: dict[str, object], levels: list) -> RunInput:  # type: ignore[type-arg]
    return RunInput(record(rid, "cpu-base@smoke-0" + rid[0], args=args),
                    (("b.json", result(levels)),))


def test_points_are_labelled_by_the_settings_that_vary() -> None:
    runs = [_run("aaaaaaaaaa-1", {"enforce-eager": True, "max-num-seqs": 2, "dtype": "bf16"},
                 [level(1, agg=1, ttft_p90_ms=1, tps_p10=1, tps_p50=1)]),
            _run("bbbbbbbbbb-1", {"max-num-seqs": 2, "dtype": "bf16"},
                 [level(1, agg=1, ttft_p90_ms=1, tps_p10=1, tps_p50=1)]),
            _run("cccccccccc-1", {"enforce-eager": False, "max-num-seqs": 4, "dtype": "bf16"},
                 [level(1, agg=1, ttft_p90_ms=1, tps_p10=1, tps_p50=1)])]
    assert labels(runs) == {"aaaaaaaaaa-1": "eager=on seqs=2", "bbbbbbbbbb-1": "eager=off seqs=2",
                            "cccccccccc-1": "eager=off seqs=4"}
    assert [s.label for s in series_of(runs)] == ["eager=on seqs=2", "eager=off seqs=2",
                                                  "eager=off seqs=4"]
    # an integer setting unset in one run is the default, not "off" (1 == True)
    one = [_run("aaaaaaaaaa-1", {}, [level(1, agg=1, ttft_p90_ms=1, tps_p10=1, tps_p50=1)]),
           _run("bbbbbbbbbb-1", {"max-num-seqs": 1},
                [level(1, agg=1, ttft_p90_ms=1, tps_p10=1, tps_p50=1)])]
    assert list(labels(one).values()) == ["seqs=default", "seqs=1"]
    # nothing varies: the run's name, told apart by its sequence number
    same = [_run("aaaaaaaaaa-1", {}, [level(1, agg=1, ttft_p90_ms=1, tps_p10=1, tps_p50=1)])]
    assert [s.label for s in series_of(same)] == ["cpu-base@smoke-0a"]


def _ladder(rid: str, args: dict[str, object], slow: float, seed: int) -> RunInput:
    return _run(rid, args, [measured_level(c, seed + 10 * c + r, slow=slow, repeat=r)
                            for c in (1, 2) for r in range(3)])


def test_best_point_per_concurrency_with_the_points_within_noise() -> None:
    fast = _ladder("aaaaaaaaaa-1", {"max-num-seqs": 4}, 1.0, 0)
    same = _ladder("bbbbbbbbbb-1", {"max-num-seqs": 8}, 1.0, 100)
    slow = _ladder("cccccccccc-1", {"max-num-seqs": 1}, 1.5, 200)
    series = series_of([fast, same, slow])
    best = best_points(series, "output_throughput", True)
    assert [b.concurrency for b in best] == [1, 2]
    for b in best:
        assert b.series.label in ("seqs=4", "seqs=8")
        # the other fast point is within the noise; the slow one is not
        assert [s.label for s, _ in b.ties] == [({"seqs=4", "seqs=8"} - {b.series.label}).pop()]
        assert b.figure.method == "repeats" and b.figure.repeats == 3
    ttft = best_points(series, "ttft_p90", False)
    assert all(b.series.label != "seqs=1" for b in ttft)
    doc = build(ReportInput("R", (fast, same, slow)))
    assert doc.sections[0].title == "Summary"
    best_table = doc.sections[0].tables[0]
    assert best_table.headers == ("c", "best point", "output throughput, 95 % CI",
                                  "not significantly different")
    assert "seqs=1" not in best_table.rows[0][3]


def _curve(rid: str, tp: int, points: list[tuple[int, float, float]]) -> RunInput:
    return _run(rid, {"tensor-parallel-size": tp}, [
        level(c, agg=agg, ttft_p90_ms=10, tps_p10=1, tps_p50=1, tpot_ms=tpot, repeat=r)
        for c, agg, tpot in points for r in range(3)])


def test_the_knee_is_where_a_doubling_stops_paying_while_tpot_grows() -> None:
    # 1→2: +80 %, 2→4: +50 %, 4→8: +5 % with TPOT up 40 %: the knee is c=4
    run = _curve("aaaaaaaaaa-1", 1, [(1, 100, 10), (2, 180, 11), (4, 270, 12),
                                     (8, 283.5, 16.8)])
    (s,) = series_of([run])
    k = knee(s)
    assert k.concurrency == 4 and k.next_concurrency == 8
    assert k.gain_pct is not None and round(k.gain_pct, 1) == 5.0 < KNEE_GAIN_PCT
    assert k.tpot_pct is not None and round(k.tpot_pct) == 40
    # still gaining 20 % per doubling over a 4x step (1.2^2 = 1.44): no knee
    run = _curve("bbbbbbbbbb-1", 1, [(1, 100, 10), (4, 144, 20)])
    assert knee(series_of([run])[0]).concurrency is None


def test_tp_scaling_efficiency_pairs_tp_n_with_tp_1() -> None:
    tp1 = _curve("aaaaaaaaaa-1", 1, [(1, 100, 10), (8, 400, 20)])
    tp2 = _curve("bbbbbbbbbb-1", 2, [(1, 150, 8), (8, 720, 15)])
    scaling = tp_scaling(series_of([tp1, tp2]))
    assert [(t.tp, t.concurrency, round(t.efficiency, 2)) for t in scaling] == [
        (2, 1, 0.75), (2, 8, 0.9)]
    doc = build(ReportInput("R", (tp1, tp2)))
    (table,) = [t for t in doc.sections[0].tables if t.title == "TP scaling efficiency"]
    assert table.rows[0][1:] == ("2", "1", "100.00", "150.00", "75 %")
    assert tp_scaling(series_of([tp1])) == []  # no TP axis
