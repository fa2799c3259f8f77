"""A backup can never be the file itself (issue 8, family 2): backup and log templates
that resolve to the target, another managed file or nothing, or carry a format spec, a
conversion, a NUL or a nameless field, are refused when the file loads (exit 2, key
named), not when they are used."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.patching.conftest import EAGER, REL, root_args, snapshot
from variantctl.config.templates import backup_template_problem, log_template_problem

BEFORE = (EAGER / "v062_model_config" / "before.py").read_bytes()

BAD_BACKUPS = {
    '"{file}"': "names the file itself",
    '"{file:>99999999999}"': "has a format spec",
    '"{file}.{date:d}"': "has a format spec",
    '"{file!r}.bak"': "has a conversion",
    '"{file}.{}"': "has no name",
    '"{file}.{0}"': "has no name",
    '"{file}\\0.bak"': "NUL character",  # refused by the YAML loader or here
    '"{file}.{date.year}"': "unknown placeholder {date.year}",
    '".{file}.x.variantctl-tmp"': "names a variantctl temp file",
}


def _with_backup(project: Path, template: str) -> Path:
    """The shipped patchset with ``backup: TEMPLATE`` as its line 2."""
    path = project / "patchsets" / "eager-allreduce.yaml"
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(1, f"backup: {template}\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("template", sorted(BAD_BACKUPS))
def test_a_bad_backup_template_is_refused_at_load(project, make_roots, run_cli,  # type: ignore[no-untyped-def]
                                                  template: str) -> None:
    path = _with_backup(project, template)
    roots = make_roots(BEFORE, n=1)
    start = snapshot(roots)
    for cmd in (["apply", "eager-allreduce", *root_args(roots)], ["patch", "list"]):
        r: CliResult = run_cli(cmd, project=project)
        assert r.code == 2, (cmd, r.output)
        assert f"{path}:2:9: backup: " in r.stderr + r.stdout, r.output
        assert BAD_BACKUPS[template] in r.stderr + r.stdout, r.output
        assert "Traceback" not in r.output
    assert snapshot(roots) == start


def test_backup_file_itself_today_destroyed_the_original(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    """The probe of the issue, end to end: `backup: "{file}"` and --backup-template {file}
    are both refused; the original is untouched and no ledger names a missing backup."""
    roots = make_roots(BEFORE, n=1)
    r: CliResult = run_cli(["apply", "eager-allreduce", "--backup-template", "{file}",
                            *root_args(roots)], project=project)
    assert r.code == 2, r.output
    assert "--backup-template: backup template '{file}' names the file itself" in r.stderr
    assert (roots[0] / REL).read_bytes() == BEFORE
    assert not (roots[0] / ".variantctl" / "ledger.jsonl").exists()


def test_a_backup_naming_another_module_of_the_patchset_is_refused() -> None:
    problem = backup_template_problem("b{file}", ["pkg.a", "pkg.ba"])
    assert problem == "backup template 'b{file}' names ba.py, another file of the patchset"
    # the same template is fine when no other module is in that directory
    assert backup_template_problem("b{file}", ["pkg.a", "other.ba"]) is None
    assert backup_template_problem("{file}.bak_{date}_{slug}", ["pkg.a"]) is None


@pytest.mark.parametrize(("template", "message"), [
    ("{workdir}/logs/{name:>99999999999}.log", "has a format spec"),
    ("{workdir}/logs/{name!s}.log", "has a conversion"),
    ("{workdir}/logs/{}.log", "has no name"),
    ("{workdir}/logs/\0{name}.log", "contains a NUL character"),
    ("{workdir}/run/{name}.pid", "points into {workdir}/run/"),
    ("{workdir}/logs/../scripts/{name}.sh", "points into {workdir}/scripts/"),
    ("{workdir}", "names the work directory itself"),
    ("{workdir}/logs/", "names no file"),
])
def test_bad_log_templates(template: str, message: str) -> None:
    problem = log_template_problem(template)
    assert problem is not None and message in problem, problem


def test_a_bad_log_template_is_a_schema_error_naming_the_key(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "p"
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    (project / "variants" / "v.yaml").write_text(
        'port: 8000\nlog: "{workdir}/logs/{name:>99999999999}.log"\n')
    r: CliResult = run_cli(["render", "v", "--format", "json"], project=project)
    assert r.code == 2, r.output
    assert "v.yaml:2:6: log: placeholder {name:>99999999999} in log template has a format " \
        "spec" in r.stderr, r.stderr
    assert "Traceback" not in r.output
