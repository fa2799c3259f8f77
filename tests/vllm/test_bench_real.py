"""``variantctl bench`` on the real vLLM CPU server with the tiny random-weight model.

Two real servers — the repository's ``cpu-eager`` and ``cpu-base`` variants, on vLLM's
single-process engine (tests/support/realvllm.py) — launched at once for the module on
host ``cpu`` (this machine). Host ``cpu-ssh`` is the same
machine reached through the real sshd with the same work directory, so the same
server records are read over SFTP and the server is reached through the SSH forward:
the remote path, for the price of no third server start. ``cpu-ssh`` samples GPUs
with the labelled stand-in nvidia-smi; ``cpu`` has no monitor (GPU "not available").
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

from tests.conftest import REPO, CliResult, make_env
from tests.support.bench_project import STANDIN_SMI
from tests.support.realvllm import HOST_ENV, StartBudget, copy_cpu_variants
from tests.support.sshd import SshLab, free_port
from variantctl.bench.promscrape import parse_text
from variantctl.cli import run
from variantctl.runs.store import RunStore

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]

INPUT_LEN, OUTPUT_LEN = 32, 16


class Lab:
    def __init__(self, project: Path, cache: Path, ports: dict[str, int]):
        self.project, self.cache, self.ports = project, cache, ports

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.project, self.cache)
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("benchreal")
    project = base / "project"
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    copy_cpu_variants(REPO, project, start_budget)
    common = (f"  python: {vllm_python}\n  workdir: {base / 'work'}\n"
              f"  env: {{{HOST_ENV}}}\n  vllm_version: 0.32.0\n")
    monitor = json.dumps(f"env STANDIN_SMI_STATE={base / 'smi'} {STANDIN_SMI}")
    (project / "variants" / "hosts.yaml").write_text(
        "cpu:\n" + common
        + f"cpu-ssh:\n  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n" + common
        + f"  gpu_monitor: {monitor}\n"
    )
    mp = pytest.MonkeyPatch()
    mp.setenv("VARIANTCTL_TINY_MODEL", str(tiny_model))
    lab = Lab(project, base / "cache", {})
    try:
        for name in ("cpu-eager", "cpu-base"):
            # --no-wait: both load at once; `watch` then waits for each verdict
            port = free_port()
            res = lab.cli("launch", name, "--port", str(port), "--no-wait")
            assert res.code == 0, res.output
            lab.ports[name] = port
        for name in ("cpu-eager", "cpu-base"):
            res = lab.cli("watch", name)
            assert res.code == 0, res.output
        yield lab
    finally:
        lab.cli("stop", "--all", "--host", "cpu", "--grace", "5")
        mp.undo()


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


def test_ladder_on_the_real_server_locally(lab: Lab) -> None:
    res = lab.cli("bench", "cpu-eager", *LADDER)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    _ladder_checks(doc)
    assert doc["target"]["url"] == f"http://127.0.0.1:{lab.ports['cpu-eager']}"
    assert not doc["levels"][0]["gpu"]["available"]  # this machine has no GPU monitor
    (run_dir,) = [d.path for d in RunStore(lab.project / "runs").dirs()
                  if d.variant == "cpu-eager"]
    assert Path(doc["stored"]).parent == run_dir
    assert Path(doc["stored"]).name in json.loads((run_dir / "run.json").read_text())[
        "benchmarks"]


def test_ladder_on_the_real_server_over_ssh(lab: Lab) -> None:
    res = lab.cli("bench", "cpu-eager", "--host", "cpu-ssh", *LADDER)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    _ladder_checks(doc)
    assert doc["target"]["host"] == "cpu-ssh"
    assert not doc["target"]["url"].endswith(f":{lab.ports['cpu-eager']}")  # the forward
    assert doc["levels"][0]["gpu"]["available"]  # the stand-in, run over SSH


def test_metrics_parser_agrees_with_prometheus_client_on_the_real_page(
        lab: Lab, vllm_python: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{lab.ports['cpu-base']}/metrics"
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


def test_cpu_eager_and_cpu_base_in_one_table(lab: Lab) -> None:
    res = lab.cli("bench", "cpu-eager", "cpu-base", "--requests", "4", "--output-len", "8",
                  "--ignore-eos", "--warmup", "off", "--concurrency", "1,2")
    assert res.code == 0, res.output
    decode = res.stdout.split("latency")[0]
    rows = [line.split()[0] for line in decode.splitlines()
            if line.startswith("cpu-") and "│" in line]
    assert rows == ["cpu-eager", "cpu-eager", "cpu-base", "cpu-base"]
    assert decode.count("4/4") == 4 and decode.count("100%") == 4
