"""``variantctl compare``: metric deltas beside configuration, patch and environment deltas."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import level, record, result, store_run
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
                                  "startup_seconds": 30.0}),
                    (("b1.json", result([
                        level(1, agg=8.34, ttft_p90_ms=1850, tps_p10=8.74, tps_p50=8.9),
                        level(2, agg=8.07, ttft_p90_ms=2500, tps_p10=4.1, tps_p50=4.3)],
                        prompt="short", input_len=None, output_len=128)),))


def _off() -> RunInput:
    return RunInput(record("bbbbbbbbbb-1", "parser-off", args={"max-num-seqs": 2},
                           env={"VLLM_ATTENTION_BACKEND": "XFORMERS"},
                           facts={"vllm_version": "0.6.3", "config": {"enforce_eager": False},
                                  "requested": {"max_num_seqs": 2, "dtype": "float16"},
                                  "startup_seconds": 26.0}),
                    (("b1.json", result([
                        level(1, agg=8.0, ttft_p90_ms=1700, tps_p10=8.3, tps_p50=8.5, repeat=0),
                        level(1, agg=7.0, ttft_p90_ms=1900, tps_p10=8.1, tps_p50=8.3, repeat=1),
                        level(2, agg=7.23, ttft_p90_ms=2400, tps_p10=3.9, tps_p50=4.0)],
                        prompt="short", input_len=None, output_len=128)),))


def test_metric_deltas_absolute_percent_spread_and_direction() -> None:
    c = compare(_full(), _off())
    by = {(m.concurrency, m.metric): m for m in c.metrics}
    agg = by[(1, "agg_tps")]
    assert agg.a is not None and agg.b is not None
    assert agg.a.mean == 8.34 and agg.b.mean == pytest.approx(7.5)
    assert (agg.b.lo, agg.b.hi, agg.b.n) == (7.0, 8.0, 2)  # the spread across repeats
    assert agg.delta == pytest.approx(-0.84)
    assert agg.pct == pytest.approx(-0.84 / 8.34 * 100)
    assert agg.better is False  # less throughput is worse
    ttft = by[(1, "ttft_p90")]
    assert ttft.delta == pytest.approx(-50.0) and ttft.better is True  # lower latency: better
    assert [m.concurrency for m in c.metrics][::7] == [1, 2]


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
    row = next(line for line in lines if "aggregate TPS" in line)
    assert row.split() == ["aggregate", "TPS", "(tok/s)", "8.34", "7.50", "(7.00–8.00)",
                           "-0.84", "-10.1%", "B", "worse"]
    assert next(line for line in lines if "success" in line).split()[:5] == [
        "1", "success", "(%)", "100", "100"]
    ttft = next(line for line in lines if "TTFT P90" in line)
    assert ttft.split()[3:] == ["1.85", "1.80", "(1.70–1.90)", "-0.05", "-2.7%", "B", "better"]
    assert "with repeats: mean (min–max)" in res.stdout
    setting = next(line for line in lines if "tool-call-parser" in line)
    assert setting.split() == ["args", "tool-call-parser", "qwen3_coder", "(unset)"]
    res = run_cli(["compare", "aaaa", "bbbb", "--json"], project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)["compare"]
    assert doc["a"]["run_id"] == "aaaaaaaaaa-1" and doc["b"]["benchmarks"][0].startswith("bench-")
    agg = next(m for m in doc["metrics"] if m["metric"] == "agg_tps" and m["concurrency"] == 1)
    assert agg["b"] == {"mean": 7.5, "min": 7.0, "max": 8.0, "n": 2}
    assert agg["pct"] == pytest.approx(-10.07, abs=0.01)
    assert {"group": "env", "key": "VLLM_ATTENTION_BACKEND", "a": None, "b": "XFORMERS",
            "a_text": "(unset)", "b_text": "XFORMERS"} in doc["changes"]


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
