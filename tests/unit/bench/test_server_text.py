"""What a server says reaches the terminal through the one control-character filter
(issue 19 item 8): a model id and log lines holding OSC/CSI escapes, in ``bench``,
``launch`` and ``runs show`` — and the siblings: ``compare`` (facts from logs), the
sweep result table, profile tables (names from files the server wrote), host errors.

The server is the HOSTILE mode ``escapes`` of tests/support/fake_openai_server.py (a
labelled test double): its model id and a log line carry a window-title OSC, a
clear-screen CSI, a colour and a C1 CSI.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult
from tests.support.bench_project import FAKE_OPENAI, make_bench_project
from tests.support.fake_openai_server import spawn
from tests.support.sshd import free_port
from tests.unit.report.builders import record, store_run
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.render.profile import breakdown_tables
from variantctl.render.sweep import host_error_blocks, result_blocks
from variantctl.runs.store import RunStore
from variantctl.runs.sweepstate import SWEEP_SCHEMA, SweepDoc

Run = Callable[..., CliResult]
RAW = ("\x1b", "\x07", "\x9b")
SHOWN = "\\x1b]0;pwned\\x07"


@pytest.fixture
def project(tmp_path: Path, run_cli: Run) -> Iterator[Path]:
    root = make_bench_project(tmp_path / "proj")
    (root / "variants" / "fake-escapes.yaml").write_text(
        "description: HOSTILE fake server (a test double) whose log holds terminal escapes\n"
        f"command: {json.dumps(['python', str(FAKE_OPENAI)])}\n"
        f"port: {free_port()}\nargs:\n  hostile: escapes\n  exit-after-log: true\n"
        "startup:\n  ready_timeout: 30\n  stall: 30\n")
    yield root
    run_cli(["stop", "--all", "--grace", "2"], project=root)


def assert_filtered(output: str) -> None:
    for c in RAW:
        assert c not in output, repr(c)
    assert SHOWN in output


def test_bench_shows_a_hostile_model_id_filtered(run_cli: Run, project: Path) -> None:
    with spawn("--fast", "--hostile", "escapes") as url:
        res = run_cli(["bench", "--url", url, "--requests", "2", "--output-len", "2",
                       "--warmup", "off"], project=project)
        assert res.code == 0, res.output
        assert_filtered(res.output)
        assert "model fake-model\\x1b]0;pwned\\x07\\x1b[2J\\x9b1m" in res.stdout
        # JSON keeps the id as the server sent it, every control character escaped
        # (C0 by json, DEL and C1 by json_text): scripts get the truth, terminals no CSI
        res = run_cli(["bench", "--url", url, "--requests", "1", "--output-len", "2",
                       "--warmup", "off", "--json"], project=project)
    for c in RAW:
        assert c not in res.stdout, repr(c)
    assert json.loads(res.stdout)["target"]["model"] == (
        "fake-model\x1b]0;pwned\x07\x1b[2J\x9b1m")


def test_launch_and_runs_show_print_log_lines_filtered(run_cli: Run, project: Path) -> None:
    res = run_cli(["launch", "fake-escapes", "--port", str(free_port()), "--grace", "2"],
                  project=project)
    assert res.code == ExitCode.FAILED, res.output
    assert_filtered(res.output)
    assert "| INFO loading \\x1b]0;pwned\\x07model\\x1b[2J\\x1b[31m red \\x9b1m" in res.stdout
    runs = json.loads(run_cli(["runs", "--json"], project=project).stdout)["runs"]
    (run_id,) = [r["run_id"] for r in runs if r["variant"] == "fake-escapes"]
    res = run_cli(["runs", "show", run_id], project=project)
    assert res.code == 0, res.output
    assert_filtered(res.output)
    assert "log:2: INFO loading \\x1b]0;pwned" in res.stdout


ESC_TEXT = "x\x1b]0;pwned\x07\x1b[2J"


def printed(blocks: Any) -> str:
    from rich.console import Console

    console = Console(width=300, record=True, color_system=None, file=io.StringIO())
    for b in blocks:
        body = getattr(b, "body", b)
        console.print(body, markup=getattr(b, "markup", None),
                      highlight=getattr(b, "highlight", None))
    return console.export_text()


def test_compare_prints_stored_facts_filtered(run_cli: Run, tmp_path: Path) -> None:
    project = tmp_path / "cmp"
    (project / "variants").mkdir(parents=True)
    store = RunStore(project / "runs")
    store_run(store, record("aaaaaaaaaa-1", "a", facts={"vllm_version": "0.32.0"}))
    store_run(store, record("bbbbbbbbbb-1", "b", facts={"vllm_version": ESC_TEXT}))
    res = run_cli(["compare", "aaaaaaaaaa-1", "bbbbbbbbbb-1"], project=project)
    assert res.code == 0, res.output
    assert_filtered(res.output)


def test_sweep_results_profile_tables_and_host_errors_are_filtered() -> None:
    doc = {"sweep": "s", "status": "done", "points": [
        {"index": 1, "name": "a@s-01", "host": "local", "status": "failed",
         "message": f"log says {ESC_TEXT}"}]}
    profile = {"level": "c=1", "events": 1, "points": [
        {"name": f"step {ESC_TEXT}", "parent": None, "calls": 1, "total_s": 1.0,
         "mean_ms": 1.0, "p50_ms": 1.0, "p99_ms": 1.0}]}
    error = VariantctlError(f"ssh said {ESC_TEXT}", hint=ESC_TEXT)
    state = SweepDoc.from_json({"schema": SWEEP_SCHEMA, **doc}, source="s")
    for blocks in (result_blocks(state, "/x/s.json"), breakdown_tables("v", [profile]),
                   host_error_blocks([("gpu1", error)])):
        assert_filtered(printed(blocks))


def test_sweep_progress_details_and_notes_are_filtered(tmp_path: Path) -> None:
    from tests.conftest import make_env
    from tests.unit.sweeps.test_executor import plan_on
    from variantctl.terminal.sweepprogress import ProgressPrinter

    plan, _ = plan_on(["h1"], 1, tmp_path)
    env = make_env(None, tmp_path)
    ui = ProgressPrinter(env, plan)
    ui.phase(plan.points[0], "failed", f"server said {ESC_TEXT}")
    ui.note(f"note {ESC_TEXT}")
    assert_filtered(env.stderr.file.getvalue())  # type: ignore[attr-defined]
