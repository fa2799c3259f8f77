"""``variantctl tune`` on the real vLLM CPU server with the tiny random-weight model
(host ``cpu``, this machine; vLLM's single-process engine, tests/support/sweeplab.py):
a small tune over max-num-seqs × max-num-batched-tokens that survives a SIGKILL, never
launches what vLLM would refuse, names a winner beyond the noise, and writes a variant
that, launched and measured again, reproduces the winner's figure within the tune's
interval.

The base variant runs one sequence at a time (``max-num-seqs 1``,
``max-num-batched-tokens 512``, chunked prefill off, max-model-len 512 from cpu-base):
at concurrency 8 its requests queue. The space is ``max-num-seqs [1, 8] ×
max-num-batched-tokens [256, 512]``: (1, 512) is the base's own server; the two points
with 256 batched tokens, below max-model-len with chunked prefill off, are refused by
vLLM, so the pre-flight rules predict them and they are never launched; (8, 512) is the
one candidate launched. The variantctl process is SIGKILLed while that candidate's
server starts; ``tune --resume`` stops the server it left, reuses the base's measurement
and carries on. Why so few launched points: each is a real start (about 15 s alone on 2
cores), and the statistics need launches, not points.

The noise. The unit of the tune's statistics is the launch, and this machine has 2
cores shared with two other test workers (other real servers, mypy, the wheel check).
Measured without the priority below, in the full suite: one launch of max-num-seqs 4
at concurrency 4 gave 520-1,520 tok/s (±10-35 % about its mean), so two or three
launches a side could not always tell a 2× winner from the base (a 12-start version of
this test once ended "nothing beats the base variant beyond the noise"), and a later
launch of the winner drifted with the load beyond the tune's interval (1 of 7 outside
the prediction interval below). So the servers this test measures and its benchmark
client run with the CPU first when the suite runs as root (as CI does; otherwise as they
are): each is a session of its own whose autogroup niceness, and its own, is -10
(:func:`_raiser`). The autogroup's matters: Linux shares the CPU equally between
sessions whatever their processes' niceness, so a niceness alone did nothing against
the other workers' servers (each its own session): with it alone the test failed once
in the full suite, the best's three launches spreading 95 % CI −867 … 3,408. Raised, the
launches measure the server rather than its neighbours. That is how an engineer
benchmarks on a shared box; variantctl itself is unchanged. With 8
sequences at concurrency 8 the winner is 3-4× the base (seen alone: 1,617 tok/s over
3 launches against 498 over 2), and the stages (``repeats: 2, max_repeats: 3, ci_pct:
50``, a budget of 6 launches) give the best a third launch when Welch's degrees of
freedom fall towards 1 with two a side (t > 12.7 needed).

"Reproduces its figures within its CI": the written ``variants/tune-eager-best.yaml``
is launched with ``variantctl launch`` and benchmarked with ``variantctl bench`` at the
tune's bench. Asserted: it is the best's server (the same configuration key,
runs/identity: exact), and its figure lies within the tune's 95 % prediction interval
for one more launch of the best: mean ± t·s·√(1 + 1/n), the interval of the mean the
tune reports widened by √(n + 1). Not the interval of the mean itself: that bounds the
mean of n launches, and one new launch falls outside it about one time in four on an
unchanged machine. Its lower side is asserted, its upper side printed: in one
fresh-clone suite the written variant measured 2,300 tok/s against 1,746 ± 549 (over 3
launches), faster than the interval; the suite's load falls as it nears its end, and
the launch came after the tune's. A variant that measures *worse* than reported beyond
the noise is what the check is for, and stays a failure.
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
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
BUDGET = 6
BENCH = ("bench: {prompts: [random], input_len: 32, output_len: 16, ignore_eos: true,"
         " concurrency: [8], requests: 32, warmup: '1'}\n")
#: the same bench as ``variantctl bench`` flags
BENCH_FLAGS = ("--concurrency", "8", "--requests", "32", "--prompt", "random",
               "--input-len", "32", "--output-len", "16", "--ignore-eos", "--warmup", "1")
#: the measured processes' niceness when the suite may raise their priority (root);
#: benchmarks/bench_tune_real.py sets 0 to measure this test without it
NICE = int(os.environ.get("VARIANTCTL_TEST_NICE", "-10"))


def _raiser(directory: Path) -> Path:
    """``raise CMD…``: runs CMD with the CPU before the other test workers' processes
    (under root; as it is otherwise). Linux's autogroups share the CPU equally between
    sessions whatever their processes' niceness (``setsid`` makes a new one: every
    server variantctl launches is one), so the script sets its session's autogroup
    niceness, then its own; it is run as the first command of a new session (a server,
    through the host's ``python:``; the client, by ``Lab.spawn(via=)``), so it raises that
    session alone."""
    script = directory / "raise"
    script.write_text(
        "#!/bin/sh\n"
        "# tests/vllm/test_tune_real.py: the measured processes get the CPU first\n"
        'if [ "$(id -u)" = 0 ]; then\n'
        f"  [ -w /proc/self/autogroup ] && echo {NICE} > /proc/self/autogroup\n"
        "  # nice -n adds to the niceness inherited: this sets it\n"
        f'  exec nice -n $(({NICE} - $(nice))) "$@"\n'
        "fi\n"
        'exec "$@"\n')
    script.chmod(0o755)
    return script


@pytest.fixture(scope="module")
def raiser(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _raiser(tmp_path_factory.mktemp("raise"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, ssh_lab: SshLab, vllm_python: Path,
        tiny_model: Path, start_budget: StartBudget, raiser: Path) -> Iterator[Lab]:
    # the host's python: vLLM's, through the raiser (a server is a session of its own)
    python = raiser.parent / "python"
    python.write_text(f'#!/bin/sh\nexec "{raiser}" "{vllm_python}" "$@"\n')
    python.chmod(0o755)
    yield from sweep_lab(tmp_path_factory, ssh_lab, python, tiny_model, start_budget)


def _run(lab: Lab, raiser: Path, *args: str, timeout: float) -> tuple[int, str]:
    """variantctl (the benchmark client of a tune or a bench) raised like the servers it
    measures: its exit code and stdout (stderr after a failure)."""
    proc = lab.spawn(*args, via=raiser)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out.decode() if proc.returncode == 0 else (out + err).decode()


def _server_port() -> int:
    """A port nothing holds now, below the kernel's ephemeral range (32768 on) and above
    the SLURM tier's job ports (tests/support/slurm.py): the tune starts its servers on
    one port several times over minutes, and a port the kernel picks for a bind (as
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


def test_a_real_tune_resumes_after_sigkill_names_a_winner_and_its_variant_reproduces_it(
        lab: Lab, raiser: Path) -> None:
    (lab.project / "variants" / "tune-eager.yaml").write_text(
        f"extends: cpu-eager\nport: {_server_port()}\n"
        "args:\n  max-num-seqs: 1\n  max-num-batched-tokens: 512\n"
        "  enable-chunked-prefill: false\n")
    (lab.project / "tunes").mkdir(exist_ok=True)
    (lab.project / "tunes" / "real.yaml").write_text(
        "variant: tune-eager\nhosts: [cpu]\n"
        "space:\n  args.max-num-seqs: [1, 8]\n  args.max-num-batched-tokens: [256, 512]\n"
        + BENCH + "objective: {maximize: output_throughput}\n"
        f"budget: {{launches: {BUDGET}}}\n"
        "stages: {repeats: 2, max_repeats: 3, ci_pct: 50}\nseed: 1\n")
    state = lab.project / "runs" / "tunes" / "real.json"
    proc = lab.spawn("tune", "real", "--json", via=raiser)
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
    code, out = _run(lab, raiser, "tune", "real", "--resume", "--json",
                     timeout=lab.budget.wait * 2)
    took = time.monotonic() - started
    assert code == 0, out
    tune = json.loads(out)["tune"]
    print("tune:", json.dumps({k: tune[k] for k in ("trials", "best", "verdict")}))
    assert tune["resumed"] is True
    assert tune["stopped_leftovers"] == ["tune-eager@tune-real-r002-01"]
    assert not is_alive(LocalTarget(), int(record["pid"]))
    # the base's measurement reused, not launched again: the resumed run launched
    # the rest, within what the budget left
    assert tune["launches"] == sum(t["launches"] for t in tune["trials"]) - 1 <= BUDGET - 1
    base, *cands = tune["trials"]
    assert base["settings"] == {} and base["launches"] >= 2
    # the grid's other three points: (1, 512) is the base's own server, never
    # launched; the two with max-num-batched-tokens 256, below max-model-len 512 with
    # chunked prefill off, are refused by vLLM and so predicted, never launched
    assert sorted((c["settings"]["args.max-num-seqs"],
                   c["settings"]["args.max-num-batched-tokens"], c["state"])
                  for c in cands) == [(1, 256, "predicted"), (8, 256, "predicted"),
                                      (8, 512, "measured")]
    assert all(c["launches"] == 0 and "max-model-len" in c["reason"]
               for c in cands if c["state"] == "predicted")
    after = _measured(lab)
    assert len(after) == tune["launches"] + 1 and base_runs[0] in after  # none twice

    # the winner, beyond the noise: max-num-seqs 8 (requests no longer queue)
    best = tune["best"]
    assert best is not None, tune["verdict"]
    assert best["settings"] == {"args.max-num-seqs": 8, "args.max-num-batched-tokens": 512}
    assert "beats the base variant beyond the noise" in tune["verdict"]
    winner = next(c for c in cands if c["settings"] == best["settings"])
    assert winner["launches"] >= 2
    lo, hi = best["ci95"]
    assert lo < best["objective"] < hi and base["objective"] < best["objective"]
    written = lab.project / "variants" / "tune-eager-best.yaml"
    assert tune["variant_written"] == str(written)
    assert "max-num-seqs: 8" in written.read_text()
    assert json.loads(state.read_text())["status"] == "finished"
    assert lab.records() == []  # every server stopped
    assert took < lab.budget.wait * 2

    # the written variant launches the best's server and reproduces its figure
    measured, run_id = _launch_and_measure(lab, raiser, "tune-eager-best")
    assert _config_key(lab, run_id) == _config_key(lab, best["run_id"])
    n = winner["launches"]
    reach = (hi - lo) / 2 * math.sqrt(n + 1)
    print(f"best {best['objective']:.0f} tok/s over {n} launches (95 % CI {lo:.0f} … "
          f"{hi:.0f}; one launch: ± {reach:.0f}), base {base['objective']:.0f} over "
          f"{base['launches']}; the written variant launched again: {measured:.0f}")
    print("within the prediction interval:", abs(measured - best["objective"]) <= reach)
    # the lower side is asserted: a written variant that measures worse than the tune
    # said, beyond its noise, is the defect this checks (the base's server measures a
    # third of the best's); above it is the machine (module docstring)
    assert measured >= best["objective"] - reach


def _launch_and_measure(lab: Lab, raiser: Path, variant: str) -> tuple[float, str]:
    """One launch of ``variant``, benchmarked at the tune's bench (the client raised as
    the tune's was) and stopped: its output throughput and its run."""
    res = lab.cli("launch", variant)
    assert res.code == 0, res.output
    try:
        code, out = _run(lab, raiser, "bench", variant, *BENCH_FLAGS, "--json",
                         timeout=lab.budget.wait)
        assert code == 0, out
    finally:
        stop = lab.cli("stop", variant, "--grace", "5")
    assert stop.code == 0, stop.output
    doc = json.loads(out)
    run_id = RunStore(lab.project / "runs").read(Path(doc["stored"]).parent).run_id
    (level,) = doc["levels"]
    assert level["concurrency"] == 8 and level["metrics"]["completed"] == 32
    value = float(level["metrics"]["output_throughput"])
    assert value > 0
    return value, run_id
