"""``variantctl sweep`` on the real vLLM CPU server with the tiny random-weight model.

Every real start costs tens of seconds, so each test runs the fewest points that show
its behaviour (grid expansion itself is covered by tests/unit/sweeps), on vLLM's
single-process engine (tests/support/realvllm.py).

Locally (host ``cpu``): a grid of two points (max-num-seqs on the repository's
``cpu-eager``) plus one point the pre-flight rules predict to fail
(batched tokens below max-model-len, chunked prefill off): skipped; with
``--resume --include-predicted`` run and recorded with its signature; another sweep
holding the same configuration then skips it by history. Ctrl-C (SIGINT) of a real
variantctl process mid-benchmark stops the server and leaves an interrupted state.

Over the real sshd (host ``cpu-ssh``: this machine through OpenSSH, same work
directory): a variantctl process SIGKILLed mid-point leaves its server running; the next
``sweep --resume`` reattaches to it (or stops it when the sweep file changed its
configuration), and no point is measured twice; a connection dropped mid-point is
re-opened and the point measured on it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, CliResult, make_env
from tests.support.realvllm import HOST_ENV, StartBudget, copy_cpu_variants
from tests.support.sshd import SshLab, free_port
from variantctl.cli import run
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import is_alive

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]

BENCH = ("bench:\n  prompts: [random]\n  input_len: 32\n  output_len: 8\n  ignore_eos: true\n"
         "  concurrency: [1, 2]\n  requests: 4\n  warmup: '1'\nstop:\n  min_success_pct: 100\n")
#: a benchmark long enough (a few seconds) to be caught mid-level
LONGER = BENCH.replace("requests: 4", "requests: 40").replace("output_len: 8", "output_len: 32")
PREDICTED = "include:\n  - {args.max-num-batched-tokens: 64, args.enable-chunked-prefill: false}\n"


class Lab:
    def __init__(self, project: Path, base: Path, budget: StartBudget):
        self.project, self.base, self.budget = project, base, budget

    def cli(self, *args: str) -> CliResult:
        env = make_env(self.project, self.base / "cache")
        code = run(list(args), env)
        return CliResult(code, env.stdout.file.getvalue(),  # type: ignore[attr-defined]
                         env.stderr.file.getvalue())  # type: ignore[attr-defined]

    def sweep_file(self, name: str, text: str) -> None:
        (self.project / "sweeps" / f"{name}.yaml").write_text(text)

    def state(self, name: str) -> dict[str, Any]:
        return json.loads((self.project / "runs" / "sweeps" / f"{name}.json").read_text())

    def records(self) -> list[str]:
        run_dir = self.base / "work" / "run"
        return sorted(p.name for p in run_dir.glob("*.json")) if run_dir.is_dir() else []

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "variantctl", "--project",
                                 str(self.project), *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def wait_phase(self, name: str, index: int, phase: str, proc: subprocess.Popen[bytes]
                   ) -> None:
        deadline = time.monotonic() + self.budget.wait
        while time.monotonic() < deadline:
            try:
                entry = self.state(name)["points"][index - 1]
                if entry["phase"] == phase:
                    return
            except (FileNotFoundError, ValueError, KeyError, IndexError):
                pass
            if proc.poll() is not None:
                pytest.fail(f"variantctl ended early: {proc.communicate()}")
            time.sleep(0.2)
        pytest.fail(f"point {index} never reached phase {phase}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("sweepreal")
    project = base / "project"
    for d in ("variants", "patchsets", "sweeps"):
        (project / d).mkdir(parents=True)
    copy_cpu_variants(REPO, project, start_budget)
    # the single-process engine: these tests are about the sweep, not vLLM's processes
    common = (f"  python: {vllm_python}\n  workdir: {base / 'work'}\n"
              f"  env: {{{HOST_ENV}}}\n  vllm_version: 0.32.0\n")
    (project / "variants" / "hosts.yaml").write_text(
        "cpu:\n" + common
        + f"cpu-ssh:\n  ssh:\n    alias: gpu1\n    config: {ssh_lab.ssh_config}\n" + common)
    mp = pytest.MonkeyPatch()
    mp.setenv("VARIANTCTL_TINY_MODEL", str(tiny_model))
    lab = Lab(project, base, start_budget)
    try:
        yield lab
    finally:
        lab.cli("stop", "--all", "--host", "cpu", "--grace", "5")
        mp.undo()


def _bench(run_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((run_dir / name).read_text())  # type: ignore[no-any-return]


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
        bench = _bench(run_dir, rec.benchmarks[0])
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


def test_a_killed_sweep_leaves_no_orphan_and_resume_reattaches_to_its_server(lab: Lab
                                                                           ) -> None:
    """SIGKILL mid-point leaves the point's server running; ``--resume`` reattaches to it
    (its start is not paid twice: minutes on a GPU host), benchmarks it into the same
    run, stops it, and no point is measured twice."""
    port = free_port()
    lab.sweep_file("kill", f"base: cpu-eager\nhosts: [cpu-ssh]\nport: {port}\n"
                   "grid:\n  args:\n    max-num-seqs: [1]\n"
                   "  env:\n    VLLM_SERVER_DEV_MODE: ['1']\n"
                   + LONGER)
    proc = lab.spawn("sweep", "kill")
    lab.wait_phase("kill", 1, "bench", proc)
    proc.send_signal(signal.SIGKILL)  # no cleanup at all: the server is left running
    proc.communicate(timeout=30)
    record = json.loads((lab.base / "work" / "run" / "cpu-eager%40kill-01.json").read_text())
    orphan = int(record["pid"])
    assert is_alive(LocalTarget(), orphan)

    res = lab.cli("sweep", "kill", "--resume", "--json")
    assert res.code == 0, res.output
    assert (f"cpu-eager@kill-01: reattaching to its server (pid {orphan}), started by an "
            "earlier run of this sweep") in res.stderr, res.output
    assert "left by an earlier run" not in res.stderr  # nothing else was left over
    assert not is_alive(LocalTarget(), orphan)  # stopped after its benchmark
    doc = json.loads(res.stdout)
    assert [p["status"] for p in doc["points"]] == ["measured"]
    assert lab.records() == []
    store = RunStore(lab.project / "runs")
    runs: dict[str, list[tuple[str, ...]]] = {}
    for _d, rec in store.records():
        assert not isinstance(rec, Exception)
        if rec.variant_name.startswith("cpu-eager@kill-"):
            runs.setdefault(rec.variant_name, []).append(rec.benchmarks)
    # measured once: exactly one run with a benchmark
    assert sorted(len(b) for b in runs["cpu-eager@kill-01"])[-1:] == [1], runs
    assert sum(1 for b in runs["cpu-eager@kill-01"] if b) == 1, runs
    # a point the sweep retried after a dropped SSH connection (the open transport bug
    # in the closing note) is a fresh launch; the others are exact
    if "cpu-eager@kill-01: retrying once" not in res.stderr:
        # one run: the killed point's launch got its benchmark on reattaching, and its
        # prefix cache (it served the killed run's requests) was reset before level 1
        assert [len(b) for b in runs["cpu-eager@kill-01"]] == [1]
        assert doc["points"][0]["run_dir"] == record["run_dir"]
        assert doc["points"][0]["prefix_cache_resets"] == 2
    for p in doc["points"]:
        assert store.read(Path(p["run_dir"])).host["name"] == "cpu-ssh"


def test_a_leftover_of_another_configuration_is_stopped_not_reattached(lab: Lab) -> None:
    """The sweep file changed between the killed run and the next: the point's name is
    the same, its configuration is not, so the leftover is stopped and the point
    launched afresh."""
    port = free_port()
    lab.sweep_file("edit", f"base: cpu-eager\nhosts: [cpu-ssh]\nport: {port}\n"
                   "grid:\n  args:\n    max-num-seqs: [3]\n" + LONGER)
    proc = lab.spawn("sweep", "edit")
    lab.wait_phase("edit", 1, "bench", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    record = json.loads((lab.base / "work" / "run" / "cpu-eager%40edit-01.json").read_text())
    orphan = int(record["pid"])
    lab.sweep_file("edit", f"base: cpu-eager\nhosts: [cpu-ssh]\nport: {port}\n"
                   "grid:\n  args:\n    max-num-seqs: [4]\n" + BENCH)
    res = lab.cli("sweep", "edit", "--json")
    assert res.code == 0, res.output
    assert "reattaching" not in res.stderr
    assert not is_alive(LocalTarget(), orphan)
    (point,) = json.loads(res.stdout)["points"]
    assert point["status"] == "measured" and point["run_dir"] != record["run_dir"]
    rec = RunStore(lab.project / "runs").read(Path(point["run_dir"]))
    assert rec.variant["args"]["max-num-seqs"] == 4
    assert lab.records() == []


def test_a_connection_dropped_mid_point_is_reconnected_and_the_sweep_goes_on(
        lab: Lab, ssh_lab: SshLab) -> None:
    """The SSH connection dies while point 1 is benchmarked (its sshd session killed):
    the point's stop reconnects and stops its server, and the point is retried once on
    the re-opened connection and measured — an unattended sweep leaves no hole for a
    network blip."""
    import threading

    port = free_port()
    lab.sweep_file("blip", f"base: cpu-eager\nhosts: [cpu-ssh]\nport: {port}\n"
                   "grid:\n  args:\n    max-num-seqs: [1]\n" + LONGER)
    killed: list[int] = []
    pids: list[int] = []

    def drop_once_benchmarking() -> None:
        deadline = time.monotonic() + lab.budget.wait
        while time.monotonic() < deadline:
            try:
                if lab.state("blip")["points"][0]["phase"] == "bench":
                    break
            except (FileNotFoundError, ValueError, KeyError, IndexError):
                pass
            time.sleep(0.1)
        record = json.loads(
            (lab.base / "work" / "run" / "cpu-eager%40blip-01.json").read_text())
        pids.append(int(record["pid"]))
        # inside the first level: past the warm-up request, its requests are in the
        # server's access log (40 of them at c=1 take seconds)
        log = Path(record["log"])
        while time.monotonic() < deadline and log.read_bytes().count(
                b"POST /v1/chat/completions") < 4:
            time.sleep(0.05)
        killed.append(ssh_lab.servers["gpu1"].kill_sessions())

    killer = threading.Thread(target=drop_once_benchmarking, daemon=True)
    killer.start()
    res = lab.cli("sweep", "blip", "--json")
    killer.join(timeout=10)
    assert killed and killed[0] >= 1, res.output
    assert "cpu-eager@blip-01: connection to cpu-ssh lost" in res.stderr, res.output
    assert "reconnecting" in res.stderr
    doc = json.loads(res.stdout)
    (first,) = doc["points"]
    # the first point's server did not survive the blip, nor its record
    assert not is_alive(LocalTarget(), pids[0])
    assert lab.records() == []
    # its level's requests failed because the connection dropped, not the server: that
    # attempt is an error (not a measurement of 5 % success) and the sweep retries the
    # point once on the re-opened connection, which measures it
    assert ("cpu-eager@blip-01: retrying once: the connection dropped during the "
            "benchmark at concurrency 1 (cpu-ssh: ") in res.stderr, res.output
    assert first["status"] == "measured", first
    store = RunStore(lab.project / "runs")
    attempts = sorted((rec.created_at, rec.benchmarks) for _d, rec in store.records()
                      if not isinstance(rec, Exception)
                      and rec.variant_name == "cpu-eager@blip-01")
    assert [len(b) for _, b in attempts] == [0, 1], attempts
