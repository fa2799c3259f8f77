"""The report's tables and document from hand-made results: every cell checked by hand."""

from __future__ import annotations

from tests.unit.report.builders import gpu, level, measured_level, record, result
from variantctl.report.build import build
from variantctl.report.model import PlannedSkip, ReportInput, RunInput
from variantctl.report.series import series_of
from variantctl.report.tables import (
    curve_table,
    failures_table,
    hardware_table,
    points_table,
    steady_table,
)


def _two_points() -> list[RunInput]:
    full = RunInput(record("aaaaaaaaaa-1", "full-parser"), (("bench-1.json", result([
        level(1, agg=8.34, ttft_p90_ms=1850.0, tps_p10=8.74, tps_p50=8.9),
        level(2, agg=7.23, ttft_p90_ms=3000.0, tps_p10=4.1, tps_p50=4.4, completed=3,
              failed=1),
    ])),))
    off = RunInput(record("bbbbbbbbbb-1", "parser-off"), (("bench-1.json", result([
        level(1, agg=8.0, ttft_p90_ms=1000.0, tps_p10=8.3, tps_p50=8.5, repeat=0),
        level(1, agg=7.0, ttft_p90_ms=2000.0, tps_p10=8.1, tps_p50=8.4, repeat=1),
    ])),))
    return [full, off]


def test_points_table_is_the_first_seeds_table_with_n_and_marks() -> None:
    table = points_table(series_of(_two_points()))
    assert table.headers[:8] == ("point", "c", "ok", "success %", "TTFT P90 ms",
                                 "Output TPS P10", "Output TPS P50", "output tok/s")
    rows = {(r[0], r[1]): r for r in table.rows}
    # results without per-request data and < 3 repeats: the figure, n, no interval, marked
    assert rows[("full-parser", "1")][2:8] == ("4/4", "100", "1850 n=1*!", "8.74 n=1*!",
                                               "8.90 n=1*!", "8.34 n=1*!")
    assert rows[("full-parser", "2")][2:4] == ("3/4", "75")
    # two repeats of c=1: their mean, n=2
    off = rows[("parser-off", "1")]
    assert off[2] == "8/8"
    assert off[4] == "1500 n=2*!"
    assert off[7] == "7.50 n=2*!"
    assert len(table.rows) == 3  # repeats fold into one row
    assert "* fewer than 3 repeats" in table.note


def test_points_table_intervals_over_repeats_and_over_requests() -> None:
    three = RunInput(record("aaaaaaaaaa-1", "x"), (("b.json", result(
        [measured_level(2, s, repeat=s) for s in range(3)] + [measured_level(4, 9)])),))
    (s,) = series_of([three])
    rows = {r[1]: r for r in points_table([s]).rows}
    thr = s.points[0].intervals["output_throughput"]
    assert thr.method == "repeats"
    assert rows["2"][7] == f"{thr.estimate:.2f} ±{thr.interval.half_width:.2f} n=3"
    one = s.points[1].intervals["output_throughput"]
    assert one.method == "requests"
    assert rows["4"][7] == f"{one.estimate:.2f} ±{one.interval.half_width:.2f} n=40*"


def test_curve_table_has_a_row_per_concurrency_and_a_column_per_point() -> None:
    table = curve_table(series_of(_two_points()))
    assert table.headers == ("c", "full-parser", "parser-off")
    assert table.rows == (("1", "8.34 n=1*!", "7.50 n=2*!"), ("2", "7.23 n=1*!", ""))


def test_hardware_table_per_gpu_or_not_available_with_the_reason() -> None:
    on_gpu = RunInput(record("cccccccccc-1", "tp2"), (("b.json", result([
        level(8, agg=900.0, ttft_p90_ms=100, tps_p10=50, tps_p50=60,
              devices=[gpu(28.9, 60.0, 30500.0, 49.7, 0), gpu(30.0, 61.0, 30400.0, 50.0, 1)]),
    ])),))
    cpu = RunInput(record("dddddddddd-1", "cpu-eager"), (("b.json", result([
        level(1, agg=5.0, ttft_p90_ms=100, tps_p10=5, tps_p50=5,
              no_gpu_reason="no GPU monitor on cpu (nvidia-smi, ixsmi)")])),))
    table = hardware_table(series_of([on_gpu, cpu]))
    assert table.rows[0] == ("tp2", "8", "0", "28.9 / 60.0", "30500 / 30600 of 32768",
                             "49.7 / 59.7 of 250")
    assert table.rows[1][2] == "1"
    assert table.rows[2][:4] == ("cpu-eager", "1", "–",
                                 "not available (no GPU monitor on cpu (nvidia-smi, ixsmi))")


def test_steady_table_shows_the_window_and_its_warning() -> None:
    table = steady_table(series_of(_two_points()[:1]))
    assert table.rows[0] == ("full-parser", "1", "10.0 (short)", "4/4", "8.34", "1850",
                             "100.0")
    # the warning once, under the table, naming every short point
    assert "2 point(s) have a steady window shorter than max(10 s, 10 % of the level) — " \
        "marked (short): full-parser c=1, full-parser c=2." in table.note


def test_failures_show_signature_evidence_line_and_remediation_and_predicted_skips() -> None:
    failed = RunInput(record(
        "eeeeeeeeee-1", "sched4-nochunk", verdict="failed",
        signature="batched-tokens-below-model-len",
        evidence=((812, "ValueError: max_num_batched_tokens (8192) is smaller than "
                        "max_model_len (100000)."),),
        remediation="raise --max-num-batched-tokens to max_model_len or enable chunked "
                    "prefill"))
    skip = PlannedSkip("base@seed-grid-07", "predicted", signature="xformers-multistep",
                       rule="multi-step-backend", message="Multi-Step needs flash-attn",
                       remediation="set VLLM_ATTENTION_BACKEND")
    history = PlannedSkip("base@seed-grid-02", "history", signature="batched-tokens",
                          run_id="eeeeeeeeee-1", evidence="log:812: ValueError: …")
    table = failures_table([*_two_points(), failed], [skip, history])
    assert table.rows[0] == (
        "sched4-nochunk", "failed (eeeeeeeeee-1)", "batched-tokens-below-model-len",
        "log:812: ValueError: max_num_batched_tokens (8192) is smaller than max_model_len "
        "(100000).", "raise --max-num-batched-tokens to max_model_len or enable chunked prefill")
    assert table.rows[1] == ("base@seed-grid-07", "predicted by multi-step-backend",
                             "xformers-multistep", "Multi-Step needs flash-attn",
                             "set VLLM_ATTENTION_BACKEND")
    assert table.rows[2][1] == "skipped: failed before (eeeeeeeeee-1)"
    assert len(table.rows) == 3  # ready runs are not failures


def test_document_sections_and_plots_follow_the_data() -> None:
    runs = _two_points()
    doc = build(ReportInput("Decode", tuple(runs)))
    titles = [s.title for s in doc.sections]
    assert titles == ["Summary", "Runs", "Results", "Hardware", "Throughput vs latency",
                      "Steady state"]
    # no GPU samples: no utilisation plot, and the hardware section says so
    assert [p.name for p in doc.plots] == ["agg_tps.png", "tpot.png", "ttft_p90.png",
                                           "pareto.png"]
    hw = doc.sections[3]
    assert "not available" in hw.paragraphs[0]
    agg = doc.plots[0]
    assert [(ln.label, ln.xs, ln.ys) for ln in agg.lines] == [
        ("full-parser", (1.0, 2.0), (8.34, 7.23)), ("parser-off", (1.0,), (7.5,))]
    pareto = doc.plots[3]
    assert pareto.lines[0].notes == ("c1", "c2") and pareto.lines[0].xs == (8.9, 4.4)


def test_a_run_without_benchmark_and_a_failure_make_a_failures_section() -> None:
    failed = RunInput(record("ffffffffff-1", "oom", verdict="failed", signature="cpu-oom"))
    doc = build(ReportInput("R", (failed,)))
    assert [s.title for s in doc.sections] == ["Runs", "Results",
                                               "Failures and skipped points"]
    assert doc.sections[1].paragraphs == ("No benchmark results in these runs.",)
    assert doc.plots == ()


def test_two_benchmarks_of_one_run_are_two_labelled_series() -> None:
    r = RunInput(record("aaaaaaaaaa-1", "full-parser"), (
        ("b1.json", result([level(1, agg=8, ttft_p90_ms=1, tps_p10=1, tps_p50=1)],
                           prompt="short", input_len=None, output_len=256)),
        ("b2.json", result([level(1, agg=8, ttft_p90_ms=1, tps_p10=1, tps_p50=1)],
                           prompt="tools", input_len=None, output_len=128))))
    assert [s.label for s in series_of([r])] == ["full-parser [short out 256]",
                                                 "full-parser [tools out 128]"]


def test_an_empty_sample_is_no_figure_not_zero() -> None:
    # every request in one chunk: vLLM's stats of an empty sample are zeros with count 0
    from dataclasses import replace

    from variantctl.bench.model import Stats

    lv = level(1, agg=300.0, ttft_p90_ms=30.0, tps_p10=0.0, tps_p50=0.0)
    lv = replace(lv, metrics=replace(lv.metrics, output_tps=Stats(), tpot_ms=Stats()))
    run = RunInput(record("aaaaaaaaaa-1", "cpu-eager"), (("b.json", result([lv])),))
    (row,) = points_table(series_of([run])).rows
    assert row[5:9] == ("–", "–", "300.00 n=1*!", "–")
