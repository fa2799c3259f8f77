"""``variantctl tune`` on the real vLLM CPU server with the tiny random-weight model
(host ``cpu``, this machine; vLLM's single-process engine, tests/support/sweeplab.py).

Every real start costs tens of seconds on 2 cores, so the tune is a screen of a 2 × 2
space of max-num-seqs × max-num-batched-tokens with a budget of 2 launches
(``stages: {repeats: 1}``): the base variant and one candidate, one launch each. The
variantctl process is SIGKILLed while the candidate's server starts; ``tune --resume``
stops the server it left, reuses the base's measurement (not launched again) and
launches the candidate; with one launch a side no winner can be told from the noise, so
the tune says so and writes no variant. (A tune that names and writes a winner needs
at least 4 real launches, two a side; on the known-answer stand-in it is checked in
tests/unit/sweeps/test_tune_known_answer.py.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.realvllm import StartBudget
from tests.support.sshd import SshLab, free_port
from tests.support.sweeplab import Lab, sweep_lab
from variantctl.runs.run import RunFileError
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import is_alive

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]

ROUND2 = "tune-eager%40tune-real-r002-01.json"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    yield from sweep_lab(tmp_path_factory, ssh_lab, vllm_python, tiny_model, start_budget)


def _measured(lab: Lab) -> list[str]:
    store = RunStore(lab.project / "runs")
    return sorted(rec.run_id for _, rec in store.records()
                  if not isinstance(rec, RunFileError)
                  and rec.verdict.kind == "ready" and rec.benchmarks)


def test_a_real_tune_resumes_after_sigkill_and_names_no_winner_from_one_launch_a_side(
        lab: Lab) -> None:
    (lab.project / "variants" / "tune-eager.yaml").write_text(
        f"extends: cpu-eager\nport: {free_port()}\n")
    (lab.project / "tunes").mkdir(exist_ok=True)
    (lab.project / "tunes" / "real.yaml").write_text(
        "variant: tune-eager\nhosts: [cpu]\n"
        "space:\n  args.max-num-seqs: [1, 2]\n  args.max-num-batched-tokens: [512, 1024]\n"
        "bench: {prompts: [random], input_len: 32, output_len: 8, ignore_eos: true,"
        " concurrency: [2], requests: 4, warmup: '1'}\n"
        "objective: {maximize: output_throughput}\n"
        "budget: {launches: 2}\nstages: {repeats: 1, max_repeats: 2}\nseed: 1\n")
    state = lab.project / "runs" / "tunes" / "real.json"
    proc = lab.spawn("tune", "real", "--json")
    try:
        record = lab.wait_record(lab.base / "work" / "run" / ROUND2, proc)
    finally:
        proc.kill()  # SIGKILL: variantctl alone; the candidate's server is left starting
        proc.communicate(timeout=30)
    assert is_alive(LocalTarget(), int(record["pid"]))
    assert json.loads(state.read_text())["status"] == "running"
    base_runs = _measured(lab)
    assert len(base_runs) == 1  # the base, measured before the kill

    started = time.monotonic()
    res = lab.cli("tune", "real", "--resume", "--json")
    assert res.code == 0, res.output
    tune = json.loads(res.stdout)["tune"]
    assert tune["resumed"] is True
    assert tune["stopped_leftovers"] == ["tune-eager@tune-real-r002-01"]
    assert not is_alive(LocalTarget(), int(record["pid"]))
    # the base's measurement reused, not launched again: one launch, the candidate's
    assert tune["launches"] == 1
    base, cand = tune["trials"]
    assert base["settings"] == {} and base["launches"] == 1
    assert base["run_id"] == base_runs[0]
    assert cand["state"] == "measured" and cand["launches"] == 1
    assert set(cand["settings"]) == {"args.max-num-seqs", "args.max-num-batched-tokens"}
    assert cand["objective"] > 0 and cand["ci95"] is None  # one launch: no interval
    after = _measured(lab)
    assert len(after) == 2 and base_runs[0] in after and cand["run_id"] in after
    # the honest outcome: one launch a side tells nothing from the noise
    assert tune["best"] is None and tune["recommended"] is None
    assert "no configuration was launched twice" in tune["verdict"]
    assert tune["variant_written"] is None
    assert not (lab.project / "variants" / "tune-eager-best.yaml").exists()
    assert json.loads(state.read_text())["status"] == "finished"
    assert lab.records() == []  # every server stopped
    assert time.monotonic() - started < lab.budget.wait
