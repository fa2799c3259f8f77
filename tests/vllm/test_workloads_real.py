"""Workloads (issue 22) on the real vLLM CPU server with the tiny random-weight model.

One server — the session's shared ``cpu-eager`` server (tests/support/eagerserver.py:
the repository's variant on vLLM's single-process engine), reached by its URL — serves
every test here: a ShareGPT-format file measured by variantctl and by
``vllm bench serve`` yields the same per-request lengths, and shared-prefix load shows
a prefix-cache hit rate well above random prompts'.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.eagerserver import GROUP, SharedServer

pytestmark = [pytest.mark.vllm, pytest.mark.ssh, pytest.mark.xdist_group(GROUP)]

#: natural text, so the tokenizer's counts are not just one token a word
_TEXT = ("The lighthouse keeper climbed the spiral stairs every evening, counting the "
         "steps, listening to the sea below and the gulls above, and wondering whether "
         "anyone out on the water ever thought about who kept the light burning.")


#: ``vllm bench serve`` itself (its module, as benchmarks/bench_vs_vllm.py runs it: the CPU
#: venv's ``vllm`` script needs package metadata a source install may lack); the last
#: stdout line is the per-request lengths it measured
_VLLM_BENCH_SERVE = (
    "import argparse, json, sys\n"
    "from vllm.benchmarks import serve\n"
    "p = argparse.ArgumentParser()\n"
    "serve.add_cli_args(p)\n"
    "r = serve.main(p.parse_args(sys.argv[1:]))\n"
    "print(json.dumps({'input_lens': r['input_lens'], 'output_lens': r['output_lens']}))\n")


class Lab:
    def __init__(self, server: SharedServer, model: Path):
        self.cli, self.url, self.model = server.cli, server.url, model


@pytest.fixture(scope="module")
def lab(eager_server: SharedServer, tiny_model: Path) -> Lab:
    eager_server.ready()
    return Lab(eager_server, tiny_model)


def sharegpt_file(path: Path) -> int:
    """Ten two-turn conversations of different lengths (and one vLLM's filter drops)."""
    words = _TEXT.split()
    entries: list[dict[str, Any]] = []
    for i in range(10):
        prompt = " ".join(words[: 6 + 3 * i])
        reply = " ".join(words[i: i + 4 + 2 * i])
        entries.append({"id": f"c{i}", "conversations": [
            {"from": "human", "value": prompt}, {"from": "gpt", "value": reply},
            {"from": "human", "value": "and then?"}]})
    entries.append({"id": "short", "conversations": [{"from": "human", "value": "hi"},
                                                     {"from": "gpt", "value": "yo"}]})
    path.write_text(json.dumps(entries))
    return 10


def test_sharegpt_lengths_match_vllm_bench_serve(lab: Lab, vllm_python: Path,
                                                 tmp_path: Path) -> None:
    data = tmp_path / "sharegpt.json"
    n = sharegpt_file(data)
    res = lab.cli("bench", "--url", lab.url, "--endpoint", "completions", "--prompt",
                  f"sharegpt:{data}", "--requests", str(n), "--ignore-eos",
                  "--concurrency", "4", "--warmup", "off", "--json")
    assert res.code == 0, res.output
    ours = [(r["prompt_tokens"], r["output_tokens"])
            for r in json.loads(res.stdout)["levels"][0]["requests"]]
    proc = subprocess.run(
        [str(vllm_python), "-c", _VLLM_BENCH_SERVE, "--backend", "vllm", "--base-url", lab.url,
         "--endpoint", "/v1/completions", "--model", str(lab.model), "--tokenizer",
         str(lab.model), "--dataset-name", "sharegpt", "--dataset-path", str(data),
         "--num-prompts", str(n), "--ignore-eos", "--max-concurrency", "4", "--seed", "0",
         "--temperature", "0", "--disable-tqdm", "--save-detailed"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.splitlines()[-1])
    assert list(zip(theirs["input_lens"], theirs["output_lens"], strict=True)) == ours
    # the one the filter drops (2-token reply) is not among them; lengths do vary
    assert len(set(ours)) > 5


def test_shared_prefix_load_hits_the_prefix_cache_far_more_than_random(lab: Lab) -> None:
    """vLLM V1's /metrics prefix-cache queries and hits over the level, beside latency:
    two shared 384-token prefixes make most prompt tokens cache hits (the CPU backend
    caches whole 128-token blocks: 3 of a prompt's), and so do
    conversations whose turns carry their history; random prompts (another seed:
    prompts the server has not seen) almost none."""
    common = ("bench", "--url", lab.url, "--prompt", "random", "--output-len", "4",
              "--ignore-eos", "--requests", "16", "--concurrency", "2", "--warmup", "off",
              "--json")
    rates = {}
    for name, extra in (("random", ("--seed", "11", "--input-len", "32")),
                        ("shared", ("--seed", "12", "--input-len", "32", "--prefix-len",
                                    "384", "--prefixes", "2")),
                        ("turns", ("--seed", "13", "--input-len", "64", "--turns", "4"))):
        res = lab.cli(*common, *extra)
        assert res.code == 0, res.output
        (level,) = json.loads(res.stdout)["levels"]
        sm = level["server_metrics"]
        assert sm["available"], sm
        rates[name] = sm["prefix_cache_hit_rate"]
        assert level["metrics"]["completed"] == 16
    assert rates["shared"] > 0.5, rates
    assert rates["shared"] > rates["random"] + 0.4, rates
    assert rates["turns"] > rates["random"] + 0.3, rates


def test_jsonl_and_trace_lengths_are_the_servers(lab: Lab, tmp_path: Path) -> None:
    """A JSONL dataset's output lengths and a Mooncake trace's input and output lengths
    reach the real server as given: the server's usage counts them exactly."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": _TEXT, "output_len": 5}) + "\n"
                    + json.dumps({"messages": [{"role": "user", "content": "Hello there"}],
                                  "output_len": 9}) + "\n")
    res = lab.cli("bench", "--url", lab.url, "--prompt", f"jsonl:{data}", "--requests", "2",
                  "--ignore-eos", "--warmup", "off", "--json")
    assert res.code == 0, res.output
    reqs = json.loads(res.stdout)["levels"][0]["requests"]
    assert [r["output_tokens"] for r in reqs] == [5, 9]
    trace = tmp_path / "t.jsonl"
    rows = [{"timestamp": 0, "input_length": 300, "output_length": 3, "hash_ids": [1]},
            {"timestamp": 100, "input_length": 200, "output_length": 6, "hash_ids": [1]},
            {"timestamp": 150, "input_length": 40, "output_length": 2}]
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = lab.cli("bench", "--url", lab.url, "--endpoint", "completions", "--prompt",
                  f"trace:{trace}", "--concurrency", "3", "--ignore-eos", "--warmup", "off",
                  "--json")
    assert res.code == 0, res.output
    level = json.loads(res.stdout)["levels"][0]
    assert [(r["prompt_tokens"], r["output_tokens"]) for r in level["requests"]] == [
        (300, 3), (200, 6), (40, 2)]
    assert level["profile"] == {"kind": "trace", "rate": "inf", "trace_speed": 1.0}
