"""``variantctl report`` and ``compare`` on runs measured on the real vLLM CPU server.

The session's shared ``cpu-eager`` server (tests/support/eagerserver.py, tiny
random-weight model; its host ``cpu`` declares ``gpu:`` peaks, labelled, for the
roofline section), benchmarked here by the real CLI. The launch's run also holds what
the other modules sharing the server measured, so this module's first point is that run
as the launch archived it (its record, log and script) holding only the benchmark
measured here, stored by the CLI; a second point is the same real measurement protocol
under a second configuration record (``max-num-seqs 1``), built with the RunStore API
and given a real benchmark of the same server — the brief's way to get two points for
the price of one server start (here: of none). ``cpu-batched-tokens`` is a real failed
start (vLLM refuses it within seconds), so the failures table shows a real signature and
log line. The HTML report is opened in headless Chromium.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.support.eagerserver import GROUP, SharedServer
from tests.support.sshd import free_port
from tests.unit.report.browser import BLUE, ORANGE, screenshot
from variantctl.bench.model import BenchResult
from variantctl.runs.store import RunStore

pytestmark = [pytest.mark.vllm, pytest.mark.ssh, pytest.mark.xdist_group(GROUP)]

BENCH = ("--concurrency", "1,2", "--requests", "4", "--prompt", "random", "--input-len", "32",
         "--output-len", "16", "--ignore-eos", "--warmup", "1", "--json")


class Lab:
    def __init__(self, server: SharedServer, runs: dict[str, str]):
        self.server, self.project, self.cli = server, server.project, server.cli
        self.runs = runs  # point -> run id


def _copy_run(store: RunStore, run_dir: Path, bench_name: str) -> str:
    """A new run of the launch archived in ``run_dir`` (same configuration: same key;
    its record, log and script) holding only its benchmark ``bench_name``."""
    record = store.read(run_dir)
    assert bench_name in record.benchmarks
    d = store.create(key=record.key, variant=record.variant_name, when=lab_now())
    for f in sorted(run_dir.iterdir()):
        if f.is_file() and f.name != "run.json" and not f.name.startswith(("bench-",
                                                                           "profile-")):
            store.write_file(d.path, f.name, f.read_bytes())
    store.write_file(d.path, bench_name, (run_dir / bench_name).read_bytes())
    store.write(d.path, replace(record, run_id=d.run_id, key=d.key, benchmarks=(bench_name,)))
    return d.run_id


@pytest.fixture(scope="module")
def lab(eager_server: SharedServer) -> Lab:
    server = eager_server
    store = RunStore(server.project / "runs")
    # --force: the pre-flight rules predict this failure; launch it to record it (it
    # fails within seconds, while the shared server may still be loading)
    failed = server.cli("launch", "cpu-batched-tokens", "--port", str(free_port()), "--force",
                        "--json")
    assert failed.code == 1, failed.output
    server.ready()
    res = server.cli("bench", "cpu-eager", *BENCH)
    assert res.code == 0, res.output
    stored = Path(json.loads(res.stdout)["stored"])
    # the second point: the same server measured again, recorded as `max-num-seqs 1`
    res = server.cli("bench", "cpu-eager", *BENCH, "--no-store")
    assert res.code == 0, res.output
    second = json.loads(res.stdout)
    # stored by the CLI into the launch's run, which the other modules' benchmarks share
    assert stored.parent == Path(server.record()["run_dir"])
    eager = _copy_run(store, stored.parent, stored.name)
    first = store.read(store.find(eager).path)
    variant = first.to_json()["variant"]
    variant["args"]["max-num-seqs"] = 1
    variant["name"] = "cpu-eager@seqs1"
    d = store.create(key="5e951aaaaa", variant="cpu-eager@seqs1", when=lab_now())
    store.write(d.path, replace(first, run_id=d.run_id, key=d.key,
                                variant_name="cpu-eager@seqs1", variant=variant,
                                benchmarks=()))
    store.attach_benchmark(d.path, BenchResult.from_json(second), lab_now())
    return Lab(server, {"eager": eager, "seqs1": d.run_id,
                        "failed": json.loads(failed.stdout)["run_id"]})


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
