"""``variantctl bench`` on the real vLLM CPU server with the tiny random-weight model.

Two real servers — the repository's ``cpu-eager`` and ``cpu-base`` variants, on vLLM's
single-process engine (tests/support/realvllm.py) — on host ``cpu`` (this machine):
``cpu-eager`` is the session's shared server (tests/support/eagerserver.py, also
benchmarked by the report and workload tests), ``cpu-base`` this module's own, launched
while the shared one may still be loading. Host ``cpu-ssh`` is the same machine reached through the
real sshd with the same work directory, so the same server records are read over SFTP
and the server is reached through the SSH forward: the remote path, for the price of no
third server start. ``cpu-ssh`` samples GPUs with the labelled stand-in nvidia-smi;
``cpu`` has no monitor (GPU "not available").
"""

from __future__ import annotations

import json
import math
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.eagerserver import GROUP, SharedServer
from tests.support.sshd import free_port
from variantctl.bench.promscrape import parse_text
from variantctl.runs.store import RunStore

pytestmark = [pytest.mark.vllm, pytest.mark.ssh, pytest.mark.xdist_group(GROUP)]

INPUT_LEN, OUTPUT_LEN = 32, 16


@pytest.fixture(scope="module")
def lab(eager_server: SharedServer) -> Iterator[SharedServer]:
    """The shared project with ``cpu-base`` running beside the shared ``cpu-eager``."""
    lab = eager_server
    port = free_port()
    try:
        # --no-wait: it loads while the shared server may still be loading; `watch`
        # then waits for its verdict
        res = lab.cli("launch", "cpu-base", "--port", str(port), "--no-wait")
        assert res.code == 0, res.output
        lab.ready()
        res = lab.cli("watch", "cpu-base")
        assert res.code == 0, res.output
        yield lab
    finally:
        lab.cli("stop", "cpu-base", "--host", "cpu", "--grace", "5")


def base_port(lab: SharedServer) -> int:
    return int(lab.record("cpu-base")["port"])


def _ladder_checks(doc: dict[str, Any]) -> None:
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2]
    for lv in doc["levels"]:
        m = lv["metrics"]
        assert (m["completed"], m["failed"]) == (8, 0), lv["errors"]
        # usage is the server's own count: with --ignore-eos exactly --output-len each,
        # and random prompts are token-exact
        assert m["total_output_tokens"] == 8 * OUTPUT_LEN
        assert {r["output_tokens"] for r in lv["requests"]} == {OUTPUT_LEN}
        assert {r["prompt_tokens"] for r in lv["requests"]} == {INPUT_LEN}
        assert all(r["usage_seen"] for r in lv["requests"])
        steady = m["steady"]
        assert steady is not None and steady["threshold"] == lv["concurrency"]
        assert steady["duration_s"] > 0 and steady["output_tokens"] > 0
        sm = lv["server_metrics"]
        assert sm["available"], sm
        assert sm["kv_cache_usage"]["max"] is not None
        assert sm["prefix_cache_queries"] >= 8 * INPUT_LEN  # every prompt token was looked up
        assert sm["preemptions"] == 0


LADDER = ("--concurrency", "1,2", "--requests", "8", "--prompt", "random", "--input-len",
          str(INPUT_LEN), "--output-len", str(OUTPUT_LEN), "--ignore-eos", "--warmup", "2",
          "--json")


def test_ladder_on_the_real_server_locally(lab: SharedServer) -> None:
    res = lab.cli("bench", "cpu-eager", *LADDER)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    _ladder_checks(doc)
    assert doc["target"]["url"] == lab.url
    assert not doc["levels"][0]["gpu"]["available"]  # this machine has no GPU monitor
    # stored in the run its launch archived (the server's record names it)
    run_dir = Path(lab.record()["run_dir"])
    assert RunStore(lab.project / "runs").read(run_dir).variant_name == "cpu-eager"
    assert Path(doc["stored"]).parent == run_dir
    assert Path(doc["stored"]).name in json.loads((run_dir / "run.json").read_text())[
        "benchmarks"]


def test_ladder_on_the_real_server_over_ssh(lab: SharedServer) -> None:
    res = lab.cli("bench", "cpu-eager", "--host", "cpu-ssh", *LADDER)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    _ladder_checks(doc)
    assert doc["target"]["host"] == "cpu-ssh"
    assert not doc["target"]["url"].endswith(f":{lab.port}")  # the forward
    assert doc["levels"][0]["gpu"]["available"]  # the stand-in, run over SSH


def test_metrics_parser_agrees_with_prometheus_client_on_the_real_page(
        lab: SharedServer, vllm_python: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{base_port(lab)}/metrics"
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    (tmp_path / "page.txt").write_text(text)
    script = ("import json, sys\nfrom prometheus_client.parser import "
              "text_string_to_metric_families as f\n"
              "out = [[s.name, s.labels, s.value] for fam in f(open(sys.argv[1]).read()) "
              "for s in fam.samples]\nprint(json.dumps(out))\n")
    theirs = json.loads(subprocess.run([str(vllm_python), "-c", script,
                                        str(tmp_path / "page.txt")], capture_output=True,
                                       text=True, check=True).stdout)
    ours = parse_text(text)
    assert sum(len(v) for v in ours.values()) == len(theirs)
    for name, labels, value in theirs:
        got = [v for lbl, v in ours[name] if dict(lbl) == labels]
        assert len(got) == 1, (name, labels)
        assert got[0] == value or (math.isnan(got[0]) and math.isnan(value))
    for series in ("vllm:num_requests_running", "vllm:kv_cache_usage_perc",
                   "vllm:prefix_cache_queries_total", "vllm:num_preemptions_total"):
        assert series in ours


def test_cpu_eager_and_cpu_base_in_one_table(lab: SharedServer) -> None:
    res = lab.cli("bench", "cpu-eager", "cpu-base", "--requests", "4", "--output-len", "8",
                  "--ignore-eos", "--warmup", "off", "--concurrency", "1,2")
    assert res.code == 0, res.output
    decode = res.stdout.split("latency")[0]
    rows = [line.split()[0] for line in decode.splitlines()
            if line.startswith("cpu-") and "│" in line]
    assert rows == ["cpu-eager", "cpu-eager", "cpu-base", "cpu-base"]
    assert decode.count("4/4") == 4 and decode.count("100%") == 4
