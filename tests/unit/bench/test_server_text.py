"""What a server says reaches the terminal through the one control-character filter
(issue 19 item 8): a model id and log lines holding OSC/CSI escapes, in ``bench``,
``launch`` and ``runs show``.

The server is the HOSTILE mode ``escapes`` of tests/support/fake_openai_server.py (a
labelled test double): its model id and a log line carry a window-title OSC, a
clear-screen CSI, a colour and a C1 CSI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.bench_project import FAKE_OPENAI, make_bench_project
from tests.support.fake_openai_server import spawn
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode

Run = Callable[..., CliResult]
RAW = ("\x1b", "\x07", "\x9b")
SHOWN = "\\x1b]0;pwned\\x07"


@pytest.fixture
def project(tmp_path: Path, run_cli: Run) -> Iterator[Path]:
    root = make_bench_project(tmp_path / "proj")
    (root / "variants" / "fake-escapes.yaml").write_text(
        "description: HOSTILE fake server (a test double) whose log holds terminal escapes\n"
        f"command: {json.dumps(['python', str(FAKE_OPENAI)])}\n"
        "port: 18100\nargs:\n  hostile: escapes\n  exit-after-log: true\n"
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
        assert "model fake-model\\x1b]0;pwned\\x07\\x1b[2J" in res.stdout
        # JSON keeps the id as the server sent it (json escapes it; scripts get the truth)
        res = run_cli(["bench", "--url", url, "--requests", "1", "--output-len", "2",
                       "--warmup", "off", "--json"], project=project)
    assert json.loads(res.stdout)["target"]["model"] == "fake-model\x1b]0;pwned\x07\x1b[2J"


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
