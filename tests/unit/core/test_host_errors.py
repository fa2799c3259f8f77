"""Every ``--hosts`` command reports a host it cannot use the same way (README, "Exit codes").

The unreachable host is a hosts.yaml entry pointing SSH at a closed port on
127.0.0.1: the connection is refused before any SSH is spoken, so no sshd is needed.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult
from tests.support.sshd import free_port
from variantctl.exitcodes import ExitCode, worst_exit_code

Run = Callable[..., CliResult]
BEFORE = REPO / "tests" / "fixtures" / "patching" / "eager_allreduce" / "v062_model_config"

# apply/status/rollback run in this order on the same project: the local host applies,
# reports applied and rolls back (each exit 0 on its own), so the unreachable host alone
# decides the code; ps and stop find no server on the local host (exit 0 on their own).
COMMANDS = {
    "apply": ["apply", "eager-allreduce"],
    "status": ["status", "eager-allreduce"],
    "rollback": ["rollback", "eager-allreduce"],
    "ps": ["ps"],
    "stop": ["stop", "--all"],
}


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, int]:
    p = tmp_path / "project"
    (p / "variants").mkdir(parents=True)
    (p / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", p / "patchsets")
    root = tmp_path / "root"
    (root / "vllm" / "engine").mkdir(parents=True)
    shutil.copy(BEFORE / "before.py", root / "vllm" / "engine" / "arg_utils.py")
    port = free_port()  # nothing listens there
    (p / "variants" / "hosts.yaml").write_text(
        f"local:\n  workdir: {tmp_path / 'work'}\n  site_roots: [{root}]\n"
        f"dead:\n  ssh:\n    host: 127.0.0.1\n    port: {port}\n    user: nobody\n"
        f"  site_roots: [/nonexistent]\n")
    return p, port


def _problem_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("error:", "hint:"))]


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_every_hosts_command_reports_an_unreachable_host_alike(
        run_cli: Run, project: tuple[Path, int], as_json: bool) -> None:
    proj, port = project
    expected = [
        f"error: dead: cannot reach nobody@127.0.0.1:{port}: connection refused",
        "hint: is the host up and sshd listening? (check HostName/Port in the ssh config)",
    ]
    for name, argv in COMMANDS.items():
        res = run_cli([*argv, "--hosts", "local,dead", *(["--json"] if as_json else [])],
                      project=proj)
        # one rule: the worst per-host code, and an unreachable host is 4
        assert res.code == ExitCode.UNREACHABLE, (name, res.output)
        # one form: the same error and hint lines, on stderr only, once
        assert _problem_lines(res.stderr) == expected, (name, res.stderr)
        assert "cannot reach" not in res.stdout or as_json, (name, res.stdout)
        assert "Traceback" not in res.output
        if as_json:
            doc = json.loads(res.stdout)
            # patch commands nest per host; ps/stop list the failed hosts under errors
            errors = ([h for h in doc["hosts"] if h["error"]] if "hosts" in doc
                      else doc["errors"])
            assert [e["host"] for e in errors] == ["dead"], (name, doc)
            err = errors[0]["error"]
            assert (err["kind"], err["where"]) == ("unreachable", "dead"), (name, err)
            assert f"error: {err['message']}" == expected[0]
            assert f"hint: {err['hint']}" == expected[1]


def test_the_worst_host_decides_whatever_the_order(run_cli: Run,
                                                   project: tuple[Path, int]) -> None:
    """locate: a module missing on the first host (1) does not hide the unreachable one (4)."""
    proj, _ = project
    for hosts in ("local,dead", "dead,local"):
        res = run_cli(["locate", "no_such_mod_xyz", "--hosts", hosts], project=proj)
        assert res.code == ExitCode.UNREACHABLE, (hosts, res.output)
        assert "no_such_mod_xyz is not on the path" in res.stderr
        assert re.search(r"^error: dead: cannot reach .*: connection refused$", res.stderr,
                         re.M), res.stderr
        assert _problem_lines(res.stderr)[-1].startswith("hint: is the host up")


def test_worst_exit_code_order() -> None:
    """0 < 3 (conflict) < 1 (failed) < 2 (bad input) < 4 (unreachable) < anything else."""
    assert worst_exit_code([]) == 0
    assert worst_exit_code([0, 3]) == 3
    assert worst_exit_code([3, 1]) == 1
    assert worst_exit_code([1, 2, 3]) == 2
    assert worst_exit_code([4, 2, 1, 3, 0]) == 4
    assert worst_exit_code([4, 5]) == 5
