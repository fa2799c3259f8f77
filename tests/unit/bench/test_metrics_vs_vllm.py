"""Our metrics and export against vLLM's own ``calculate_metrics`` on the same requests.

Random request results (seeded) go through ``variantctl.bench.metrics.compute`` and,
in the vLLM CPU venv, through ``vllm.benchmarks.serve.calculate_metrics`` as
``RequestFuncOutput``s; every field vLLM reports must agree, and the ``--export-vllm``
dict must carry them under vLLM's names.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from variantctl.bench.export import vllm_result
from variantctl.bench.metrics import compute
from variantctl.bench.model import LevelResult, RequestResult
from variantctl.benchparams import BenchParams

pytestmark = pytest.mark.vllm

VLLM_SIDE = r"""
import json, sys
from vllm.benchmarks.lib.endpoint_request_func import RequestFuncOutput
from vllm.benchmarks.serve import calculate_metrics
answers = {}
for path in sys.argv[1:]:
    data = json.load(open(path))
    outs = []
    for r in data["requests"]:
        o = RequestFuncOutput(success=r["ok"], latency=r["latency"], output_tokens=r["out"],
                              ttft=r["ttft"], itl=r["itl"], prompt_len=r["prompt"],
                              start_time=1000.0 + r["start"])
        outs.append(o)
    m, _ = calculate_metrics([], outs, data["dur"], None, [10, 50, 90, 99], data["goodput"])
    d = {k: v for k, v in vars(m).items() if not k.startswith("percentiles")}
    for name in ("ttft", "tpot", "itl", "e2el"):
        for p, v in getattr(m, f"percentiles_{name}_ms"):
            d[f"p{int(p)}_{name}_ms"] = float(v)
    answers[path] = {k: float(v) for k, v in d.items()}
print(json.dumps(answers))
"""
SEEDS = (1, 2)
GOODPUT = {"ttft": 400.0, "tpot": 35.0}


def sample_requests(seed: int, n: int) -> list[RequestResult]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        start = rng.uniform(0, 5)
        if rng.random() < 0.15:
            out.append(RequestResult(index=i, ok=False, start_s=start, latency_s=0.2,
                                     error="http 500"))
            continue
        tokens = rng.choice([1, 2, rng.randint(3, 60)])
        ttft = rng.uniform(0.01, 0.8)
        offs = [ttft]
        for _ in range(tokens - 1):
            offs.append(offs[-1] + rng.expovariate(1 / 0.03))
        out.append(RequestResult(index=i, ok=True, start_s=start, ttft_s=ttft,
                                 latency_s=offs[-1], chunk_offsets_s=tuple(offs),
                                 prompt_tokens=rng.randint(5, 100), output_tokens=tokens,
                                 usage_seen=True))
    return out


def _duration(reqs: list[RequestResult]) -> float:
    return max(r.end_s for r in reqs) + 0.01


@pytest.fixture(scope="module")
def vllms_answers(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> dict[int, dict[str, float]]:
    """vLLM's metrics of every seed's requests, from one import of vLLM (seconds of a
    core each) in the vLLM venv."""
    d = tmp_path_factory.mktemp("metrics-vs-vllm")
    paths = {}
    for seed in SEEDS:
        reqs = sample_requests(seed, 80)
        payload = {"dur": _duration(reqs), "goodput": GOODPUT, "requests": [
            {"ok": r.ok, "latency": r.latency_s if r.ok else 0.0, "out": r.output_tokens,
             "ttft": r.ttft_s, "itl": list(r.itl_s), "prompt": r.prompt_tokens,
             "start": r.start_s} for r in reqs]}
        paths[seed] = d / f"in-{seed}.json"
        paths[seed].write_text(json.dumps(payload))
    proc = subprocess.run([str(vllm_python), "-c", VLLM_SIDE, *map(str, paths.values())],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads(proc.stdout.strip().splitlines()[-1])
    return {seed: answers[str(path)] for seed, path in paths.items()}


@pytest.mark.parametrize("seed", SEEDS)
def test_every_vllm_field_agrees(seed: int, vllms_answers: dict[int, dict[str, float]]) -> None:
    reqs = sample_requests(seed, 80)
    dur = _duration(reqs)
    goodput = GOODPUT
    theirs = vllms_answers[seed]
    m = compute(reqs, concurrency=8, duration_s=dur, goodput=goodput)
    ours = vllm_result(LevelResult(concurrency=8, metrics=m, requests=tuple(reqs), errors={}),
                       BenchParams(goodput=goodput), model="m")
    renames = {"total_input": "total_input_tokens", "total_output": "total_output_tokens"}
    checked = 0
    for key, value in theirs.items():
        if key == "rtfx":
            continue
        mine = ours[renames.get(key, key)]
        assert mine == pytest.approx(value, rel=1e-9, abs=1e-9), key
        checked += 1
    assert checked >= 30
