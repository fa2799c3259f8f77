"""--json: errors are JSON objects too, every command's top level has one shape,
bad projects and unknown names are exit 2 (README, "Commands")."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, CliResult
from variantctl.env import find_project_dir
from variantctl.errors import ConfigError, NotFoundError, TargetError, VariantctlError
from variantctl.exitcodes import ExitCode

Run = Callable[..., CliResult]
ERROR_KEYS = {"kind", "message", "hint", "where"}
BEFORE = REPO / "tests" / "fixtures" / "patching" / "eager_allreduce" / "v062_model_config"
LOG_TEXT = ("INFO 07-14 10:00:01 api_server.py:1 vLLM API server version 0.6.3\n"
            "INFO 07-14 10:00:02 launcher.py:2 Route: /health, Methods: GET\n")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Two variants on a ``local`` host whose workdir and patch root live in tmp_path."""
    p = tmp_path / "project"
    (p / "variants").mkdir(parents=True)
    (p / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", p / "patchsets")
    root = tmp_path / "root"
    (root / "vllm" / "engine").mkdir(parents=True)
    shutil.copy(BEFORE / "before.py", root / "vllm" / "engine" / "arg_utils.py")
    (p / "variants" / "hosts.yaml").write_text(
        f"local:\n  workdir: {tmp_path / 'work'}\n  site_roots: [{root}]\n")
    (p / "variants" / "base.yaml").write_text(
        "host: local\nmodel: /models/m\nport: 8100\nargs:\n  max-model-len: 512\n")
    (p / "variants" / "eager.yaml").write_text("extends: base\nargs:\n  enforce-eager: true\n")
    (p / "server.log").write_text(LOG_TEXT)
    return p


def json_error(res: CliResult, code: int) -> dict[str, Any]:
    """The ``error`` object of a failed --json command (its only stdout), checked."""
    assert res.code == code, res.output
    doc = json.loads(res.stdout)
    assert set(doc) == {"error"}, doc
    assert set(doc["error"]) == ERROR_KEYS, doc
    # the person still gets the usual line on stderr
    assert "error:" in res.stderr.lower() and "Traceback" not in res.output
    err: dict[str, Any] = doc["error"]
    return err


# -- the shape of results -------------------------------------------------------------


def test_every_command_prints_one_json_object(run_cli: Run, project: Path, tmp_path: Path) -> None:
    root = str(tmp_path / "root")
    commands: dict[str, tuple[list[str], set[str]]] = {
        "list": (["list", "--json"], {"variants"}),
        "show": (["show", "eager", "--json"], {"name"}),
        "render": (["render", "eager", "--format", "json"], {"name"}),
        "diff": (["diff", "base", "eager", "--format", "json"], {"changes"}),
        "check": (["check", "eager", "--json"], {"variants"}),
        "patch list": (["patch", "list", "--json"], {"patchsets", "errors"}),
        "patch show": (["patch", "show", "eager-allreduce", "--json"], {"operations"}),
        "patch diff": (["patch", "diff", "eager-allreduce", "--root", root, "--json"],
                       {"files"}),
        "status": (["status", "eager-allreduce", "--root", root, "--json"], {"reports"}),
        "status --hosts": (["status", "eager-allreduce", "--hosts", "local", "--json"],
                           {"hosts"}),
        "hosts": (["hosts", "--json"], {"hosts"}),
        "hosts check": (["hosts", "check", "local", "--json"], {"hosts"}),
        "classify": (["classify", str(project / "server.log"), "--json"], {"logs"}),
        "ps": (["ps", "--json"], {"servers", "errors"}),
        "stop": (["stop", "--all", "--json"], {"stopped", "errors"}),
        "locate": (["locate", "json", "--json"], {"results", "errors"}),
    }
    for name, (argv, keys) in commands.items():
        res = run_cli(argv, project=project)
        doc = json.loads(res.stdout)  # exactly one document
        assert isinstance(doc, dict), (name, doc)
        assert keys <= set(doc), (name, sorted(doc))
        # an "error" *object* is kept for a command that failed as a whole
        assert not isinstance(doc.get("error"), dict), (name, doc)
    res = run_cli(["status", "eager-allreduce", "--hosts", "local", "--json"], project=project)
    (per_host,) = json.loads(res.stdout)["hosts"]
    assert per_host["host"] == "local" and per_host["error"] is None
    assert per_host["result"]["reports"][0]["files"][0]["state"] == "pristine"


def test_per_host_and_per_file_errors_are_error_objects(run_cli: Run, project: Path) -> None:
    (project / "patchsets" / "broken.yaml").write_text("name: broken\noperations: [\n")
    res = run_cli(["patch", "list", "--json"], project=project)
    assert res.code == ExitCode.USAGE
    (bad,) = json.loads(res.stdout)["errors"]
    assert bad["file"].endswith("broken.yaml")
    assert set(bad["error"]) == ERROR_KEYS and bad["error"]["kind"] == "config"
    assert bad["error"]["where"].startswith(bad["file"] + ":")

    res = run_cli(["status", "eager-allreduce", "--hosts", "local,nohost", "--json"],
                  project=project)
    assert res.code == ExitCode.USAGE
    assert json_error(res, ExitCode.USAGE)["kind"] == "not-found"


# -- errors ---------------------------------------------------------------------------


def test_unknown_names_are_json_errors(run_cli: Run, project: Path) -> None:
    for argv in (["show", "nope", "--json"], ["render", "nope", "--format", "json"],
                 ["diff", "base", "nope", "--format", "json"], ["check", "nope", "--json"],
                 ["patch", "show", "nope", "--json"], ["ps", "--host", "nohost", "--json"]):
        err = json_error(run_cli(argv, project=project), ExitCode.USAGE)
        assert err["kind"] == "not-found", (argv, err)
        assert "nope" in err["message"] or "nohost" in err["message"], (argv, err)
        assert err["hint"], (argv, err)


def test_yaml_error_names_file_line_and_column(run_cli: Run, project: Path) -> None:
    bad = project / "variants" / "bad.yaml"
    bad.write_text("host: local\nargs:\n  max-model-len: [1\n")
    err = json_error(run_cli(["list", "--json"], project=project), ExitCode.USAGE)
    assert err["kind"] == "config"
    file, line, _column = err["where"].rsplit(":", 2)
    assert file.endswith("variants/bad.yaml") and int(line) >= 3
    assert err["message"].startswith(err["where"] + ": ")


def test_usage_errors_are_json_when_json_was_asked_for(run_cli: Run, project: Path) -> None:
    # click refuses the option before any callback ran: --json is found in argv
    err = json_error(run_cli(["list", "--json", "--bogus"], project=project), ExitCode.USAGE)
    assert err == {"kind": "usage", "message": "No such option '--bogus'.", "hint": None,
                   "where": None}
    err = json_error(run_cli(["render", "eager", "--format", "json", "--port", "0"],
                             project=project), ExitCode.USAGE)
    assert err["kind"] == "usage" and "--port" in err["message"]
    # without --json: no JSON at all, the usual message
    res = run_cli(["list", "--bogus"], project=project)
    assert (res.code, res.stdout) == (ExitCode.USAGE, "")
    # a log file called --json is an argument, not the option
    res = run_cli(["classify", "--", "--json"], project=project)
    assert res.code == ExitCode.USAGE and res.stdout == "" and "--json" in res.stderr


def test_classify_errors_take_the_common_path(run_cli: Run, project: Path) -> None:
    err = json_error(run_cli(["classify", "missing.log", "--json"], project=project),
                     ExitCode.USAGE)
    assert "missing.log" in err["message"] and err["kind"] == "usage"


def test_stop_unknown_variant_is_bad_input(run_cli: Run, project: Path) -> None:
    res = run_cli(["stop", "eagre"], project=project)
    assert res.code == ExitCode.USAGE, res.output
    assert res.stderr.startswith("error: unknown variant 'eagre'")
    assert "hint: did you mean" in res.stderr and "eager" in res.stderr
    err = json_error(run_cli(["stop", "eagre", "--json"], project=project), ExitCode.USAGE)
    assert err["kind"] == "not-found"
    # a known variant that is not running: nothing to do, as before
    res = run_cli(["stop", "eager"], project=project)
    assert res.code == 0, res.output
    assert "eager is not running on local" in res.stdout


def test_missing_or_foreign_project_is_bad_input(run_cli: Run, project: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nonexistent"
    res = run_cli(["--project", str(missing), "list"], project=project)
    assert res.code == ExitCode.USAGE
    assert res.stderr.startswith(f"error: --project {missing}: no such directory")
    err = json_error(run_cli(["--project", str(missing), "stop", "--all", "--json"],
                             project=project), ExitCode.USAGE)
    assert "no such directory" in err["message"]
    (tmp_path / "empty").mkdir()
    res = run_cli(["--project", str(tmp_path / "empty"), "ps"], project=project)
    assert res.code == ExitCode.USAGE and "not a variantctl project" in res.stderr
    monkeypatch.setenv("VARIANTCTL_PROJECT", str(missing))
    res = run_cli(["list"], project=project)
    assert res.code == ExitCode.USAGE
    assert res.stderr.startswith(f"error: VARIANTCTL_PROJECT {missing}: no such directory")
    # hosts is a group with its own --json: checked too
    res = run_cli(["hosts", "--json"], project=project)
    assert json_error(res, ExitCode.USAGE)["message"].startswith("VARIANTCTL_PROJECT")


def test_no_fallback_to_the_tools_own_checkout(tmp_path: Path) -> None:
    """Outside any project variantctl says so; it never picks its own source tree (where a
    user's launch would archive runs)."""
    outside = tmp_path / "somewhere"
    outside.mkdir()
    log = outside / "server.log"
    log.write_text(LOG_TEXT)
    assert find_project_dir(outside) is None
    env = {k: v for k, v in os.environ.items() if k != "VARIANTCTL_PROJECT"}
    env["VARIANTCTL_CACHE"] = str(tmp_path / "cache")
    res = subprocess.run([sys.executable, "-m", "variantctl", "list", "--json"], cwd=outside,
                         env=env, capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == ExitCode.USAGE, res.stdout + res.stderr
    assert json.loads(res.stdout)["error"]["message"] == \
        f"no variantctl project found at or above {outside}"
    assert "--project" in res.stderr
    # the log catalog ships with the package: classify needs no project
    res = subprocess.run([sys.executable, "-m", "variantctl", "classify", str(log), "--json"],
                         cwd=outside, env=env, capture_output=True, text=True, timeout=60,
                         check=False)
    assert json.loads(res.stdout)["logs"][0]["path"] == str(log), res.stderr


def test_error_objects() -> None:
    e = ConfigError("expected a mapping", source="v/a.yaml", line=3, column=5, key_path="args")
    assert e.to_json() == {"kind": "config", "message": "v/a.yaml:3:5: args: expected a mapping",
                           "hint": None, "where": "v/a.yaml:3:5"}
    assert NotFoundError("unknown variant 'x'", hint="h").to_json()["kind"] == "not-found"
    t = TargetError("cannot reach it", kind="unreachable", host="gpu1")
    assert (t.kind, t.where, t.exit_code) == ("unreachable", "gpu1", ExitCode.UNREACHABLE)
    t = TargetError("permission denied", kind="permission", host="local", path="/x/y")
    assert (t.where, t.exit_code) == ("/x/y", ExitCode.FAILED)
    assert TargetError("no key", kind="config", host="h").exit_code == ExitCode.USAGE
    assert TargetError("no sftp", kind="no-sftp", host="h").exit_code == ExitCode.UNREACHABLE
    assert VariantctlError("x", exit_code=ExitCode.CONFLICT).kind == "conflict"
    assert VariantctlError("x").kind == "usage"
