"""``variantctl tune`` on the real vLLM CPU server with the tiny random-weight model
(host ``cpu``, this machine; vLLM's single-process engine, tests/support/sweeplab.py):
a tune over max-num-seqs × max-num-batched-tokens that survives a SIGKILL, names a
winner beyond the noise, and writes a variant that launches the best's server and, measured
again beside the base, beats it as the tune found.

The base variant runs one sequence at a time (``max-num-seqs 1``, and
``max-num-batched-tokens 512``): at concurrency 4 its requests queue. The space is
``max-num-seqs [1, 4] × max-num-batched-tokens [512, 1024]``; (1, 512) is the base's own
server, so three candidates are probed (the grid, every point once). The variantctl
process is SIGKILLed while the first candidate's server starts; ``tune --resume`` stops
the server it left, reuses the base's measurement and carries on.

Why these stages (``repeats: 2, max_repeats: 5, reach_pct: 0``, a budget of 10
launches): the unit of the tune's statistics is the launch, and on this shared 2-core
machine the launch-to-launch noise is large. Measured before writing this test
(benchmarks of 32 requests at concurrency 4, one server of each kind, other test suites
running, load 2-15): max-num-seqs 4 gave 520-1,520 tok/s, 1 gave 210-610, 2-3× apart
(not 4×), each side spreading ±10-35 %. With two launches a side, Welch's degrees of
freedom fall towards 1 when one side's spread dominates (t > 12.7 needed), and either
side can be the noisier one (first run of this test: the best 828, 1,128, 1,249, 915;
the base 324, 527). So the confirmation keeps launching: while Welch cannot tell the
best from the base, the side with the less certain mean (tune/search._undecided), then
the best while its interval is wide, up to 5 launches each. ``reach_pct: 0`` keeps the
confirmation to the best and the base: the two max-num-seqs 4 candidates are the same
speed. Yet the noise can make the other one the best for a while, and it then gets its
second launch too: with a budget of 8, 2 of 9 runs spent a launch that way, and one
ended "nothing beats the base variant beyond the noise" (the best 920 over 3
launches, 95 % CI 337 … 1,502; the base 462 over 2); 10 leaves room for it. In all: up
to 10 launches by the tune (three probes, the rest confirming) and two after it.

"Measures as reported": after the tune, the written ``variants/tune-eager-best.yaml`` is
launched with ``variantctl launch`` and measured with ``variantctl bench`` at the tune's
bench, then the base variant likewise, right after it. Asserted: the written variant is
the best's server (the same configuration key, runs/identity: exact), and it beats the
base measured beside it, as the tune found. Printed but not asserted: its figure
against the tune's 95 % prediction interval for one more launch of the best (mean ±
t·s·√(1 + 1/n), the mean's interval widened by √(n + 1); not the interval of the mean
itself, which one launch misses about one time in four even on an unchanged machine:
|t₃| < 3.18/√5). Why not asserted: that interval holds the launch-to-launch noise
*within* the tune's minutes, and this machine's load drifts more than that between the
tune and the check. Seen in 7 runs: the check's launch measured 579, 823, 1,441, 1,370,
1,177, 1,283 and 437 tok/s against best means of 1,030, 1,141, 1,143, 1,109, 1,390, 909
and 907; the mean's interval missed 3 of them, the prediction interval 1 (1,283 against
909 ± 343, the load having fallen from 6.5 to 3). Why the base is launched again beside
it rather than compared with the tune's figure for it: in one of those runs the written
variant measured 437 against the base's 421 from the tune, the load having risen; a
comparison at the same moment takes most of the drift out (as ``compare`` interleaves).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.realvllm import StartBudget
from tests.support.slurm import port_bindable
from tests.support.sshd import SshLab
from tests.support.sweeplab import Lab, sweep_lab
from variantctl.runs.identity import record_config_key
from variantctl.runs.run import RunFileError
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget
from variantctl.targets.process import is_alive

pytestmark = [pytest.mark.vllm, pytest.mark.ssh]

ROUND2 = "tune-eager%40tune-real-r002-01.json"
BUDGET = 10
BENCH = ("bench: {prompts: [random], input_len: 32, output_len: 16, ignore_eos: true,"
         " concurrency: [4], requests: 32, warmup: '1'}\n")
#: the same bench as ``variantctl bench`` flags
BENCH_FLAGS = ("--concurrency", "4", "--requests", "32", "--prompt", "random",
               "--input-len", "32", "--output-len", "16", "--ignore-eos", "--warmup", "1")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget) -> Iterator[Lab]:
    yield from sweep_lab(tmp_path_factory, ssh_lab, vllm_python, tiny_model, start_budget)


def _server_port() -> int:
    """A port nothing holds now, below the kernel's ephemeral range (32768 on) and above
    the SLURM tier's job ports (tests/support/slurm.py): the tune starts its servers on
    one port about ten times over minutes, and a port the kernel picks for a bind (as
    ``free_port`` does) is one any process's outgoing connection may hold at the next
    start on this shared machine."""
    for port in random.sample(range(30000, 32768), 200):
        if port_bindable(port):
            return port
    pytest.fail("no free port in 30000-32767")


def _measured(lab: Lab) -> list[str]:
    store = RunStore(lab.project / "runs")
    return sorted(rec.run_id for _, rec in store.records()
                  if not isinstance(rec, RunFileError)
                  and rec.verdict.kind == "ready" and rec.benchmarks)


def _config_key(lab: Lab, run_id: str) -> str:
    store = RunStore(lab.project / "runs")
    return next(record_config_key(rec) for _, rec in store.records()
                if not isinstance(rec, RunFileError) and rec.run_id == run_id)


def test_a_real_tune_resumes_after_sigkill_names_a_winner_and_its_variant_measures_as_reported(
        lab: Lab) -> None:
    (lab.project / "variants" / "tune-eager.yaml").write_text(
        f"extends: cpu-eager\nport: {_server_port()}\n"
        "args:\n  max-num-seqs: 1\n  max-num-batched-tokens: 512\n")
    (lab.project / "tunes").mkdir(exist_ok=True)
    (lab.project / "tunes" / "real.yaml").write_text(
        "variant: tune-eager\nhosts: [cpu]\n"
        "space:\n  args.max-num-seqs: [1, 4]\n  args.max-num-batched-tokens: [512, 1024]\n"
        + BENCH + "objective: {maximize: output_throughput}\n"
        f"budget: {{launches: {BUDGET}}}\n"
        "stages: {repeats: 2, max_repeats: 5, reach_pct: 0}\nseed: 1\n")
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
    took = time.monotonic() - started
    assert res.code == 0, res.output
    tune = json.loads(res.stdout)["tune"]
    print("tune:", json.dumps({k: tune[k] for k in ("trials", "best", "verdict")}))
    assert tune["resumed"] is True
    assert tune["stopped_leftovers"] == ["tune-eager@tune-real-r002-01"]
    assert not is_alive(LocalTarget(), int(record["pid"]))
    # the base's measurement reused, not launched again: the resumed run launched the rest
    assert tune["launches"] == sum(t["launches"] for t in tune["trials"]) - 1 <= BUDGET - 1
    base, *cands = tune["trials"]
    assert base["settings"] == {} and base["launches"] >= 2
    # three candidates probed: (1, 512) is the base's own server, never launched
    assert sorted((c["settings"]["args.max-num-seqs"],
                   c["settings"]["args.max-num-batched-tokens"]) for c in cands) == [
        (1, 1024), (4, 512), (4, 1024)]
    after = _measured(lab)
    assert len(after) == tune["launches"] + 1 and base_runs[0] in after  # none twice

    # the winner, beyond the noise: max-num-seqs 4 (requests no longer queue)
    best = tune["best"]
    assert best is not None, tune["verdict"]
    assert best["settings"]["args.max-num-seqs"] == 4
    assert "beats the base variant beyond the noise" in tune["verdict"]
    winner = next(c for c in cands if c["settings"] == best["settings"])
    assert winner["state"] == "measured" and winner["launches"] >= 2
    # reach_pct 0: only the best (at each point of the confirmation) and the base get
    # repeats; the other max-num-seqs 4 candidate has a second launch when the noise made
    # it the best for a while (seen), the slow one never does
    (slow,) = (c for c in cands if c["settings"]["args.max-num-seqs"] == 1)
    assert slow["state"] == "pruned" and slow["launches"] == 1
    lo, hi = best["ci95"]
    assert lo < best["objective"] < hi and base["objective"] < best["objective"]
    written = lab.project / "variants" / "tune-eager-best.yaml"
    assert tune["variant_written"] == str(written)
    assert "max-num-seqs: 4" in written.read_text()
    assert json.loads(state.read_text())["status"] == "finished"
    assert lab.records() == []  # every server stopped
    assert took < lab.budget.wait * 2

    # the written variant launches the best's server and, measured now beside the base
    # (launched again right after it, under the same load), beats it as the tune found;
    # its figure against the tune's prediction for one launch is printed, not asserted
    # (docstring: the load drifts between the tune and the check)
    n = winner["launches"]
    measured, run_id = _launch_and_measure(lab, "tune-eager-best")
    assert _config_key(lab, run_id) == _config_key(lab, best["run_id"])  # the best's server
    beside, base_run = _launch_and_measure(lab, "tune-eager")
    assert _config_key(lab, base_run) == _config_key(lab, base["run_id"])
    reach = (hi - lo) / 2 * math.sqrt(n + 1)
    print(f"best {best['objective']:.0f} tok/s over {n} launches (95 % CI {lo:.0f} … "
          f"{hi:.0f}; one launch: ± {reach:.0f}), base {base['objective']:.0f} over "
          f"{base['launches']}; launched again: the written variant {measured:.0f}, the "
          f"base beside it {beside:.0f}")
    assert measured > beside


def _launch_and_measure(lab: Lab, variant: str) -> tuple[float, str]:
    """One launch of ``variant``, benchmarked at the tune's bench and stopped: its output
    throughput and its run."""
    res = lab.cli("launch", variant)
    assert res.code == 0, res.output
    try:
        res = lab.cli("bench", variant, *BENCH_FLAGS, "--json")
        assert res.code == 0, res.output
    finally:
        stop = lab.cli("stop", variant, "--grace", "5")
    assert stop.code == 0, stop.output
    doc = json.loads(res.stdout)
    run_id = RunStore(lab.project / "runs").read(Path(doc["stored"]).parent).run_id
    (level,) = doc["levels"]
    assert level["concurrency"] == 4 and level["metrics"]["completed"] == 32
    value = float(level["metrics"]["output_throughput"])
    assert value > 0
    return value, run_id
