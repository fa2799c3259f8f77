"""Terminal lines are bounded and escaped (issue 32): text that comes from a file, a log
or a server (a stored run's message and evidence, facts, server records, a variant's
description, hosts.yaml values, an error message quoting a server) reaches a terminal
through :func:`variantctl.logs.bounded.clipped` — control characters shown as ``\\xNN``
and one piece cut to a bounded length — never raw and never 1 MB long."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.conftest import CliResult
from tests.unit.report.builders import record, store_run
from variantctl.errors import VariantctlError
from variantctl.hostmodel import Host
from variantctl.launch.servers import ServerStatus
from variantctl.logs.bounded import MAX_SHOWN, clipped, clipped_lines
from variantctl.render.hosts import host_rows, hosts_table
from variantctl.render.output import error_lines
from variantctl.render.runs import run_lines, runs_table
from variantctl.render.servers import ps_blocks
from variantctl.render.variant import diff_table
from variantctl.runs.record import ServerRecord
from variantctl.runs.store import RunStore
from variantctl.targets.connect import HostOutcome
from variantctl.variants.diff import Change

Run = Callable[..., CliResult]
#: a hostile piece of text: clear the screen, move to column 0, a 1 MB line
HOSTILE = "\x1b[2J\x1b]0;owned\x07\rX" + "A" * 1_000_000
#: the longest terminal line any of these may print
LONGEST = 2 * MAX_SHOWN + 200


def _safe(output: str) -> None:
    assert "\x1b" not in output and "\r" not in output and "\x07" not in output
    assert max(len(line) for line in output.splitlines()) <= LONGEST, \
        max(len(line) for line in output.splitlines())
    assert "\\x1b[2J" in output  # shown, not acted on


def _printed(*bodies: Any) -> str:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=250, color_system=None, record=True)
    for b in bodies:
        console.print(b, soft_wrap=True)
    return console.export_text()


def test_clipped_is_escaped_bounded_and_says_what_it_cut() -> None:
    got = clipped(HOSTILE, 100)
    assert got.startswith("\\x1b[2J\\x1b]0;owned\\x07\\x0dX")
    assert got.endswith(f" …[{len(HOSTILE) - 100} characters cut]")
    assert clipped("short") == "short"
    assert clipped_lines("a\x1b\nb") == "a\\x1b\nb"


def test_an_error_message_quoting_a_server_is_bounded(run_cli: Run) -> None:
    blocks = error_lines(f"server said: {HOSTILE}", f"hint {HOSTILE}")
    _safe(_printed(*(b.body for b in blocks)))
    from variantctl.terminal.failure import report_error

    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        report_error(VariantctlError(f"server said: {HOSTILE}", hint=HOSTILE))
    _safe(err.getvalue())


def test_runs_show_and_the_run_list_are_bounded(run_cli: Run, tmp_path: Path) -> None:
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    rec = record("aaaaaaaaaa-1", "one", verdict="failed", signature="oom",
                 evidence=((3, HOSTILE),), remediation=HOSTILE,
                 facts={"vllm_version": HOSTILE, "config": {"model": HOSTILE}})
    store = RunStore(p / "runs")
    store_run(store, rec)
    _safe("\n".join(run_lines(store.find("aaaa"), rec)))
    for res in (run_cli(["runs", "show", "aaaa"], project=p), run_cli(["runs"], project=p)):
        assert res.code == 0, res.output
        _safe(res.stdout)
    rows = [{"run_id": "r", "created_at": "2026", "variant": HOSTILE, "host": HOSTILE,
             "verdict": "ready", "signature": None, "expect_ok": True,
             "time_to_ready_s": 1.0, "facts": {"x": HOSTILE}},
            {"run_id": "e", "variant": "v", "error": {"message": HOSTILE}}]
    _safe(_printed(runs_table(rows)))


def test_ps_is_bounded(tmp_path: Path) -> None:
    rec = ServerRecord(variant="v\x1bq", host="h", pid=5, port=8000, log=HOSTILE, script="s",
                       pid_file="p", started_at="2026-12-01T09:00:00+00:00")
    st = ServerStatus(rec, (5,), True, 200, foreign=HOSTILE)
    outcomes = [HostOutcome(Host(name="h"), [st], None)]
    out = _printed(*(b.body for b in ps_blocks(outcomes, datetime(2026, 12, 1, 9, 1,
                                                                   tzinfo=UTC))))
    _safe(out)
    assert "v\\x1bq" in out


def test_hosts_and_variant_tables_are_bounded(run_cli: Run, tmp_path: Path) -> None:
    host = dataclasses.replace(Host(name="h"), workdir=HOSTILE, python="[red]py[/]")
    out = _printed(hosts_table(host_rows({"h": host})))
    _safe(out)
    assert "[red]py[/]" in out  # literal: never rich markup
    _safe(_printed(diff_table("a", "b", [Change("args", "x", HOSTILE, "y")])))
    p = tmp_path / "proj"
    (p / "variants").mkdir(parents=True)
    description = HOSTILE.replace("\x1b", "\\e").replace("\x07", "\\a").replace("\r", "\\r")
    (p / "variants" / "v.yaml").write_text(
        f'name: v\ncommand: [vllm, serve]\nmodel: m\ndescription: "{description}"\n')
    res = run_cli(["show", "v"], project=p)
    assert res.code == 0, res.output
    _safe(res.stdout)
