"""``variantctl sweep`` on the real vLLM CPU server with the tiny random-weight model,
on host ``cpu`` (this machine); over the real sshd: test_sweep_resume_real.py.

Every real start costs tens of seconds, so each test runs the fewest points that show
its behaviour (grid expansion itself is covered by tests/unit/sweeps), on vLLM's
single-process engine (tests/support/realvllm.py, tests/support/sweeplab.py).

A grid of two points (max-num-seqs on the repository's ``cpu-eager``) plus one point the
pre-flight rules predict to fail (batched tokens below max-model-len, chunked prefill
off): skipped; with ``--resume --include-predicted`` run and recorded with its
signature; another sweep holding the same configuration then skips it by history.
Ctrl-C (SIGINT) of a real variantctl process mid-benchmark stops the server and leaves
an interrupted state.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.realvllm import StartBudget
from tests.support.sshd import SshLab, free_port
from tests.support.sweeplab import BENCH, LONGER, PREDICTED, Lab, bench_doc, sweep_lab
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import is_alive

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    yield from sweep_lab(tmp_path_factory, ssh_lab, vllm_python, tiny_model, start_budget)


def test_grid_predicted_failure_and_history_locally(lab: Lab) -> None:
    port = free_port()
    lab.sweep_file("grid", f"base: cpu-eager\nhosts: [cpu]\nport: {port}\n"
                   "grid:\n  args:\n    max-num-seqs: [1, 2]\n"
                   # vLLM offers POST /reset_prefix_cache only in its dev mode
                   "  env:\n    VLLM_SERVER_DEV_MODE: ['1']\n" + PREDICTED + BENCH)
    res = lab.cli("sweep", "grid", "--json")
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    points = doc["points"]
    assert [p["status"] for p in points] == ["measured"] * 2 + ["skipped"]
    skip = points[2]["skip"]
    assert (skip["reason"], skip["rule"], skip["signature"]) == (
        "predicted", "batched-tokens-below-model-len", "batched-tokens-below-model-len")
    store = RunStore(lab.project / "runs")
    for p in points[:2]:
        run_dir = Path(p["run_dir"])
        rec = store.read(run_dir)
        assert rec.verdict.kind == "ready" and rec.variant_name == p["name"]
        assert rec.benchmarks == tuple(p["benchmarks"]) and len(rec.benchmarks) == 1
        assert rec.variant["origins"]["args.max-num-seqs"] == "sweep grid grid"
        assert rec.variant["args"]["max-num-seqs"] == p["values"]["args.max-num-seqs"]
        bench = bench_doc(run_dir, rec.benchmarks[0])
        assert [lv["concurrency"] for lv in bench["levels"]] == [1, 2]
        for lv in bench["levels"]:
            assert (lv["metrics"]["completed"], lv["metrics"]["failed"]) == (4, 0)
            assert {r["output_tokens"] for r in lv["requests"]} == {8}
        assert p["prefix_cache_resets"] == 1  # between the two levels
        t = p["timings"]
        assert t["time_to_ready_s"] > 0 and t["bench_s"] > 0
        assert t["overhead_s"] < t["total_s"]
    # every server stopped, port free
    assert lab.records() == []
    assert "progress" not in res.stdout  # progress went to stderr
    assert "[cpu 1/2]" in res.stderr and "[cpu 2/2]" in res.stderr

    # the predicted point, run anyway: its real failure is recorded with its signature;
    # the measured points are not measured again
    before = {d.run_id for d in store.dirs()}
    res = lab.cli("sweep", "grid", "--resume", "--include-predicted", "--json")
    assert res.code == 1, res.output  # a point that ran was not measured
    doc = json.loads(res.stdout)
    assert [p["status"] for p in doc["points"]] == ["measured"] * 2 + ["failed"]
    assert all(p.get("resumed") for p in doc["points"][:2])
    failed = doc["points"][2]
    assert (failed["verdict"], failed["signature"]) == ("failed",
                                                       "batched-tokens-below-model-len")
    new = {d.run_id for d in store.dirs()} - before
    assert new == {failed["run_id"]}
    rec = store.read(Path(failed["run_dir"]))
    assert rec.verdict.signature == "batched-tokens-below-model-len"
    assert any("max_num_batched_tokens" in e.text for e in rec.verdict.evidence)
    assert lab.records() == []

    # another sweep with the same configuration: skipped by history, nothing launched
    lab.sweep_file("again", f"base: cpu-eager\nhosts: [cpu]\nport: {port}\n"
                   + PREDICTED + BENCH)
    res = lab.cli("sweep", "again", "--include-predicted", "--json")
    assert res.code == 0, res.output
    (only,) = json.loads(res.stdout)["points"]
    assert only["status"] == "skipped"
    assert only["skip"] == {"reason": "history", "run_id": failed["run_id"],
                            "signature": "batched-tokens-below-model-len",
                            "message": only["skip"]["message"]}
    assert {d.run_id for d in store.dirs()} - before == {failed["run_id"]}


def test_ctrl_c_stops_the_server_and_leaves_an_interrupted_state(lab: Lab) -> None:
    port = free_port()
    lab.sweep_file("intr", f"base: cpu-eager\nhosts: [cpu]\nport: {port}\n"
                   "grid:\n  args:\n    max-num-seqs: [3]\n"
                   + LONGER)
    proc = lab.spawn("sweep", "intr")
    lab.wait_phase("intr", 1, "bench", proc)
    record = json.loads((lab.base / "work" / "run" / "cpu-eager%40intr-01.json").read_text())
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err
    assert not is_alive(LocalTarget(), int(record["pid"]))
    assert "cpu-eager%40intr-01.json" not in lab.records()
    state = lab.state("intr")
    assert state["status"] == "interrupted"
    assert state["points"][0]["status"] == "interrupted"
