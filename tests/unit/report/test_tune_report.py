"""``variantctl report --tune NAME``: a finished tune's result, read back from its state
through the run store, as report sections — the verdict, the trials in order, the
objective-per-trial and best-so-far plot, each setting's effect and the pruned and failed
candidates with their reasons."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.unit.report.builders import level, record, result, store_run
from tests.unit.report.pngcheck import png_ok
from tests.unit.sweeps.test_tune_search import SPEC, StandInLab
from tests.unit.sweeps.test_tune_spec import parse
from variantctl.jsontypes import JsonObject
from variantctl.runs.store import RunStore
from variantctl.tune.result import result_json
from variantctl.tune.search import run_search
from variantctl.tune.verdict import decide, recommend

Cli = Callable[..., CliResult]


def tune_state(spec_text: str = SPEC, *, name: str = "t",
               written: str | None = None) -> JsonObject:
    """A finished tune's state as ``run_tune`` writes it: the stand-in lab's search
    (throughput = max-num-seqs; 4 predicted, 8 failed before, 16 reused, 32 fails)."""
    spec = replace(parse(spec_text), name=name)
    log = run_search(spec, StandInLab())
    verdict = decide(log, maximize=spec.objective.maximize)
    rec = recommend(verdict, log, {}, maximize=spec.objective.maximize)
    return {"tune": spec.name, "spec": "0" * 16, "status": "finished",
            "started_at": "2026-07-14T10:00:00+00:00", "rounds": 5, "resumed": False,
            "finished_at": "2026-07-14T10:42:00+00:00", "launches": log.launches,
            "result": result_json(spec, log, verdict, rec, written=written)}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    return p


def _store_tune(project: Path, name: str, state: JsonObject) -> None:
    RunStore(project / "runs").write_tune_state(name, state)


def _rows(md: str, title: str) -> list[list[str]]:
    """The rows of the Markdown table headed ``**title**`` (or, the section's own, by
    the section's heading), cells stripped."""
    head = f"**{title}**" if f"**{title}**" in md else f"## {title}"
    block = md.split(head, 1)[1].split("\n\n", 2)[1]
    return [[c.strip() for c in line.strip("|").split(" | ")]
            for line in block.splitlines()[2:] if line.startswith("|")]


def test_a_tune_report_has_its_trials_in_order_plot_effects_and_dropped_candidates(
        run_cli: Cli, project: Path) -> None:
    state = tune_state(written="/p/variants/base-best.yaml")
    _store_tune(project, "t", state)
    got: Any = state["result"]
    trials: list[dict[str, Any]] = got["trials"]
    out = project / "rep"
    res = run_cli(["report", "--tune", "t", "--out", str(out)], project=project)
    assert res.code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[:2] == [f"report: {out / 'report.md'}", f"  plot: {out / 'tune.png'}"]
    assert lines[2].startswith("Tune t: winner max-num-seqs=")
    md = (out / "report.md").read_text()
    assert md.startswith("# Tune t\n\n_tune t · ")
    # the tune alone: no empty run sections under it
    assert "## Runs" not in md and "No benchmark results" not in md
    # every trial in the order proposed, with n, mean, interval, state and reason
    rows = _rows(md, "Trials in order")
    assert [r[0] for r in rows] == [str(i) for i in range(len(trials))]
    assert rows[0][1:4] == ["(base)", "measured", str(trials[0]["launches"])]
    by_label = {r[1]: r for r in rows}
    assert by_label["max-num-seqs=4"][2:] == ["predicted", "0", "–", "–", "–", "rule says no"]
    assert by_label["max-num-seqs=8"][2] == "historical"
    assert by_label["max-num-seqs=8"][7] == "run x-1 ended failed"
    assert by_label["max-num-seqs=16"][2] == "reused"
    assert by_label["max-num-seqs=16"][7] == "measured before: run old-1"
    for r, t in zip(rows, trials, strict=True):
        assert r[4] == ("–" if t["objective"] is None else f"{t['objective']:.4g}")
        ci = t["ci95"]
        assert r[5] == ("–" if ci is None else f"{ci[0]:.4g} … {ci[1]:.4g}")
        assert r[6] == (t["run_id"] or "–")  # the trial's last launch
    # the plot beside it, linked, drawn
    assert "![Tune t: objective per trial and best so far](tune.png)" in md
    assert png_ok((out / "tune.png").read_bytes()) == (700, 480)
    # the candidates that gave no kept objective, each with its reason
    dropped = _rows(md, "Pruned and failed candidates")
    assert {r[1]: (r[2], r[3]) for r in dropped}["max-num-seqs=4"] == (
        "predicted", "rule says no")
    assert {r[2] for r in dropped} <= {"pruned", "failed", "predicted", "historical"}
    assert len(dropped) == sum(t["state"] in ("pruned", "failed", "predicted",
                                              "historical") for t in trials)
    # the verdict, the variant written, each setting's effect (or why there is none)
    assert "beats the base variant beyond the noise (Welch, 95 %)." in md
    assert "Wrote /p/variants/base-best.yaml." in md
    importance = got["importance"]
    if importance:
        assert _rows(md, "Importance")[0][0] == next(iter(importance))
    else:
        assert "## Each setting's effect\n\nNot computed: " in md


def test_the_best_so_far_is_the_running_best_trial_by_trial() -> None:
    from variantctl.report.tuneplot import tune_curve
    from variantctl.report.tuneresult import tune_result

    for spec, higher in ((SPEC, True),
                         (SPEC.replace("maximize: output_throughput", "minimize: ttft_p90"),
                          False)):
        t = tune_result(tune_state(spec), "t.json")
        curve = tune_curve(t)
        measured = [(x.number, x.objective) for x in t.trials if x.objective is not None]
        assert [(p.x, p.y) for p in curve.points] == measured
        # a step at each new best (higher or lower, as the objective says), held to the
        # last trial
        running: list[tuple[float, float]] = []
        for n, y in measured:
            if not running or (y > running[-1][1] if higher else y < running[-1][1]):
                running.append((n, y))
        assert list(curve.best[:len(running)]) == running
        assert curve.best[-1] == (len(t.trials) - 1, running[-1][1])
        top = max(y for _, y in measured) if higher else min(y for _, y in measured)
        assert running[-1][1] == top
        assert curve.missing == tuple(float(x.number) for x in t.trials
                                      if x.objective is None)
    # maximised, throughput = max-num-seqs rises over the search: several steps
    high = tune_curve(tune_result(tune_state(), "t.json"))
    assert len({b[1] for b in high.best}) > 1
    assert high.pick is not None and high.winner


def test_no_winner_is_said_and_a_tune_adds_to_a_report_of_runs(
        run_cli: Cli, project: Path) -> None:
    # one launch only: nothing launched twice, so no winner and no interval
    _store_tune(project, "small", tune_state(SPEC.replace("launches: 12", "launches: 1"),
                                                name="small"))
    store_run(RunStore(project / "runs"), record("aaaaaaaaaa-1", "base"), [result([
        level(1, agg=8.0, ttft_p90_ms=100.0, tps_p10=8.0, tps_p50=8.0)])])
    out = project / "rep"
    res = run_cli(["report", "aaaaaaaaaa-1", "--tune", "small", "--format", "html",
                   "--out", str(out), "--json"], project=project)
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["summary"][0] == ("Tune small: no winner — no configuration was launched "
                                 "twice: no winner can be told from the noise (raise the "
                                 "budget).")
    html = (out / "report.html").read_text()
    # the tune's sections first, then the runs'
    assert html.index("<h2>Tune small: verdict and trials</h2>") < html.index("<h2>Runs</h2>")
    assert "<caption>Trials in order</caption>" in html
    assert "No variant written." in html
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"',
                        html)
    alts = [a for a, _ in images]
    assert "Tune small: objective per trial and best so far" in alts
    for _, b64 in images:
        png_ok(base64.b64decode(b64))


@pytest.mark.parametrize("as_json", [False, True])
def test_an_unknown_tune_is_one_error_line_exit_2(run_cli: Cli, project: Path,
                                                  as_json: bool) -> None:
    res = run_cli(["report", "--tune", "nosuch", *(["--json"] if as_json else [])],
                  project=project)
    assert res.code == 2
    assert "Traceback" not in res.output
    if as_json:
        err = json.loads(res.stdout)["error"]
        assert err["kind"] == "not-found" and "no tune 'nosuch' has run here" in err["message"]
    else:
        (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert line.startswith("error: no tune 'nosuch' has run here (no ")
        assert str(project / "runs" / "tunes" / "nosuch.json") in line


def test_an_unfinished_old_or_damaged_tune_state_is_one_error(run_cli: Cli,
                                                              project: Path) -> None:
    running = tune_state()
    running["status"] = "running"
    _store_tune(project, "run", running)
    old = tune_state()
    del old["result"]
    _store_tune(project, "old", old)
    bad = tune_state()
    damaged: Any = bad["result"]
    damaged["trials"][0]["launches"] = "three"
    _store_tune(project, "bad", bad)
    for name, message in (("run", "tune run has not finished"),
                          ("old", "tune old's state has no result"),
                          ("bad", "field 'result.trials[0].launches' should be an integer")):
        res = run_cli(["report", "--tune", name], project=project)
        assert res.code == 2, res.output
        assert res.stderr.startswith("error: ") and message in res.stderr, res.stderr
    res = run_cli(["report", "--tune", "../run"], project=project)  # never a path
    assert res.code == 2 and "no tune '../run'" in res.stderr
    res = run_cli(["report"], project=project)
    assert res.code == 2 and res.stderr.startswith("error: give a sweep, runs or --tune")


def test_a_tune_keeps_its_result_in_its_state_and_report_shows_it(
        tmp_path: Path, run_cli: Cli) -> None:
    """End to end on the FAKE server: `tune` writes the result it prints into
    runs/tunes/NAME.json, and `report --tune` reads it back from there."""
    from tests.unit.sweeps.test_tune_known_answer import _project, _tune

    project = _project(tmp_path / "p", seed=2)
    spec = project / "tunes" / "known.yaml"
    spec.write_text(spec.read_text().replace("launches: 12", "launches: 5")
                    + "stages: {repeats: 2, max_repeats: 2}\n")
    tune = _tune(run_cli, project)
    state = json.loads((project / "runs" / "tunes" / "known.json").read_text())
    assert state["status"] == "finished" and state["result"] == tune
    out = project / "rep"
    res = run_cli(["report", "--tune", "known", "--out", str(out)], project=project)
    assert res.code == 0, res.output
    rows = _rows((out / "report.md").read_text(), "Trials in order")
    assert rows[0][1] == "(base)"
    assert [int(r[3]) for r in rows] == [t["launches"] for t in tune["trials"]]
    assert sum(int(r[3]) for r in rows) == tune["launches"] <= 5
    # the sweep of its first batch beside it: the tune's sections, then the runs'
    res = run_cli(["report", "--tune", "known", "tune-known-r001", "--out",
                   str(project / "rep2")], project=project)
    assert res.code == 0, res.output
    md = (project / "rep2" / "report.md").read_text()
    assert md.startswith("# Tune known\n\n_tune known, sweep tune-known-r001 · ")
    assert md.index("## Tune known: verdict and trials") < md.index("## Runs") \
        < md.index("## Results")


def test_tune_names_complete_after_the_option(project: Path) -> None:
    from tests.unit.core.test_completion import complete

    _store_tune(project, "decode", tune_state(name="decode"))
    _store_tune(project, "prefill", tune_state(name="prefill"))
    assert complete(project, "variantctl report --tune ") == ["decode", "prefill"]
    assert complete(project, "variantctl report --tune pre") == ["prefill"]


def test_a_secret_setting_or_reason_is_masked_in_a_tune_report(run_cli: Cli,
                                                               project: Path) -> None:
    state = tune_state()
    got: Any = state["result"]
    got["trials"][1]["settings"] = {"env.HF_TOKEN": "hf_tunesecret1"}
    got["trials"][1]["reason"] = "exited: vllm serve --api-key sk-tunesecret2 failed"
    _store_tune(project, "t", state)
    out = project / "rep"
    res = run_cli(["report", "--tune", "t", "--out", str(out)], project=project)
    assert res.code == 0, res.output
    md = (out / "report.md").read_text()
    assert "| 1 | HF_TOKEN=*** | failed | exited: vllm serve --api-key *** failed |" in md
    assert "tunesecret" not in md
