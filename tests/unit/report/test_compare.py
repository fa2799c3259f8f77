"""``variantctl compare``: metric deltas beside configuration, patch and environment deltas."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import level, measured_level, record, result, store_run
from variantctl.report.compare import compare
from variantctl.report.model import RunInput
from variantctl.runs.store import RunStore

PARSER = {"enable-auto-tool-choice": True, "tool-call-parser": "qwen3_coder",
          "reasoning-parser": "qwen3", "max-num-seqs": 2}
PATCHED = {"eager-allreduce": {"roots": {"/corex/lib/python3": "applied",
                                         "/corex/lib64/python3": "applied"}}}


def _full() -> RunInput:
    return RunInput(record("aaaaaaaaaa-1", "full-parser", args=PARSER, patches=PATCHED,
                           facts={"vllm_version": "0.6.3", "config": {"enforce_eager": True},
                                  "requested": {"max_num_seqs": 2, "dtype": "bfloat16"},
                                  "startup_seconds": 30.0, "server_address": "0.0.0.0:8100",
                                  "config_line": 12}),
                    (("b1.json", result(
                        [measured_level(1, s, repeat=s) for s in range(3)]
                        + [measured_level(2, 10 + s, repeat=s) for s in range(3)],
                        prompt="short", input_len=None, output_len=128)),))


def _off() -> RunInput:
    rec = record("bbbbbbbbbb-1", "parser-off", args={"max-num-seqs": 2},
                 env={"VLLM_ATTENTION_BACKEND": "XFORMERS"},
                 facts={"vllm_version": "0.6.3", "config": {"enforce_eager": False},
                        "requested": {"max_num_seqs": 2, "dtype": "float16"},
                        "startup_seconds": 26.0, "server_address": "0.0.0.0:8200",
                        "config_line": 14})
    rec = replace(rec, variant={**rec.variant, "port": 8200})
    # c=1: 30 % slower per token; c=2: the same load as A's, other draws
    return RunInput(rec, (("b1.json", result(
        [measured_level(1, 20 + s, slow=1.3, repeat=s) for s in range(3)]
        + [measured_level(2, 30 + s, repeat=s) for s in range(3)],
        prompt="short", input_len=None, output_len=128)),))


def test_each_figure_is_tested_and_each_level_gets_a_verdict() -> None:
    c = compare(_full(), _off())
    by = {(t.concurrency, t.metric): t for t in c.tests}
    thr = by[(1, "output_throughput")]
    assert thr.a.n == thr.b.n == 3 and thr.difference is not None
    assert thr.difference.method == "welch" and thr.significant and thr.better is False
    assert thr.delta_pct is not None and -30 < thr.delta_pct < -15
    ttft = by[(1, "ttft_p90")]
    assert ttft.significant and ttft.better is False  # higher TTFT: worse
    assert not by[(2, "output_throughput")].significant
    assert c.verdicts == {1: "b-slower", 2: "no-significant-difference"}
    assert [t.concurrency for t in c.tests][::11] == [1, 2]  # 11 headline figures a level


def test_one_repeat_a_side_is_tested_over_requests() -> None:
    full, off = _full(), _off()
    one = [RunInput(r.record, (("b1.json", result(
        [lv for lv in r.results[0][1].levels if lv.repeat == 0])),)) for r in (full, off)]
    c = compare(*one)
    thr = next(t for t in c.tests if t.metric == "output_throughput" and t.concurrency == 1)
    assert thr.difference is not None and thr.difference.method == "bootstrap"
    assert (thr.a.n, thr.b.n) == (40, 40) and thr.a.marks == "*"
    # slower over these requests, but one launch a side claims no winner (issue 32)
    assert thr.significant and c.verdicts[1] == "noise-unknown"
    from variantctl.render.compare import comparison_blocks, decision_text
    assert decision_text(thr) == "launch noise unknown"
    said = "\n".join(str(getattr(b, "renderable", b)) for b in comparison_blocks(c))
    assert "no winner claimed: one launch a side" in said and "B is slower" not in said


def test_levels_without_requests_or_repeats_are_left_undecided() -> None:
    a = RunInput(record("aaaaaaaaaa-1", "x"), (("b.json", result([
        level(1, agg=8.34, ttft_p90_ms=1850, tps_p10=8.74, tps_p50=8.9)])),))
    b = RunInput(record("bbbbbbbbbb-1", "y"), (("b.json", result([
        level(1, agg=4.0, ttft_p90_ms=1850, tps_p10=8.74, tps_p50=8.9)])),))
    c = compare(a, b)
    thr = next(t for t in c.tests if t.metric == "output_throughput")
    assert thr.difference is None and not thr.significant
    assert thr.to_json()["ci95_pct"] == [None, None]
    assert thr.delta_pct == pytest.approx(100 * (4.0 - 8.34) / 8.34)
    assert c.verdicts == {1: "no-significant-difference"}


def test_configuration_patch_environment_and_fact_deltas() -> None:
    c = compare(_full(), _off())
    got = {(ch.group, ch.key): (ch.a, ch.b) for ch in c.changes}
    from variantctl.variants.diff import UNSET

    assert got[("args", "tool-call-parser")] == ("qwen3_coder", UNSET)
    assert got[("args", "reasoning-parser")] == ("qwen3", UNSET)
    assert got[("args", "enable-auto-tool-choice")] == (True, UNSET)
    assert ("args", "max-num-seqs") not in got  # equal on both sides
    assert got[("env", "VLLM_ATTENTION_BACKEND")] == (UNSET, "XFORMERS")
    assert got[("patches", "eager-allreduce")][0] == PATCHED["eager-allreduce"]["roots"]
    assert got[("facts", "config.enforce_eager")] == (True, False)
    assert got[("facts", "requested.dtype")] == ("bfloat16", "float16")
    assert ("facts", "requested.max_num_seqs") not in got
    assert ("facts", "vllm_version") not in got
    assert ("facts", "startup_seconds") not in got  # a measurement, not a setting
    # ports and addresses cannot change performance: apart
    assert not {"port", "server_address", "config_line"} & {ch.key for ch in c.changes}
    assert {ch.key for ch in c.also} == {"port", "server_address", "config_line"}


def test_unlike_benchmarks_are_compared_with_a_note_and_bench_deltas() -> None:
    off = _off()
    other = RunInput(off.record, (("b2.json", result([
        level(1, agg=8.0, ttft_p90_ms=1700, tps_p10=8.3, tps_p50=8.5)], prompt="tools",
        input_len=None, output_len=128)),))
    c = compare(_full(), other)
    assert any("different parameters" in n for n in c.notes)
    assert ("bench", "prompt", "short", "tools") in [(ch.group, ch.key, ch.a, ch.b)
                                                     for ch in c.changes]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")
    for r in (_full(), _off()):
        store_run(store, r.record, [res for _, res in r.results])
    store_run(store, record("cccccccccc-1", "failed", verdict="failed", signature="x"))
    return p


def test_compare_cli_table_and_json(run_cli: Callable[..., CliResult], project: Path) -> None:
    res = run_cli(["compare", "aaaa", "bbbbbbbbbb-1"], project=project)
    assert res.code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].startswith("A = full-parser (aaaaaaaaaa-1)   B = parser-off (bbbbbbbbbb-1)")
    c = compare(_full(), _off())
    thr = next(t for t in c.tests if t.metric == "output_throughput" and t.concurrency == 1)
    row = next(line for line in lines if "output throughput" in line).split()
    hw = thr.a.interval.half_width
    assert row[:7] == ["1", "output", "throughput", "(tok/s)", f"{thr.a.estimate:.2f}",
                       f"±{hw:.2f}", "n=3"]
    assert row[-2:] == ["B", "worse"]
    assert f"{thr.delta_pct:+.1f}%" in row
    same = next(line for line in lines[lines.index(next(x for x in lines if x.startswith("2 "))):]
                if "output throughput" in line)
    assert same.split()[-2:] == ["within", "noise"]
    assert "concurrency 1: output throughput — B is slower" in res.stdout
    assert "concurrency 2: output throughput — no significant difference" in res.stdout
    assert "also differs (cannot change performance): port, config_line, server_address" \
        in res.stdout
    what = res.stdout[res.stdout.index("What differs"):res.stdout.index("also differs")]
    assert "port" not in what and "server_address" not in what
    setting = next(line for line in lines if "tool-call-parser" in line)
    assert setting.split() == ["args", "tool-call-parser", "qwen3_coder", "(unset)"]
    res = run_cli(["compare", "aaaa", "bbbb", "--json"], project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)["compare"]
    assert doc["a"]["run_id"] == "aaaaaaaaaa-1" and doc["b"]["benchmarks"][0].startswith("bench-")
    assert doc["verdict"] == {"1": "b-slower", "2": "no-significant-difference"}
    for row_ in doc["rows"]:
        assert list(row_) == ["level", "metric", "a", "b", "delta_pct", "ci95_pct",
                              "significant", "n_a", "n_b"]
    agg = next(r for r in doc["rows"] if r["metric"] == "output_throughput" and r["level"] == 1)
    assert agg["a"] == pytest.approx(thr.a.estimate) and agg["significant"] is True
    assert agg["n_a"] == agg["n_b"] == 3
    lo, hi = agg["ci95_pct"]
    assert lo < agg["delta_pct"] < hi < 0
    assert {"group": "env", "key": "VLLM_ATTENTION_BACKEND", "a": None, "b": "XFORMERS",
            "a_text": "(unset)", "b_text": "XFORMERS"} in doc["changes"]
    assert {c["key"] for c in doc["also_differs"]} == {"port", "server_address", "config_line"}


def test_compare_with_a_failed_start_compares_settings_only(
        run_cli: Callable[..., CliResult], project: Path) -> None:
    res = run_cli(["compare", "aaaa", "cccc"], project=project)
    assert res.code == 0, res.output
    assert "note: run cccccccccc-1 has no benchmark" in res.stderr
    assert "verdict" in res.stdout and "failed" in res.stdout


@pytest.mark.parametrize("args", [["compare", "aaaa", "zzzz"], ["compare", "aaaa"]])
def test_compare_bad_input_is_one_error_line(run_cli: Callable[..., CliResult], project: Path,
                                             args: list[str]) -> None:
    res = run_cli(args, project=project)
    assert res.code == 2
    assert "Traceback" not in res.output
    assert res.stderr.splitlines()[0].lower().startswith("error")
