"""``variantctl runs import``: vllm bench serve, GuideLLM and AIPerf result files become
runs that ``compare``, ``report``, ``runs trend`` and ``runs export`` read.

The files are written here from each tool's documented schema (vLLM 0.6's
``benchmark_serving.py`` result; GuideLLM's ``GenerativeBenchmarksReport``; AIPerf's
``JsonExportData``) in the shapes of early releases; tests/vllm/test_import_real.py
imports one the real ``vllm bench serve`` client wrote, and test_import_real_files.py
files the real GuideLLM 0.8.1 and AIPerf 0.13.0 wrote (tests/fixtures/interop/)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.bench.stored import read_benchmark
from variantctl.runs.store import RunStore

Run = Callable[..., CliResult]


def vllm_06(path: Path, *, concurrency: int | None = None) -> dict[str, Any]:
    """A 0.6-era ``benchmark_serving.py --save-result`` file: per-request lists always,
    no ``failed``, the default ``--metric-percentiles 99`` (no p10/p90)."""
    ttfts = [0.05 + 0.001 * i for i in range(20)]
    itls = [[0.01] * 15 for _ in range(20)]
    errors = [""] * 19 + ["boom"]
    ttfts[19], itls[19] = 0.0, []
    doc: dict[str, Any] = {
        "date": "20240901-120000", "backend": "vllm", "model_id": "m", "tokenizer_id": "m",
        "best_of": 1, "use_beam_search": False, "num_prompts": 20, "request_rate": "inf",
        "duration": 2.0, "completed": 19, "total_input_tokens": 19 * 32,
        "total_output_tokens": 19 * 16, "request_throughput": 9.5,
        "output_throughput": 152.0, "total_token_throughput": 456.0,
        "input_lens": [32] * 20, "output_lens": [16] * 19 + [0], "ttfts": ttfts,
        "itls": itls, "generated_texts": [""] * 20, "errors": errors,
        "mean_ttft_ms": 59.0, "median_ttft_ms": 59.0, "std_ttft_ms": 5.5, "p99_ttft_ms": 67.8,
        "mean_tpot_ms": 10.0, "median_tpot_ms": 10.0, "std_tpot_ms": 0.0, "p99_tpot_ms": 10.0,
        "mean_itl_ms": 10.0, "median_itl_ms": 10.0, "std_itl_ms": 0.0, "p99_itl_ms": 10.0,
    }
    if concurrency is not None:
        doc["max_concurrency"] = concurrency
    path.write_text(json.dumps(doc))
    return doc


def _dist(mean: float, p90: float, count: int) -> dict[str, Any]:
    d = {"mean": mean, "median": mean, "mode": mean, "variance": 1.0, "std_dev": 1.0,
         "min": mean / 2, "max": p90 * 1.1, "count": count, "total_sum": mean * count,
         "percentiles": {"p001": mean / 2, "p01": mean / 2, "p05": mean / 2, "p10": mean * 0.8,
                         "p25": mean, "p50": mean, "p75": mean, "p90": p90, "p95": p90,
                         "p99": p90, "p999": p90}}
    return {"successful": d, "errored": None, "incomplete": None, "total": d}


def guidellm_file(path: Path) -> None:
    """A GuideLLM report of two concurrent benchmarks (2 and 4 streams), stats only."""
    benches = []
    for streams, ttft in ((2, 80.0), (4, 120.0)):
        benches.append({
            "type_": "generative_benchmark",
            "config": {"strategy": {"type_": "concurrent", "streams": streams}},
            "scheduler_metrics": {"start_time": 1.7e9, "measure_start_time": 1.7e9,
                                  "measure_end_time": 1.7e9 + 10.0},
            "metrics": {
                "request_totals": {"successful": 40, "errored": 1, "incomplete": 0,
                                   "total": 41},
                "request_concurrency": _dist(streams, streams, 40),
                "request_latency": _dist(0.5, 0.7, 40),
                "prompt_token_count": _dist(32, 32, 40),
                "output_token_count": _dist(16, 16, 40),
                "time_to_first_token_ms": _dist(ttft, ttft * 1.5, 40),
                "inter_token_latency_ms": _dist(25.0, 30.0, 40),
                "time_per_output_token_ms": _dist(31.0, 40.0, 40),
            },
            "requests": {"successful": [], "errored": [], "incomplete": []},
        })
    path.write_text(json.dumps({
        "metadata": {"version": 2, "guidellm_version": "0.4.0", "python_version": "3.12",
                     "platform": "Linux"},
        "config": {"target": "http://gpu1:8000", "model": "Qwen/Qwen3-8B"},
        "benchmarks": benches}))


def _m(unit: str, avg: float, p90: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"unit": unit, "avg": avg}
    if p90 is not None:
        out |= {"p50": avg, "p90": p90, "p99": p90 * 1.2, "p10": avg * 0.8, "min": avg / 2,
                "max": p90 * 1.3, "std": 1.0}
    return out


def aiperf_file(path: Path) -> None:
    path.write_text(json.dumps({
        "request_throughput": _m("requests/sec", 4.0),
        "request_latency": _m("ms", 500.0, 650.0),
        "request_count": _m("requests", 40),
        "time_to_first_token": _m("ms", 90.0, 130.0),
        "inter_token_latency": _m("ms", 26.0, 29.0),
        "output_token_throughput": _m("tokens/sec", 64.0),
        "output_token_throughput_per_user": _m("tokens/sec/user", 38.0, 40.0),
        "benchmark_duration": _m("sec", 10.0),
        "total_osl": _m("tokens", 640), "total_isl": _m("tokens", 1280),
        "input_config": {"endpoint": {"model_names": ["Qwen/Qwen3-8B"],
                                      "url": "http://gpu1:8000", "streaming": True},
                         "loadgen": {"concurrency": 2}},
        "was_cancelled": False, "error_summary": [],
        "start_time": "2026-11-30T10:00:00", "end_time": "2026-11-30T10:00:10",
    }))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with one variantctl run of variant ``cpu`` at concurrency 2 and 4."""
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store_run(RunStore(p / "runs"), record("aaaaaaaaaa-1", "cpu"),
              [result([measured_level(2, 1), measured_level(4, 2)])])
    return p


def _import(run_cli: Run, project: Path, path: Path, tool: str, *extra: str
            ) -> dict[str, Any]:
    res = run_cli(["runs", "import", str(path), "--from", tool, "--json", *extra],
                  project=project)
    assert res.code == 0, res.output
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_vllm_06_result_keeps_its_figures_and_requests(run_cli: Run, project: Path) -> None:
    path = project / "vllm-06.json"
    vllm_06(path, concurrency=2)
    doc = _import(run_cli, project, path, "vllm", "--tool-version", "0.6.3")
    assert doc["imported"] == {"tool": "vllm", "version": "0.6.3", "file": "vllm-06.json"}
    store = RunStore(project / "runs")
    d = store.find(doc["run_id"])
    rec = store.read(d.path)
    assert rec.facts["imported"]["tool"] == "vllm"  # type: ignore[index]
    lv = read_benchmark(store, d.path, doc["bench_file"]).result.levels[0]
    m = lv.metrics
    assert (lv.concurrency, m.completed, m.failed) == (2, 19, 1)  # 0.6: errors counted
    assert (m.ttft_ms.mean, m.ttft_ms.p99, m.output_throughput) == (59.0, 67.8, 152.0)
    # p90 was not in the file: computed from its requests, as vLLM computes it
    assert m.ttft_ms.p90 == pytest.approx(1000 * (0.05 + 0.001 * 16.2))
    assert len(lv.requests) == 20 and not lv.requests[19].ok
    assert lv.requests[19].error_detail == "boom"
    assert m.output_tps.count == 19  # vLLM does not report it: from the requests
    out = project / "req.csv"
    assert run_cli(["runs", "export", doc["run_id"], "--per", "request", "--format", "csv",
                    "--out", str(out)], project=project).code == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 20 and rows[0]["send_s"] == rows[0]["end_s"] == ""  # 0.6: unknown
    assert float(rows[0]["ttft_ms"]) == pytest.approx(50.0) and rows[19]["ok"] == "false"


def test_imports_compare_with_a_variantctl_run_and_export(run_cli: Run, project: Path) -> None:
    v = project / "v.json"
    vllm_06(v, concurrency=2)
    g, a = project / "benchmarks.json", project / "profile_export_aiperf.json"
    guidellm_file(g)
    aiperf_file(a)
    ids = [_import(run_cli, project, v, "vllm", "--variant", "cpu")["run_id"],
           _import(run_cli, project, g, "guidellm")["run_id"],
           _import(run_cli, project, a, "aiperf")["run_id"]]
    for rid in ids:
        res = run_cli(["compare", "aaaaaaaaaa-1", rid, "--json"], project=project)
        assert res.code == 0, res.output
        rows = json.loads(res.stdout)["compare"]["rows"]
        assert any(r["level"] == 2 and r["metric"] == "ttft_mean" for r in rows), rid
    res = run_cli(["compare", ids[1], ids[2], "--json"], project=project)
    assert res.code == 0, res.output
    ttft = next(r for r in json.loads(res.stdout)["compare"]["rows"]
                if r["level"] == 2 and r["metric"] == "ttft_mean")
    assert (ttft["a"], ttft["b"]) == (80.0, 90.0)  # GuideLLM's and AIPerf's own means
    out = project / "all.jsonl"
    res = run_cli(["runs", "export", *ids, "--format", "jsonl", "--out", str(out)],
                  project=project)
    assert res.code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["imported_from"] for r in rows} == {"vllm unknown", "guidellm 0.4.0",
                                                  "aiperf unknown"}
    g4 = next(r for r in rows if r["imported_from"].startswith("guidellm")
              and r["concurrency"] == 4)
    assert g4["ttft_mean"] == 120.0 and g4["tpot_p90"] == 30.0  # GuideLLM's ITL is TPOT
    assert g4["output_throughput"] == pytest.approx(40 * 16 / 10.0)
    res = run_cli(["report", *ids, "--out", str(project / "rep")], project=project)
    assert res.code == 0, res.output
    res = run_cli(["runs", "trend", "cpu", "--json"], project=project)
    assert res.code == 0, res.output


def test_append_result_lines_are_levels(run_cli: Run, project: Path,
                                        tmp_path: Path) -> None:
    lines = []
    for c in (1, 2):
        vllm_06(tmp_path / "one.json", concurrency=c)
        lines.append((tmp_path / "one.json").read_text())
    path = project / "appended.json"
    path.write_text("\n".join(lines) + "\n")
    doc = _import(run_cli, project, path, "vllm")
    assert doc["levels"] == 2


@pytest.mark.parametrize(("tool", "writer", "field"), [
    ("vllm", guidellm_file, "duration"),
    ("guidellm", aiperf_file, "benchmarks"),
    ("aiperf", guidellm_file, "request_latency"),
])
def test_a_file_of_the_wrong_kind_is_one_error_and_nothing_stored(
        run_cli: Run, project: Path, tool: str, writer: Callable[[Path], object],
        field: str) -> None:
    path = project / "other.json"
    writer(path)
    before = sorted(p.name for p in (project / "runs").iterdir())
    res = run_cli(["runs", "import", str(path), "--from", tool], project=project)
    assert res.code == 2, res.output
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"error: {path}") and f"'{field}'" in first, first
    assert "Traceback" not in res.output
    assert sorted(p.name for p in (project / "runs").iterdir()) == before


def test_a_damaged_file_names_the_field(run_cli: Run, project: Path) -> None:
    path = project / "bad.json"
    doc = vllm_06(path)
    doc["itls"][3] = "fast"
    path.write_text(json.dumps(doc))
    res = run_cli(["runs", "import", str(path), "--from", "vllm"], project=project)
    assert res.code == 2 and "field 'itls[3]'" in res.stderr, res.output
    path.write_text('{"duration": ')
    res = run_cli(["runs", "import", str(path), "--from", "vllm"], project=project)
    assert res.code == 2 and "not valid JSON" in res.stderr, res.output
    assert len(list((project / "runs").iterdir())) == 1


def test_a_figure_the_file_lacks_is_absent_not_a_number(run_cli: Run, project: Path) -> None:
    """A later vLLM's default file (no --save-detailed: no per-request lists, p99 only):
    TTFT P90 is nowhere — compare leaves it out and its JSON stays strict JSON."""
    path = project / "agg.json"
    doc = vllm_06(path, concurrency=2)
    for key in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
        del doc[key]
    doc["failed"] = 1
    path.write_text(json.dumps(doc))
    rid = _import(run_cli, project, path, "vllm")["run_id"]
    res = run_cli(["compare", "aaaaaaaaaa-1", rid, "--json"], project=project)
    assert res.code == 0, res.output

    def strict(c: str) -> None:
        raise AssertionError(f"{c} in compare --json")

    rows = json.loads(res.stdout, parse_constant=strict)["compare"]["rows"]
    metrics = {r["metric"] for r in rows if r["level"] == 2}
    assert "ttft_mean" in metrics and "ttft_p99" in metrics and "ttft_p90" not in metrics
    out = project / "agg.csv"
    assert run_cli(["runs", "export", rid, "--format", "csv", "--out", str(out)],
                   project=project).code == 0
    (row,) = list(csv.DictReader(out.open(encoding="utf-8")))
    assert row["ttft_p90"] == "" and float(row["ttft_mean"]) == 59.0
    assert row["ttft_mean_method"] == "none"
