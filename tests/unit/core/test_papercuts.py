"""A newcomer's papercuts (issue 20.7), each pinned by what the user reads."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from rich.console import Console

from variantctl.hostmodel import Host
from variantctl.launch.servers import ServerStatus
from variantctl.render.servers import ps_blocks, ps_rows
from variantctl.runs.record import ServerRecord
from variantctl.targets.connect import HostOutcome

REPO = Path(__file__).resolve().parents[3]


def _text(blocks: list) -> str:  # type: ignore[type-arg]
    console = Console(width=200, record=True, color_system=None)
    for block in blocks:
        console.print(block.body)
    return console.export_text()


def test_top_level_help_names_every_kind_of_host(run_cli, capsys) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(["--help"])
    assert res.code == 0
    assert "on local, SSH and SLURM hosts" in " ".join(capsys.readouterr().out.split())


def test_ps_shows_the_host_a_server_was_launched_on() -> None:
    """Host ``cpu`` (this machine, local's work directory): `ps` asks ``local`` by
    default and used to list the server under HOST local."""
    rec = ServerRecord(variant="cpu-eager", host="cpu", pid=4242, port=8101,
                       log="/w/logs/cpu-eager.log", script="s", pid_file="p",
                       started_at="2026-12-01T09:00:00+00:00")
    outcomes = [HostOutcome(Host(name="local"), [ServerStatus(rec, (4242,), True, 200)])]
    now = datetime(2026, 12, 1, 9, 1, tzinfo=timezone.utc)
    (row,) = ps_rows(outcomes, now)
    assert (row["host"], row["listed_by"]) == ("cpu", "local")
    lines = _text(ps_blocks(outcomes, now)).splitlines()
    assert lines[1].split()[:2] == ["cpu", "cpu-eager"], lines
    same = [HostOutcome(Host(name="cpu"), [ServerStatus(rec, (4242,), True, 200)])]
    assert "listed_by" not in ps_rows(same, now)[0]


def test_a_rule_named_after_its_signature_is_said_once(run_cli) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(["sweep", "cpu-smoke", "--dry-run"])
    assert res.code == 0, res.output
    assert "skip: predicted by batched-tokens-below-model-len" in res.stdout
    assert "batched-tokens-below-model-len batched-tokens-below-model-len" not in res.stdout


def _project_with_cpu_smoke(tmp: Path) -> Path:
    import shutil

    project = tmp / "project"
    shutil.copytree(REPO / "variants", project / "variants")
    shutil.copytree(REPO / "sweeps", project / "sweeps")
    (project / "patchsets").mkdir()
    return project


def test_the_resume_plan_shows_a_measured_point_as_done_and_leaves_it_out_of_the_eta(
        run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    project = _project_with_cpu_smoke(tmp_path)
    fresh = json.loads(run_cli(["sweep", "cpu-smoke", "--dry-run", "--json"],
                               project=project).stdout)["plan"]
    first = fresh["points"][0]
    run_dir = project / "runs" / "5e951aaaaa-1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text("{}")
    (run_dir / "bench-1.json").write_text("{}")
    state = {"schema": "variantctl.sweep/1", "sweep": "cpu-smoke", "status": "interrupted",
             "points": [{"index": 1, "name": first["name"], "point_key": first["point_key"],
                         "status": "measured", "run_id": "5e951aaaaa-1",
                         "run_dir": str(run_dir), "benchmarks": ["bench-1.json"],
                         "timings": {"time_to_ready_s": 38.0, "bench_s": 4.0}}]}
    (project / "runs" / "sweeps").mkdir()
    (project / "runs" / "sweeps" / "cpu-smoke.json").write_text(json.dumps(state))

    res = run_cli(["sweep", "cpu-smoke", "--resume", "--dry-run"], project=project)
    assert res.code == 0, res.output
    row = next(line for line in res.stdout.splitlines() if first["name"] in line)
    assert "done: measured, run 5e951aaaaa-1 (kept by --resume)" in row
    assert row.rstrip().endswith("(kept by --resume)")  # no ETA of its own
    assert "5 points, 3 to run, 1 done before, 1 skipped" in res.stdout
    plan = json.loads(run_cli(["sweep", "cpu-smoke", "--resume", "--dry-run", "--json"],
                              project=project).stdout)["plan"]
    assert plan["points"][0]["done"] == "measured, run 5e951aaaaa-1"
    assert plan["points"][0]["eta_s"] == 0
    assert plan["eta_s"] == round(fresh["eta_s"] - first["eta_s"], 1)
    # without --resume the earlier result is not kept: the plan runs it again
    again = json.loads(run_cli(["sweep", "cpu-smoke", "--dry-run", "--json"],
                               project=project).stdout)["plan"]
    assert again["points"][0]["done"] is None and again["points"][0]["eta_s"] > 0
    assert again["eta_s"] > plan["eta_s"]


LONG = ("max_num_batched_tokens (64) is smaller than max_model_len (512): vLLM refuses to "
        "start without chunked prefill; raise --max-num-batched-tokens to at least 512")


def test_a_failed_points_note_is_read_whole_below_the_table() -> None:
    from variantctl.render.sweep import result_blocks
    from variantctl.runs.sweepstate import SWEEP_SCHEMA, SweepDoc

    doc = {"sweep": "cpu-smoke", "status": "done", "points": [
        {"index": 1, "name": "cpu-base@cpu-smoke-01", "host": "cpu", "status": "measured",
         "run_id": "5e951aaaaa-1", "timings": {"time_to_ready_s": 41.2, "bench_s": 3.3}},
        {"index": 5, "name": "cpu-base@cpu-smoke-05", "host": "cpu", "status": "failed",
         "run_id": "7e951aaaaa-1", "signature": "batched-tokens-below-model-len",
         "message": LONG, "timings": {}}]}
    doc["points"].append(
        {"index": 6, "name": "cpu-base@cpu-smoke-06", "host": "cpu", "status": "skipped",
         "skip": {"reason": "predicted", "rule": "batched-tokens-below-model-len",
                  "signature": "batched-tokens-below-model-len", "message": LONG},
         "timings": {}})
    out = _text(result_blocks(SweepDoc.from_json({"schema": SWEEP_SCHEMA, **doc}, source="t"),
                              "/state.json"))
    rows = out.splitlines()
    assert rows[3].split()[-2:] == ["batched-tokens-below-model-len", "(below)"], out
    assert "batched-tokens-below-model-len batched-tokens-below-model-len" not in out
    assert rows[2].split()[-2:] == ["batched-tokens-below-model-len", "(below)"], out
    assert rows[1].split()[3] == "measured"
    # the message in full, at the page's width, not a word per line in a narrow column
    joined = " ".join(out.split())
    assert f"#5 cpu-base@cpu-smoke-05: batched-tokens-below-model-len: {LONG}" in joined


def test_the_runs_table_keeps_a_verdict_whole() -> None:
    from variantctl.render.runs import runs_table

    row = {"run_id": "7e951aaaaa-1", "created_at": "2026-12-01T09:00:00+00:00",
           "variant": "cpu-batched-tokens", "host": "cpu", "verdict": "failed",
           "signature": "batched-tokens-below-model-len", "expect_ok": True,
           "time_to_ready_s": None,
           "facts": {"vllm_version": "0.32.0", "engine": "V1", "max_seq_len": 512,
                     "attention_backend": "CPU_ATTN", "kv_cache_tokens": 1048576}}
    console = Console(width=100, record=True, color_system=None)
    console.print(runs_table([row]))
    out = console.export_text()
    assert "failed batched-tokens-below-model-len" in out, out


def test_an_error_naming_a_long_path_stays_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The test console is 200 columns, like a wide terminal: a message naming a path
    longer than that was folded into two lines, so `grep '^error:'` lost its end."""
    project = tmp_path.joinpath(*(["deep" * 10] * 6), "project")
    (project / "patchsets").mkdir(parents=True)
    (project / "patchsets" / "p.yaml").write_text("description: x\nmodules: [1\n")
    for cmd in (["patch", "list"], ["apply", "p", "--root", str(tmp_path)]):
        res = run_cli(cmd, project=project)
        assert res.code == 2, res.output
        (line,) = [ln for ln in res.stderr.splitlines() if not ln.startswith("hint: ")]
        assert line.startswith(f"error: {project}/patchsets/p.yaml:") and len(line) > 200
