"""Damaged run records, everywhere the same (issue 32): one validation (RunRecord.from_json)
names the file and the field for compare, bisect, report and trend, and ``runs trend``
names what it left out."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import measured_level, record, result, store_run
from variantctl.runs.store import RunStore

Cli = Callable[..., CliResult]


def _levels(seed: int) -> list:  # type: ignore[type-arg]
    return [measured_level(1, seed + r, repeat=r) for r in range(3)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    store = RunStore(p / "runs")
    for i in (1, 2, 3, 4):
        store_run(store, record(f"5e5e5e5e5e-{i}", "cpu-eager", args={"max-num-seqs": i}),
                  [result(_levels(10 * i))])
    return p


def _run_json(project: Path, run_id: str) -> Path:
    (path,) = (project / "runs").glob(f"*{run_id}/run.json")
    return path


def _damage_args(project: Path, run_id: str) -> Path:
    path = _run_json(project, run_id)
    doc = json.loads(path.read_text())
    doc["variant"]["args"] = ["--max-num-seqs", "2"]
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("args", [
    ["compare", "5e5e5e5e5e-1", "5e5e5e5e5e-2"],
    ["bisect", "5e5e5e5e5e-1", "5e5e5e5e5e-2", "--dry-run"],
    ["report", "5e5e5e5e5e-1", "5e5e5e5e5e-2"],
])
def test_a_list_where_the_args_object_belongs_is_named(
        run_cli: Cli, project: Path, args: list[str]) -> None:
    path = _damage_args(project, "5e5e5e5e5e-2")
    res = run_cli(args, project=project)
    assert res.code == 2, res.output
    assert f"{path}: field 'variant.args' should be an object" in res.stderr, res.stderr
    assert "internal error" not in res.output and "Traceback" not in res.output


def test_a_nested_value_among_the_settings_is_named(run_cli: Cli, project: Path) -> None:
    path = _run_json(project, "5e5e5e5e5e-2")
    doc = json.loads(path.read_text())
    doc["host"]["env"] = {"X": {"deep": 1}}
    path.write_text(json.dumps(doc))
    res = run_cli(["compare", "5e5e5e5e5e-1", "5e5e5e5e5e-2"], project=project)
    assert res.code == 2 and "field 'host.env.X' should be a scalar" in res.stderr


def test_trend_names_the_runs_it_left_out_as_damaged(run_cli: Cli, project: Path) -> None:
    _damage_args(project, "5e5e5e5e5e-2")
    bench = next(_run_json(project, "5e5e5e5e5e-3").parent.glob("bench-*.json"))
    bench.write_text("{not json")
    for target in ("5e5e5e5e5e", "cpu-eager"):
        res = run_cli(["runs", "trend", target, "--json"], project=project)
        assert res.code == 0, res.output
        doc = json.loads(res.stdout)["trend"]
        assert doc["runs"] == ["5e5e5e5e5e-1", "5e5e5e5e5e-4"]
        skipped = doc["skipped"]
        assert any(s.startswith("5e5e5e5e5e-2: ") and "variant.args" in s for s in skipped)
        assert any(s.startswith("5e5e5e5e5e-3: ") and bench.name in s for s in skipped)
    res = run_cli(["runs", "trend", "cpu-eager"], project=project)
    assert "left out (damaged) 5e5e5e5e5e-2: " in res.stderr
