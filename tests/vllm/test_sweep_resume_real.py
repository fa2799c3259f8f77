"""``variantctl sweep --resume`` and a dropped connection, on the real vLLM CPU server
over the real sshd (host ``cpu-ssh``: this machine through OpenSSH, same work
directory; tests/support/sweeplab.py).

A variantctl process SIGKILLed mid-point leaves its server running; the next
``sweep --resume`` reattaches to it (or stops it when the sweep file changed its
configuration), and no point is measured twice; a connection dropped mid-point is
re-opened and the point measured on it. Split from tests/vllm/test_sweep_real.py so the
two halves' starts run at once under pytest-xdist.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.realvllm import StartBudget
from tests.support.sshd import SshLab, free_port
from tests.support.sweeplab import BENCH, LONGER, Lab, sweep_lab
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import is_alive

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    yield from sweep_lab(tmp_path_factory, ssh_lab, vllm_python, tiny_model, start_budget)


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
    # one run: the killed point's launch got its benchmark on reattaching, and its
    # prefix cache (it served the killed run's requests) was reset before level 1
    assert "retrying once" not in res.stderr, res.output
    assert [len(b) for b in runs["cpu-eager@kill-01"]] == [1]
    assert doc["points"][0]["run_dir"] == record["run_dir"]
    assert doc["points"][0]["prefix_cache_resets"] == 2
    for p in doc["points"]:
        assert store.read(Path(p["run_dir"])).host["name"] == "cpu-ssh"


def test_a_leftover_of_another_configuration_is_stopped_not_reattached(lab: Lab) -> None:
    """The sweep file changed between the killed run and the next: the point's name is
    the same, its configuration is not, so the leftover is stopped and the point
    launched afresh. Killed while its server still starts: a leftover is a leftover
    whatever its phase, and the start it would have finished is not paid for."""
    port = free_port()
    lab.sweep_file("edit", f"base: cpu-eager\nhosts: [cpu-ssh]\nport: {port}\n"
                   "grid:\n  args:\n    max-num-seqs: [3]\n" + LONGER)
    proc = lab.spawn("sweep", "edit")
    lab.wait_phase("edit", 1, "launch", proc)
    path = lab.base / "work" / "run" / "cpu-eager%40edit-01.json"
    record = lab.wait_record(path, proc)  # the server is spawned and recorded
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    orphan = int(record["pid"])
    assert is_alive(LocalTarget(), orphan)
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
