"""``runs import`` of result files the real GuideLLM 0.8.1 and AIPerf 0.13.0 wrote
(tests/fixtures/interop/, README.md there says how): every figure stored is the one the
file holds, level by level, and the imported run compares with a variantctl run.

The files are real tool output, kept as they were written; the damaged variants below
are those files with one field broken, so the errors are checked on the real shapes."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.bench.model import LevelResult
from variantctl.bench.stored import read_benchmark
from variantctl.runs.store import RunStore

Run = Callable[..., CliResult]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "interop"
GUIDELLM = FIXTURES / "guidellm-0.8.1" / "concurrent-1-2" / "benchmarks.json"
GUIDELLM_RATE = FIXTURES / "guidellm-0.8.1" / "constant-rate-5" / "benchmarks.json"
AIPERF = {c: FIXTURES / "aiperf-0.13.0" / f"concurrency-{c}" / "profile_export_aiperf.json"
          for c in (1, 2)}
AIPERF_RATE = FIXTURES / "aiperf-0.13.0" / "request-rate-5" / "profile_export_aiperf.json"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with one variantctl run of variant ``cpu`` at concurrency 1 and 2."""
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store_run(RunStore(p / "runs"), record("aaaaaaaaaa-1", "cpu"),
              [result([measured_level(1, 1), measured_level(2, 2)])])
    return p


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _import(run_cli: Run, project: Path, path: Path, tool: str
            ) -> tuple[dict[str, Any], list[LevelResult]]:
    res = run_cli(["runs", "import", str(path), "--from", tool, "--json"], project=project)
    assert res.code == 0, res.output
    doc: dict[str, Any] = json.loads(res.stdout)
    store = RunStore(project / "runs")
    bench = read_benchmark(store, store.find(doc["run_id"]).path, doc["bench_file"]).result
    assert bench.target.model == "tiny" and bench.target.url == "http://127.0.0.1:8123"
    return doc, list(bench.levels)


def _compare_ttft(run_cli: Run, project: Path, run_id: str) -> dict[int, float]:
    """``compare`` of the variantctl run against ``run_id``: TTFT mean (b side) by level."""
    res = run_cli(["compare", "aaaaaaaaaa-1", run_id, "--json"], project=project)
    assert res.code == 0, res.output
    return {r["level"]: r["b"] for r in json.loads(res.stdout)["compare"]["rows"]
            if r["metric"] == "ttft_mean"}


def _successful(metrics: dict[str, Any], key: str) -> dict[str, Any]:
    """GuideLLM's summary of ``key`` over the successful requests."""
    d: dict[str, Any] = metrics[key]["successful"]
    return d


def test_guidellm_081_file_keeps_its_figures_level_by_level(run_cli: Run,
                                                             project: Path) -> None:
    saved = _load(GUIDELLM)
    doc, levels = _import(run_cli, project, GUIDELLM, "guidellm")
    assert doc["imported"] == {"tool": "guidellm", "version": "0.8.1",
                               "file": "benchmarks.json"}
    assert [lv.concurrency for lv in levels] == [1, 2]
    for lv, b in zip(levels, saved["benchmarks"], strict=True):
        assert b["config"]["strategy"] == b["config"]["strategy"] | {
            "type_": "concurrent", "streams": lv.concurrency}
        m, gm = lv.metrics, b["metrics"]
        assert (m.completed, m.failed) == (gm["request_totals"]["successful"],
                                           gm["request_totals"]["errored"]) == (6, 0)
        ttft, tpot, e2el = (_successful(gm, "time_to_first_token_ms"),
                            _successful(gm, "inter_token_latency_ms"),
                            _successful(gm, "request_latency"))
        assert (m.ttft_ms.mean, m.ttft_ms.median, m.ttft_ms.p90, m.ttft_ms.p99) == (
            ttft["mean"], ttft["median"], ttft["percentiles"]["p90"],
            ttft["percentiles"]["p99"])
        assert (m.tpot_ms.mean, m.tpot_ms.p99) == (tpot["mean"], tpot["percentiles"]["p99"])
        # the file counts TPOT's sample in tokens − 1; the figure's sample is the requests
        assert tpot["count"] == 6 * 7 and m.tpot_ms.count == 6
        assert m.e2el_ms.mean == pytest.approx(1000 * e2el["mean"])
        sm = b["scheduler_metrics"]
        duration = sm["measure_end_time"] - sm["measure_start_time"]
        assert m.duration_s == duration
        assert m.total_output_tokens == _successful(gm, "output_token_count")["total_sum"] == 48
        assert m.output_throughput == pytest.approx(48 / duration)
        assert m.request_throughput == pytest.approx(6 / duration)
        assert m.itl_ms.count == 0  # GuideLLM has no per-chunk gaps: absent
        assert len(lv.requests) == len(b["requests"]["successful"]) == 6
        first = b["requests"]["successful"][0]
        assert lv.requests[0].ttft_s == pytest.approx(first["time_to_first_token_ms"] / 1000)
        assert lv.requests[0].latency_s == first["request_latency"]
        assert lv.requests[0].output_tokens == first["output_tokens"] == 8
    ttft_by_level = _compare_ttft(run_cli, project, doc["run_id"])
    assert ttft_by_level == {
        lv.concurrency: pytest.approx(b["metrics"]["time_to_first_token_ms"]["successful"]
                                      ["mean"])
        for lv, b in zip(levels, saved["benchmarks"], strict=True)}


@pytest.mark.parametrize("conc", [1, 2])
def test_aiperf_0130_file_keeps_its_figures(run_cli: Run, project: Path, conc: int) -> None:
    path = AIPERF[conc]
    saved = _load(path)
    doc, levels = _import(run_cli, project, path, "aiperf")
    assert doc["imported"] == {"tool": "aiperf", "version": "0.13.0",
                               "file": "profile_export_aiperf.json"}
    (lv,) = levels
    m = lv.metrics
    # 0.13 keeps the load in input_config.phases, not loadgen
    assert saved["input_config"]["phases"][0]["concurrency"] == conc == lv.concurrency
    assert m.completed == saved["request_count"]["avg"] == 6 and m.failed == 0
    ttft, tpot, icl = (saved["time_to_first_token"], saved["inter_token_latency"],
                       saved["inter_chunk_latency"])
    assert ttft["unit"] == tpot["unit"] == icl["unit"] == "ms"
    assert (m.ttft_ms.mean, m.ttft_ms.median, m.ttft_ms.p90, m.ttft_ms.p99) == (
        ttft["avg"], ttft["p50"], ttft["p90"], ttft["p99"])
    assert (m.tpot_ms.mean, m.tpot_ms.p90) == (tpot["avg"], tpot["p90"])
    assert (m.itl_ms.mean, m.itl_ms.p99) == (icl["avg"], icl["p99"])
    assert m.e2el_ms.mean == saved["request_latency"]["avg"]
    assert m.output_throughput == saved["output_token_throughput"]["avg"]
    assert m.request_throughput == saved["request_throughput"]["avg"]
    assert m.duration_s == pytest.approx(saved["benchmark_duration"]["avg"])
    assert m.total_output_tokens == saved["total_osl"]["avg"] == 48
    assert _compare_ttft(run_cli, project, doc["run_id"]) == {conc: ttft["avg"]}


def test_rate_levels_of_real_files(run_cli: Run, project: Path) -> None:
    """A constant rate (GuideLLM) and a Poisson rate (AIPerf) of 5 requests/s, no cap:
    the level is a rate level at the concurrency the requests really had (GuideLLM's
    strategy says ``max_concurrency`` 10240, its own bound, not the load)."""
    saved = _load(GUIDELLM_RATE)
    (b,) = saved["benchmarks"]
    assert b["config"]["strategy"]["type_"] == "constant"
    assert b["config"]["strategy"]["max_concurrency"] == 10240
    assert saved["config"]["spec"]["profile"]["max_concurrency"] is None
    _, (lv,) = _import(run_cli, project, GUIDELLM_RATE, "guidellm")
    mean_conc = b["metrics"]["request_concurrency"]["successful"]["mean"]
    assert lv.concurrency == max(1, round(mean_conc)) == 1
    assert (lv.profile.kind, lv.profile.rate) == ("rate", 5.0)
    assert lv.metrics.ttft_ms.mean == (
        b["metrics"]["time_to_first_token_ms"]["successful"]["mean"])
    saved = _load(AIPERF_RATE)
    (phase,) = saved["input_config"]["phases"]
    assert phase["type"] == "poisson" and "concurrency" not in phase
    _, (lv,) = _import(run_cli, project, AIPERF_RATE, "aiperf")
    assert lv.concurrency == max(1, round(saved["effective_concurrency"]["avg"])) == 1
    assert (lv.profile.kind, lv.profile.rate) == ("rate", phase["rate"]) == ("rate", 5.0)
    assert lv.metrics.ttft_ms.mean == saved["time_to_first_token"]["avg"]


def test_real_files_compare_with_each_other(run_cli: Run, project: Path) -> None:
    """GuideLLM's and AIPerf's runs of the same server side by side, level 1 and 2 each."""
    g, _ = _import(run_cli, project, GUIDELLM, "guidellm")
    a, _ = _import(run_cli, project, AIPERF[2], "aiperf")
    res = run_cli(["compare", g["run_id"], a["run_id"], "--json"], project=project)
    assert res.code == 0, res.output
    row = next(r for r in json.loads(res.stdout)["compare"]["rows"]
               if r["level"] == 2 and r["metric"] == "ttft_mean")
    assert (row["a"], row["b"]) == (
        pytest.approx(_load(GUIDELLM)["benchmarks"][1]["metrics"]["time_to_first_token_ms"]
                      ["successful"]["mean"]),
        _load(AIPERF[2])["time_to_first_token"]["avg"])


def _damage(doc: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    """``doc`` with the field at dotted ``path`` (list items by index) set to ``value``."""
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


@pytest.mark.parametrize(("tool", "source", "where", "value", "field"), [
    ("guidellm", GUIDELLM, "benchmarks.1.metrics.time_to_first_token_ms.successful.mean",
     "fast", "benchmarks[1].metrics.time_to_first_token_ms.successful.mean"),
    ("guidellm", GUIDELLM, "benchmarks.0.config.strategy.streams", "two",
     "benchmarks[0].config.strategy.streams"),
    ("guidellm", GUIDELLM, "benchmarks.0.requests.successful.2.request_start_time", "now",
     "benchmarks[0].requests.successful[2].request_start_time"),
    ("aiperf", AIPERF[2], "input_config.phases.0.concurrency", "two",
     "input_config.phases[0].concurrency"),
    ("aiperf", AIPERF[2], "input_config.phases.0.kind", "warmup", "input_config.phases"),
    ("aiperf", AIPERF[1], "input_config.models.items", "tiny", "input_config.models.items"),
    ("aiperf", AIPERF[1], "time_to_first_token.unit", "fortnights",
     "time_to_first_token.unit"),
    ("aiperf", AIPERF_RATE, "input_config.phases.0.rate", "fast",
     "input_config.phases[0].rate"),
])
def test_a_damaged_real_file_is_one_error_naming_the_field(
        run_cli: Run, project: Path, tool: str, source: Path, where: str, value: object,
        field: str) -> None:
    path = project / "damaged.json"
    path.write_text(json.dumps(_damage(_load(source), where, value)))
    before = sorted(p.name for p in (project / "runs").iterdir())
    res = run_cli(["runs", "import", str(path), "--from", tool], project=project)
    assert res.code == 2, res.output
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"error: {path}") and f"'{field}'" in first, first
    assert "Traceback" not in res.output
    assert sorted(p.name for p in (project / "runs").iterdir()) == before


def test_an_aiperf_file_of_two_profiling_phases_is_refused(run_cli: Run,
                                                            project: Path) -> None:
    """One file is one level: two profiling phases' aggregate cannot be split."""
    doc = _load(AIPERF[1])
    doc["input_config"]["phases"].append(doc["input_config"]["phases"][0] | {
        "name": "profiling_2", "concurrency": 4})
    path = project / "two-phases.json"
    path.write_text(json.dumps(doc))
    res = run_cli(["runs", "import", str(path), "--from", "aiperf"], project=project)
    assert res.code == 2 and "'input_config.phases' holds 2 profiling phases" in res.stderr, (
        res.output)
