"""``variantctl report`` and ``compare`` on runs measured on the real vLLM CPU server.

One server for the whole session (``cpu-eager``, tiny random-weight model), launched
and benchmarked by the real CLI; a second point is the same real measurement
protocol under a second configuration record (``max-num-seqs 1``), built with the
RunStore API and given a real benchmark of the same server — the brief's way to
get two points for the price of one server start. ``cpu-batched-tokens`` is a real
failed start (vLLM refuses it within seconds), so the failures table shows a real
signature and log line. The HTML report is opened in headless Chromium.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult, make_env
from tests.support.realvllm import HOST_ENV, StartBudget, copy_cpu_variants
from tests.support.sshd import free_port
from tests.unit.report.browser import BLUE, ORANGE, screenshot
from variantctl.bench.model import BenchResult
from variantctl.cli import run
from variantctl.runs.store import RunStore

pytestmark = [pytest.mark.vllm]

BENCH = ("--concurrency", "1,2", "--requests", "4", "--prompt", "random", "--input-len", "32",
         "--output-len", "16", "--ignore-eos", "--warmup", "1", "--json")


class Lab:
    def __init__(self, project: Path, cache: Path):
        self.project, self.cache = project, cache
        self.runs: dict[str, str] = {}  # point -> run id

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.project, self.cache)
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("reportreal")
    project = base / "project"
    copy_cpu_variants(REPO, project, start_budget,
                      ("cpu-base", "cpu-eager", "cpu-batched-tokens"))
    # `gpu:` peaks declared for the CPU host only to exercise the roofline section on
    # real numbers (labelled: they are not this machine's figures)
    (project / "variants" / "hosts.yaml").write_text(
        f"cpu:\n  python: {vllm_python}\n  workdir: {base / 'work'}\n"
        f"  env: {{{HOST_ENV}}}\n  vllm_version: 0.32.0\n"
        "  gpu: {name: test-declared, peak_bandwidth_gbs: 50, peak_tflops: 1, count: 1}\n")
    mp = pytest.MonkeyPatch()
    mp.setenv("VARIANTCTL_TINY_MODEL", str(tiny_model))
    lab = Lab(project, base / "cache")
    try:
        res = lab.cli("launch", "cpu-eager", "--port", str(free_port()), "--no-wait")
        assert res.code == 0, res.output
        # --force: the pre-flight rules predict this failure; launch it to record it
        failed = lab.cli("launch", "cpu-batched-tokens", "--port", str(free_port()), "--force")
        assert failed.code == 1, failed.output
        res = lab.cli("watch", "cpu-eager")
        assert res.code == 0, res.output
        res = lab.cli("bench", "cpu-eager", *BENCH)
        assert res.code == 0, res.output
        stored = Path(json.loads(res.stdout)["stored"])
        # the second point: the same server measured again, recorded as `max-num-seqs 1`
        res = lab.cli("bench", "cpu-eager", *BENCH, "--no-store")
        assert res.code == 0, res.output
        second = json.loads(res.stdout)
        store = RunStore(project / "runs")
        first = store.read(stored.parent)
        variant = first.to_json()["variant"]
        variant["args"]["max-num-seqs"] = 1
        variant["name"] = "cpu-eager@seqs1"
        d = store.create(key="5e951aaaaa", variant="cpu-eager@seqs1", when=lab_now())
        store.write(d.path, replace(first, run_id=d.run_id, key=d.key,
                                    variant_name="cpu-eager@seqs1", variant=variant,
                                    benchmarks=()))
        store.attach_benchmark(d.path, BenchResult.from_json(second), lab_now())
        lab.runs = {"eager": first.run_id, "seqs1": d.run_id,
                    "failed": next(r.run_id for _, r in store.records()
                                   if not isinstance(r, Exception)
                                   and r.variant_name == "cpu-batched-tokens")}
        yield lab
    finally:
        lab.cli("stop", "--all", "--host", "cpu", "--grace", "5")
        mp.undo()


def lab_now() -> datetime:
    return datetime.now(timezone.utc)


def test_markdown_report_of_real_runs(lab: Lab, tmp_path: Path) -> None:
    out = tmp_path / "md"
    res = lab.cli("report", lab.runs["eager"], lab.runs["seqs1"], lab.runs["failed"],
                  "--out", str(out))
    assert res.code == 0, res.output
    md = (out / "report.md").read_text()
    for name in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # every level of the real ladder: 4 of 4 requests, a TTFT and a throughput; the point
    # labelled by the setting the two points differ in, each figure with its interval
    rows = re.findall(r"^\| seqs=default \| (\d) \| (\d/\d) \| (\d+) \| ([\d.]+) "
                      r"±[\d.]+ n=4\*! \|", md, re.M)
    assert [(c, ok, pct) for c, ok, pct, _ in rows] == [("1", "4/4", "100"),
                                                        ("2", "4/4", "100")]
    assert all(float(t) > 0 for *_, t in rows)
    assert "| seqs=default | 1 | – | not available (" in md  # a CPU host: no GPU monitor
    assert md.index("## Summary") < md.index("## Runs")
    # the real failed start: its signature and the log line that decided it
    (fail,) = [line for line in md.splitlines()
               if line.startswith("| cpu-batched-tokens | failed (")]
    cells = [c.strip() for c in fail.strip("|").split("|")]
    assert cells[1] == f"failed ({lab.runs['failed']})"
    assert cells[2] != "–" and re.match(r"log:\d+: .*max_num_batched_tokens", cells[3]), cells
    assert "## Roofline" in md and "| seqs=default | 1 | 1 (declared) |" in md


def test_html_report_of_real_runs_in_chromium(lab: Lab, tmp_path: Path) -> None:
    out = tmp_path / "html"
    res = lab.cli("report", lab.runs["eager"], lab.runs["seqs1"], lab.runs["failed"],
                  "--format", "html", "--out", str(out))
    assert res.code == 0, res.output
    shot = screenshot(out / "report.html", tmp_path / "report.png")
    assert shot.console == ()
    assert shot.pixels_near(BLUE) > 800 and shot.pixels_near(ORANGE) > 800


def test_report_of_a_sweep_state_file_over_real_runs(lab: Lab, tmp_path: Path) -> None:
    state = lab.project / "runs" / "sweeps" / "real.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"schema": "variantctl.sweep/1", "sweep": "real", "points": [
        {"index": 1, "name": "cpu-eager@real-01", "status": "measured",
         "run_id": lab.runs["eager"]},
        {"index": 2, "name": "cpu-eager@real-02", "status": "skipped",
         "skip": {"reason": "history", "run_id": lab.runs["failed"],
                  "signature": "batched-tokens-below-model-len", "message": "failed before"}},
    ]}))
    res = lab.cli("report", "real", "--out", str(tmp_path / "s"))
    assert res.code == 0, res.output
    md = (tmp_path / "s" / "report.md").read_text()
    assert "| cpu-eager@real-01 | 1 | 4/4 |" in md
    (skip,) = [line for line in md.splitlines() if line.startswith("| cpu-eager@real-02 |")]
    assert f"skipped: failed before ({lab.runs['failed']})" in skip and "log:" in skip


def test_compare_two_real_points(lab: Lab) -> None:
    res = lab.cli("compare", lab.runs["eager"], lab.runs["seqs1"], "--json")
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)["compare"]
    agg = [m for m in doc["rows"] if m["metric"] == "output_throughput"]
    assert [m["level"] for m in agg] == [1, 2]
    for m in agg:
        assert m["a"] > 0 and m["b"] > 0
        # one benchmark of 4 requests a side: a bootstrap over the requests
        assert m["n_a"] == m["n_b"] == 4
        lo, hi = m["ci95_pct"]
        assert lo <= m["delta_pct"] <= hi
        assert m["significant"] == (lo > 0 or hi < 0)
    assert set(doc["verdict"]) == {"1", "2"}
    assert {"group": "args", "key": "max-num-seqs", "a": None, "b": 1, "a_text": "(unset)",
            "b_text": "1"} in doc["changes"]
    res = lab.cli("compare", lab.runs["eager"], lab.runs["seqs1"])
    assert res.code == 0, res.output
    assert re.search(r"output throughput \(tok/s\)\s+[\d.]+ ±[\d.]+ n=4\*!\s+[\d.]+ ±[\d.]+ "
                     r"n=4\*!\s+[+-][\d.]+%\s+\[[+-][\d.]+, [+-][\d.]+\]", res.stdout), res.stdout


def test_default_report_directory_is_in_the_project(lab: Lab) -> None:
    res = lab.cli("report", lab.runs["eager"], "--json")
    assert res.code == 0, res.output
    path = Path(json.loads(res.stdout)["report"])
    assert path.parent.parent == lab.project / "reports"
    assert path.parent.name.startswith("cpu-eager-") and path.is_file()
