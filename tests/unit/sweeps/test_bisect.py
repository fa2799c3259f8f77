"""``bisect RUN_A RUN_B`` (issue 21.3): which of the settings two runs differ in accounts
for their throughput difference. Real launches of the labelled FAKE OpenAI server
(tests/support/fake_openai_server.py: not vLLM): run A and run B differ in three settings,
of which only ``itl-ms`` (5 → 60 ms a token) changes the server's speed strongly; the
other two (``ttft-ms`` 20 → 22, an environment variable the fake ignores) do not. Runs
are benchmarked at concurrency 8 (the fake serves every stream at its own pace), so a
configuration's 24 requests take three requests' time."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.bench_project import make_bench_project, write_fake_variant
from variantctl.sweeps.bisect import Effect

Run = Callable[..., CliResult]

BENCH = ("bench:\n  concurrency: [8]\n  requests: 24\n  output_len: 8\n"
         "  ignore_eos: true\n  warmup: 'off'\n")


def _project(tmp_path: Path, points: list[str]) -> Path:
    project = make_bench_project(tmp_path / "proj", gpu_monitor=False)
    write_fake_variant(project, "fake", {"ttft-ms": 20, "itl-ms": 5}, python=sys.executable,
                       description="FAKE OpenAI-compatible server with known timing; not vLLM")
    (project / "sweeps").mkdir()
    include = "".join(f"  - {p}\n" for p in points)
    (project / "sweeps" / "ab.yaml").write_text(
        f"base: fake\nhosts: [local]\ninclude:\n{include}{BENCH}")
    return project


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    """Runs A and B, and A2: A's configuration run again (a separate launch)."""
    from tests.conftest import make_env
    from variantctl.cli import run

    tmp = tmp_path_factory.mktemp("bisect")
    project = _project(tmp, [
        "{args.ttft-ms: 20, args.itl-ms: 5, env.BISECT_TAG: a}",
        "{args.ttft-ms: 22, args.itl-ms: 60, env.BISECT_TAG: b}",
        "{args.ttft-ms: 20, args.itl-ms: 5, env.BISECT_TAG: a}",
    ])
    env = make_env(project, tmp / "cache")
    code = run(["sweep", "ab", "--json"], env)
    out = env.stdout.file.getvalue()  # type: ignore[attr-defined]
    assert code == 0, out + env.stderr.file.getvalue()  # type: ignore[attr-defined]
    a, b, a2 = (p["run_id"] for p in json.loads(out)["points"])
    return project, a, b, a2


@pytest.fixture
def two_runs(three_runs: tuple[Path, str, str, str]) -> tuple[Path, str, str]:
    project, a, b, _ = three_runs
    return project, a, b


def test_bisect_names_the_setting_that_makes_the_difference(
        run_cli: Run, two_runs: tuple[Path, str, str]) -> None:
    project, a, b = two_runs
    res = run_cli(["bisect", a, b, "--json"], project=project)
    assert res.code == 0, res.output
    out = json.loads(res.stdout)
    assert out["strategy"] == "one-at-a-time"
    assert {s["setting"] for s in out["settings"]} == {"args.itl-ms", "args.ttft-ms",
                                                       "env.BISECT_TAG"}
    assert out["found"]["settings"] == ["args.itl-ms"], out
    # itl 5 → 60 ms: B is far slower, and itl-ms alone holds most of it
    assert out["total"]["significant"] and out["total"]["delta_pct"] < -50
    assert out["found"]["significant"] and out["found"]["share"] > 0.8
    lo, hi = out["found"]["ci95_pct"]
    assert lo <= out["found"]["delta_pct"] <= hi
    # round 1 only: A, B and each setting alone
    assert out["rounds"] == 1 and out["launches"]["made"] == 5
    by = {m["configuration"]: m for m in out["measurements"]}
    assert by["env.BISECT_TAG"]["share"] < 0.5 and by["args.ttft-ms"]["share"] < 0.5
    # the rich table names it too
    again = run_cli(["bisect", a, b, "--resume"], project=project)
    assert again.code == 0, again.output
    assert "found: the setting args.itl-ms" in again.stdout, again.stdout


def test_bisect_dry_run_prints_the_cost_and_launches_nothing(
        run_cli: Run, two_runs: tuple[Path, str, str]) -> None:
    project, a, b = two_runs
    before = sorted(p.name for p in (project / "runs").iterdir())
    res = run_cli(["bisect", a, b, "--dry-run", "--json"], project=project)
    assert res.code == 0, res.output
    out = json.loads(res.stdout)
    # k = 3: A, B and three singles; then at most three pairs
    assert out["launches"] == {"first_round": 5, "at_most": 8}
    assert len(out["plan"]["points"]) == 5
    table = run_cli(["bisect", a, b, "--dry-run"], project=project)
    assert table.code == 0, table.output
    assert "5 launches in round 1, at most 8 in all" in table.stdout
    assert sorted(p.name for p in (project / "runs").iterdir()) == before


def _effect(subset: frozenset[int], share: float, significant: bool = True) -> Effect:
    delta = -50.0 * share
    return Effect(subset, delta, delta - 2, delta + 2, significant, share, 24)


def test_bisect_decides_pairs_and_halves() -> None:
    """The rounds after the first: a delta only a pair holds is found in round 2; more than
    4 settings are halved down to the one that holds the delta (pure: sweeps/bisect.py)."""
    from variantctl.sweeps.bisect import cost, decide, first_round

    f = frozenset
    assert cost(3) == (5, 8) and cost(1) == (2, 2) and cost(8) == (4, 8)
    total = _effect(f({0, 1, 2}), 1.0)
    singles = {f({i}): _effect(f({i}), 0.3) for i in range(3)}
    step = decide(3, singles, total)
    assert step.found is None and set(step.next) == {f({0, 1}), f({0, 2}), f({1, 2})}
    pairs = {**singles, f({0, 1}): _effect(f({0, 1}), 0.4), f({0, 2}): _effect(f({0, 2}), 0.9),
             f({1, 2}): _effect(f({1, 2}), 0.9, significant=False)}
    assert decide(3, pairs, total).found == f({0, 2})
    # k = 8: A, B and the halves {0..3} {4..7}; then {4, 5} {6, 7}; then {6} {7}
    assert first_round(8)[2:] == (f({0, 1, 2, 3}), f({4, 5, 6, 7}))
    seen = {f({0, 1, 2, 3}): _effect(f({0, 1, 2, 3}), 0.1),
            f({4, 5, 6, 7}): _effect(f({4, 5, 6, 7}), 0.95)}
    assert decide(8, seen, total).next == (f({4, 5}), f({6, 7}))
    seen |= {f({4, 5}): _effect(f({4, 5}), 0.0), f({6, 7}): _effect(f({6, 7}), 0.9)}
    assert decide(8, seen, total).next == (f({6}), f({7}))
    seen |= {f({6}): _effect(f({6}), 0.2), f({7}): _effect(f({7}), 0.3)}
    # neither of 6 and 7 alone holds half: they act together, the group is named
    assert decide(8, seen, total).found == f({6, 7})
    # B not beyond the noise when re-measured: nothing to explain
    assert decide(8, seen, _effect(f(range(8)), 1.0, significant=False)
                  ).found is None


def test_bisect_refuses_bad_input(run_cli: Run, two_runs: tuple[Path, str, str],
                                  tmp_path: Path) -> None:
    project, a, _ = two_runs
    cases = [
        (["bisect", a, "ffffffffff-9"], "no run 'ffffffffff-9'"),
        (["bisect", a, a], "same run"),
    ]
    for argv, want in cases:
        res = run_cli(argv, project=project)
        assert res.code == 2, res.output
        errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and want in errors[0], res.stderr
        assert "Traceback" not in res.output
    res = run_cli(["bisect", a, "nope", "--json"], project=project)
    assert res.code == 2 and json.loads(res.stdout)["error"], res.output


def test_bisect_refuses_identical_runs_other_hosts_and_runs_without_benchmarks(
        run_cli: Run, three_runs: tuple[Path, str, str, str], tmp_path: Path) -> None:
    shared, a, _, b = three_runs  # A and A2: two launches of one configuration
    # a copy: the run records below are edited
    project = shutil.copytree(shared, tmp_path / "proj", ignore=shutil.ignore_patterns("work-*"))
    res = run_cli(["bisect", a, b], project=project)
    assert res.code == 2, res.output
    assert "have the same configuration" in res.stderr and "Traceback" not in res.output
    # the same run record on another host; and one whose benchmarks list is empty
    run_b = next(p for p in (project / "runs").iterdir() if p.name.endswith(b))
    doc = json.loads((run_b / "run.json").read_text())
    doc["host"]["name"] = "gpu7"
    (run_b / "run.json").write_text(json.dumps(doc))
    res = run_cli(["bisect", a, b], project=project)
    assert res.code == 2 and "ran on host local" in res.stderr and "gpu7" in res.stderr
    doc["host"]["name"] = "local"
    doc["benchmarks"] = []
    (run_b / "run.json").write_text(json.dumps(doc))
    res = run_cli(["bisect", a, b], project=project)
    assert res.code == 2 and f"run {b} has no benchmark" in res.stderr, res.output
