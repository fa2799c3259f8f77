"""``runs import --from vllm`` of a file the real ``vllm bench serve`` client wrote (the CPU
venv's vLLM 0.32), measuring the labelled FAKE OpenAI server (tests/support/
fake_openai_server.py: no vLLM server is started), compared against a variantctl run."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.fake_openai_server import spawn
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.bench.stored import read_benchmark
from variantctl.runs.store import RunStore

pytestmark = [pytest.mark.vllm]

#: ``vllm bench serve`` itself, as tests/vllm/test_workloads_real.py runs it (the venv's
#: ``vllm`` script needs package metadata a source install may lack)
_VLLM_BENCH_SERVE = (
    "import argparse, sys\n"
    "from vllm.benchmarks import serve\n"
    "p = argparse.ArgumentParser()\n"
    "serve.add_cli_args(p)\n"
    "serve.main(p.parse_args(sys.argv[1:]))\n")


def test_real_vllm_bench_serve_result_imports_and_compares(
        run_cli: Callable[..., CliResult], vllm_python: Path, tiny_model: Path,
        tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "variants").mkdir(parents=True)
    store_run(RunStore(project / "runs"), record("aaaaaaaaaa-1", "cpu"),
              [result([measured_level(2, 1)])])
    with spawn("--ttft-ms", "5", "--itl-ms", "2") as url:
        subprocess.run(
            [str(vllm_python), "-c", _VLLM_BENCH_SERVE, "--backend", "openai-chat",
             "--endpoint", "/v1/chat/completions", "--base-url", url, "--model", "tiny",
             "--tokenizer", str(tiny_model), "--dataset-name", "random",
             "--random-input-len", "16", "--random-output-len", "8", "--num-prompts", "12",
             "--max-concurrency", "2", "--save-result", "--save-detailed",
             "--result-dir", str(tmp_path), "--result-filename", "vllm.json",
             "--percentile-metrics", "ttft,tpot,itl,e2el"],
            check=True, capture_output=True, timeout=300)
    saved = json.loads((tmp_path / "vllm.json").read_text())
    res = run_cli(["runs", "import", str(tmp_path / "vllm.json"), "--from", "vllm",
                   "--tool-version", "0.32.0", "--json"], project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    store = RunStore(project / "runs")
    lv = read_benchmark(store, store.find(doc["run_id"]).path,
                        doc["bench_file"]).result.levels[0]
    assert (lv.concurrency, lv.metrics.completed, len(lv.requests)) == (2, 12, 12)
    assert lv.metrics.ttft_ms.mean == saved["mean_ttft_ms"]
    assert lv.metrics.tpot_ms.p99 == saved["p99_tpot_ms"]
    assert lv.metrics.output_throughput == saved["output_throughput"]
    res = run_cli(["compare", "aaaaaaaaaa-1", doc["run_id"], "--json"], project=project)
    assert res.code == 0, res.output
    row = next(r for r in json.loads(res.stdout)["compare"]["rows"]
               if r["level"] == 2 and r["metric"] == "ttft_mean")
    assert row["b"] == pytest.approx(saved["mean_ttft_ms"])
