"""``tune --resume`` after the variantctl process is SIGKILLed mid-search, on the FAKE
OpenAI server with a known optimum (tests/support/fake_openai_server.py, a test double):
the resumed run measures nothing twice — every launch in the store is counted once, and
the two runs together stay within the one budget."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult
from tests.unit.sweeps.test_tune_known_answer import GRID, _project, _within_noise_of_optimum
from variantctl.hostmodel import Host
from variantctl.launch.servers import layout_for, list_records
from variantctl.runs.run import RunFileError
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget


def _measured_runs(project: Path) -> list[str]:
    store = RunStore(project / "runs")
    return sorted(rec.run_id for _, rec in store.records()
                  if not isinstance(rec, RunFileError)
                  and rec.verdict.kind == "ready" and rec.benchmarks)


def _servers(project: Path) -> list[str]:
    """The servers recorded as running on the project's local host."""
    target = LocalTarget("local")
    host = Host(name="local", workdir=str(project / "work-local"))
    return sorted(r.variant for r in list_records(target, layout_for(target, host)))


def _all_runs(project: Path) -> int:
    return len(list(RunStore(project / "runs").records()))


def test_a_sigkilled_tune_resumes_without_measuring_anything_twice(
        tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    project = _project(tmp_path / "p", seed=2)
    state = project / "runs" / "tunes" / "known.json"
    env = {**os.environ, "VARIANTCTL_PROJECT": str(project),
           "VARIANTCTL_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "variantctl", "tune", "known", "--json"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill it as its 5th batch is starting
            if state.exists() and json.loads(state.read_text() or "{}").get("rounds", 0) >= 5:
                break
            assert proc.poll() is None, "the tune ended before it was killed"
            time.sleep(0.05)
        else:
            pytest.fail("the tune never reached its 5th batch")
        time.sleep(0.3)  # its server starting
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # variantctl alone: its server is left running
        proc.wait(10)
    assert json.loads(state.read_text())["status"] == "running"
    before = _measured_runs(project)
    launched_before = _all_runs(project)
    assert 4 <= len(before) < GRID // 2
    left = _servers(project)  # the killed run's server, when it was up at the kill
    assert set(left) <= {"tunable@tune-known-r005-01"}

    # a plain rerun of an interrupted tune is refused, naming --resume; nothing launched
    plain = run_cli(["tune", "known", "--json"], project=project)
    assert plain.code == 3, plain.output
    assert "was interrupted" in plain.output and "--resume" in plain.output
    assert _all_runs(project) == launched_before

    res = run_cli(["tune", "known", "--resume", "--json"], project=project)
    assert res.code == 0, res.output
    tune = json.loads(res.stdout)["tune"]
    after = _measured_runs(project)
    assert tune["resumed"] is True
    # every measurement the killed run made is used, none is made again: the launches
    # of the result are exactly the store's, and both runs together kept one budget
    assert set(before) <= set(after)
    assert _all_runs(project) == launched_before + tune["launches"]
    assert sum(t["launches"] for t in tune["trials"]) == len(after)
    assert len(after) <= GRID // 2
    assert tune["launches"] == GRID // 2 - len(before)
    used = {t["run_id"] for t in tune["trials"] if t["run_id"]}
    assert any(t["state"] == "reused" for t in tune["trials"])
    assert used & set(before)
    assert tune["best"] is not None and _within_noise_of_optimum(tune["best"]["settings"])
    assert json.loads(state.read_text())["status"] == "finished"
    # finished: nothing left to resume
    again = run_cli(["tune", "known", "--resume"], project=project)
    assert again.code == 2 and "nothing to resume" in again.output
    # the server the killed run left was stopped before the search went on
    assert tune["stopped_leftovers"] == left
    assert _servers(project) == []


def test_resume_is_refused_after_the_spec_changed_and_a_plain_rerun_is_not_a_resume() -> None:
    from variantctl.errors import VariantctlError
    from variantctl.tune.model import Budget, Choices, Objective, TuneSpec
    from variantctl.usecases.tune import check_resume, spec_fingerprint

    spec = TuneSpec(name="t", source="tunes/t.yaml", variant="v",
                    space=(Choices("args.max-num-seqs", (8, 16), origin="t.yaml:3"),),
                    objective=Objective("maximize", "output_throughput"),
                    budget=Budget(launches=4))
    moved = TuneSpec(name="t", source="tunes/t.yaml", variant="v",
                     space=(Choices("args.max-num-seqs", (8, 16), origin="t.yaml:9"),),
                     objective=Objective("maximize", "output_throughput"),
                     budget=Budget(launches=4))
    assert spec_fingerprint(spec) == spec_fingerprint(moved)  # lines moved: same search
    state = {"status": "running", "spec": spec_fingerprint(spec), "rounds": 3}
    assert check_resume(spec, state, resume=True, path="p") == 3
    assert check_resume(spec, None, resume=False, path="p") == 0
    assert check_resume(spec, {**state, "status": "finished"}, resume=False, path="p") == 0
    bigger = TuneSpec(name="t", source="tunes/t.yaml", variant="v", space=spec.space,
                      objective=spec.objective, budget=Budget(launches=8))
    with pytest.raises(VariantctlError) as exc:
        check_resume(bigger, state, resume=True, path="p")
    assert exc.value.exit_code == 3 and "changed since the interrupted run" in exc.value.message
    with pytest.raises(VariantctlError) as exc:
        check_resume(spec, state, resume=False, path="p")
    assert exc.value.exit_code == 3 and "--resume" in str(exc.value.hint)
