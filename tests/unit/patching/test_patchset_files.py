"""Patchset YAML: the shipped file loads; every kind of bad input names file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, CliResult
from variantctl.config.patchsets import load_patchset, load_patchset_file
from variantctl.errors import ConfigError, NotFoundError


def test_shipped_eager_allreduce() -> None:
    ps = load_patchset(REPO / "patchsets", "eager-allreduce")
    assert ps.modules == ("vllm.engine.arg_utils",)
    assert [(o.kind, o.callee, o.keyword, o.from_, o.to) for o in ps.operations] == [
        ("set-keyword", "ModelConfig", "enforce_eager", "True", "self.enforce_eager"),
        ("set-keyword", "ParallelConfig", "disable_custom_all_reduce", "True",
         "self.disable_custom_all_reduce"),
    ]
    assert ps.operations[0].within == ("EngineArgs.create_model_config",
                                       "EngineArgs.create_engine_config")
    assert ps.backup_template == "{file}.bak_{date}_{slug}"


GOOD_OP = """\
  - op: set-keyword
    callee: ModelConfig
    keyword: enforce_eager
    from: "True"
    to: self.enforce_eager
"""

BAD = {
    "malformed": ("name: bad\nmodule: [a\n", 3, "invalid YAML"),
    "unknown-op": ("name: bad\nmodule: m\noperations:\n  - op: set-keywrd\n", 4,
                   "unknown operation 'set-keywrd'"),
    "unknown-key": ("name: bad\nmodule: m\noperations:\n" + GOOD_OP + "    colee: X\n", 9,
                    "unknown key 'colee'"),
    "unknown-top-key": ("name: bad\nmodul: m\noperations:\n" + GOOD_OP, 2,
                        "unknown key 'modul'"),
    "missing-module": ("name: bad\noperations:\n" + GOOD_OP, 1,
                       "missing required key 'module'"),
    "bad-expression": ("name: bad\nmodule: m\noperations:\n" + GOOD_OP.replace(
        "to: self.enforce_eager", "to: self.(x"), 8, "not a Python expression"),
    "same-from-to": ("name: bad\nmodule: m\noperations:\n" + GOOD_OP.replace(
        "to: self.enforce_eager", "to: ( True )"), 8, "are the same expression"),
    "bad-template": ("name: bad\nmodule: m\nbackup: '{file}.{when}'\noperations:\n" + GOOD_OP,
                     3, "unknown placeholder {when}"),
    "duplicate-key": ("name: bad\nmodule: m\nmodule: n\noperations:\n" + GOOD_OP, 3,
                      "duplicate key 'module'"),
    "missing-field": ("name: bad\nmodule: m\noperations:\n  - op: set-default\n"
                      "    function: f\n    from: '1'\n    to: '2'\n", 4,
                      "missing required key 'param'"),
    "custom-file-missing": ("name: bad\nmodule: m\noperations:\n  - op: custom\n"
                            "    file: nothere.py\n    class: X\n", 5, "not found next to"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_patchset_names_file_and_line(tmp_path: Path, case: str) -> None:
    text, line, message = BAD[case]
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_patchset_file(path)
    assert info.value.source == str(path)
    assert info.value.line == line, info.value.message
    assert message in info.value.message


def test_did_you_mean_for_operation_kind(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD["unknown-op"][0])
    with pytest.raises(ConfigError) as info:
        load_patchset_file(path)
    assert info.value.hint == "did you mean 'set-keyword'?"


def test_name_must_match_file(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text("name: bad\nmodule: m\noperations:\n" + GOOD_OP)
    with pytest.raises(ConfigError, match="does not match the file name"):
        load_patchset_file(path)


def test_unknown_patchset_did_you_mean() -> None:
    with pytest.raises(NotFoundError) as info:
        load_patchset(REPO / "patchsets", "eager-allreduse")
    assert info.value.hint == "did you mean 'eager-allreduce'?"


def _project_with(tmp_path: Path, name: str, text: str) -> Path:
    project = tmp_path / "proj"
    (project / "patchsets").mkdir(parents=True)
    (project / "patchsets" / f"{name}.yaml").write_text(text)
    return project


@pytest.mark.parametrize("command", [["patch", "show", "bad"], ["apply", "bad", "--root", "."],
                                     ["status", "bad", "--root", "."],
                                     ["rollback", "bad", "--root", "."],
                                     ["patch", "diff", "bad", "--root", "."]])
def test_cli_reports_bad_yaml_in_one_line(tmp_path: Path, run_cli, command: list[str]  # type: ignore[no-untyped-def]
                                          ) -> None:
    project = _project_with(tmp_path, "bad", BAD["unknown-op"][0])
    r: CliResult = run_cli(command, project=project, cwd=tmp_path)
    assert r.code == 2
    path = project / "patchsets" / "bad.yaml"
    assert r.stderr.splitlines()[0] == (
        f"error: {path}:4:9: operations[0].op: unknown operation 'set-keywrd'")
    assert "Traceback" not in r.output


def test_patch_list_and_show(run_cli) -> None:  # type: ignore[no-untyped-def]
    r: CliResult = run_cli(["patch", "list"])
    assert r.code == 0
    assert "eager-allreduce" in r.stdout and "vllm.engine.arg_utils" in r.stdout
    r = run_cli(["patch", "show", "eager-allreduce"])
    assert r.code == 0
    assert "self.disable_custom_all_reduce" in r.stdout
    assert "ParallelConfig(disable_custom_all_reduce=…) in EngineArgs.create_engine_config" \
        in r.stdout
    import json

    r = run_cli(["patch", "show", "eager-allreduce", "--json"])
    data = json.loads(r.stdout)
    assert [o["id"] for o in data["operations"]] == ["enforce-eager", "custom-all-reduce"]


def test_patch_list_reports_broken_files(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    project = _project_with(tmp_path, "bad", BAD["malformed"][0])
    (project / "patchsets" / "eager-allreduce.yaml").write_bytes(
        (REPO / "patchsets" / "eager-allreduce.yaml").read_bytes())
    r: CliResult = run_cli(["patch", "list"], project=project)
    assert r.code == 2
    assert "eager-allreduce" in r.stdout
    assert f"error: {project / 'patchsets' / 'bad.yaml'}:3" in r.stderr
