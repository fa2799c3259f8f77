"""A bench ``RunOutcome`` is a value: built once, the ``--profile`` breakdowns and the
stored path added by building a new one (issue 18.5), never by assigning to it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import make_env
from tests.unit.bench.test_render_bench import _result
from variantctl.bench.profile import Collector, LevelEvents
from variantctl.bench.profiledata import Event
from variantctl.bench.session import RunOutcome
from variantctl.cli.profileflow import after_profiled_run
from variantctl.exitcodes import ExitCode
from variantctl.runs.record import ServerRecord
from variantctl.runs.store import RunStore
from variantctl.targets.local import LocalTarget


def test_a_run_outcome_cannot_be_changed_after_it_is_built(tmp_path: Path) -> None:
    outcome = RunOutcome("cpu-eager", _result())
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.stored = tmp_path / "bench.json"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.profile = ()  # type: ignore[misc]
    assert outcome.stored is None and outcome.profile is None
    assert outcome.exit_code == ExitCode.OK


def test_after_profiled_run_returns_a_new_outcome_with_the_breakdowns(tmp_path: Path) -> None:
    env = make_env(tmp_path, tmp_path)
    collector = Collector(LocalTarget(), str(tmp_path))
    # a step of 10 ms with a 4 ms child, twice
    events = [Event("step", 0, 10_000_000, 7, 7, None, 0),
              Event("forward", 1_000_000, 4_000_000, 7, 7, "step", 1),
              Event("step", 12_000_000, 10_000_000, 7, 7, None, 0),
              Event("forward", 13_000_000, 4_000_000, 7, 7, "step", 1)]
    collector.levels.append(LevelEvents("c=1", 1, 0, events))
    record = ServerRecord("cpu-eager", "local", 1, 8000, "/l", "/s", "/p", "2026-01-01T00:00:00")
    before = RunOutcome("cpu-eager", _result())
    after = after_profiled_run(env, collector, before, record, runs=RunStore(tmp_path),
                               store=False, trace=None,
                               several=False)
    assert before.profile is None  # the measured outcome is left as it was
    assert after.result is before.result and after.label == "cpu-eager"
    assert after.profile is not None
    (level,) = after.profile
    assert level["level"] == "c=1" and level["concurrency"] == 1 and level["step"] == "step"
    assert level["events"] == 4
