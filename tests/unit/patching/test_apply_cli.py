"""apply / status / rollback / patch diff end to end on fixture roots (real files, real locks)."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.patching.conftest import EAGER, REL, root_args, snapshot
from variantctl.config.patchsets import load_patchset
from variantctl.targets.ledger import read_ledger
from variantctl.targets.local import LocalTarget
from variantctl.targets.patchrun import execute_apply

BEFORE = (EAGER / "v062_model_config" / "before.py").read_bytes()
AFTER = (EAGER / "v062_model_config" / "after.py").read_bytes()
TODAY = datetime.now(timezone.utc).strftime("%Y%m%d")


def backups(root: Path) -> list[Path]:
    return sorted((root / REL).parent.glob("arg_utils.py.bak_*"))


def test_full_cycle_status_diff_apply_status_rollback(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    os.chmod(roots[0] / REL, 0o640)
    start = snapshot(roots)
    args = root_args(roots)

    r: CliResult = run_cli(["status", "eager-allreduce", *args], project=project)
    assert r.code == 0, r.output
    assert r.stdout.count("pristine") == 6  # 2 ops + file line, per root
    assert "arg_utils.py:51" in r.stdout and "arg_utils.py:63" in r.stdout

    r = run_cli(["patch", "diff", "eager-allreduce", *args], project=project)
    assert r.code == 0, r.output
    assert r.stdout.count("-            enforce_eager=True,") == 2
    assert r.stdout.count("+            enforce_eager=self.enforce_eager,") == 2
    assert snapshot(roots) == start

    r = run_cli(["apply", "eager-allreduce", *args], project=project)
    assert r.code == 0, r.output
    assert "2 file(s) written in 2 root(s)" in r.stdout
    for root in roots:
        assert (root / REL).read_bytes() == AFTER
        (bak,) = backups(root)
        assert bak.name == f"arg_utils.py.bak_{TODAY}_eager_allreduce"
        assert bak.read_bytes() == BEFORE
        (rec,) = read_ledger(LocalTarget(), str(root))
        assert rec.action == "apply" and rec.patchset == "eager-allreduce"
        assert rec.backup == str(bak) and rec.tool_version
        assert not (root / ".variantctl" / "journal.json").exists()
    assert stat.S_IMODE(os.stat(roots[0] / REL).st_mode) == 0o640
    # the backup keeps the original's permission bits, so restoring it changes nothing else
    assert stat.S_IMODE(os.stat(backups(roots[0])[0]).st_mode) == 0o640

    r = run_cli(["apply", "eager-allreduce", *args], project=project)
    assert r.code == 0
    assert "already applied in every root; nothing to do" in r.stdout

    r = run_cli(["status", "eager-allreduce", *args, "--json"], project=project)
    assert r.code == 0
    (report,) = json.loads(r.stdout)["reports"]
    assert [f["state"] for f in report["files"]] == ["applied", "applied"]
    ops = report["files"][0]["operations"]
    assert [(o["state"], o["found"][0]["code"], o["found"][0]["line"]) for o in ops] == [
        ("applied", "self.enforce_eager", 51), ("applied", "self.disable_custom_all_reduce", 63)]

    r = run_cli(["rollback", "eager-allreduce", *args], project=project)
    assert r.code == 0, r.output
    assert "rollback: 2 file(s) written in 2 root(s)" in r.stdout
    assert snapshot(roots) == start  # identity on bytes, backups gone
    assert stat.S_IMODE(os.stat(roots[0] / REL).st_mode) == 0o640
    r = run_cli(["rollback", "eager-allreduce", *args], project=project)
    assert r.code == 0 and "not applied in every root" in r.stdout


def test_dry_run_writes_nothing(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    r: CliResult = run_cli(["apply", "eager-allreduce", "--dry-run", *root_args(roots)],
                           project=project)
    assert r.code == 0
    assert "dry run: 2 file(s) would change; nothing was written" in r.stdout
    assert snapshot(roots) == {str(root / REL): BEFORE for root in roots}
    assert not any((root / ".variantctl").exists() for root in roots)


def test_existing_backup_is_never_overwritten(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    (root,) = make_roots(BEFORE, n=1)
    seed = (root / REL).parent / f"arg_utils.py.bak_{TODAY}_eager_allreduce"
    seed.write_bytes(b"# an engineer's older backup\n")
    r: CliResult = run_cli(["apply", "eager-allreduce", "--root", str(root)], project=project)
    assert r.code == 0, r.output
    assert seed.read_bytes() == b"# an engineer's older backup\n"
    assert Path(str(seed) + ".1").read_bytes() == BEFORE
    r = run_cli(["rollback", "eager-allreduce", "--root", str(root)], project=project)
    assert r.code == 0
    assert seed.exists() and not Path(str(seed) + ".1").exists()
    assert (root / REL).read_bytes() == BEFORE


def test_backup_template_option(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    (root,) = make_roots(BEFORE, n=1)
    r: CliResult = run_cli(["apply", "eager-allreduce", "--root", str(root),
                            "--backup-template", "{file}.orig-{name}"], project=project)
    assert r.code == 0, r.output
    assert [p.name for p in (root / REL).parent.iterdir() if "orig" in p.name] == [
        "arg_utils.py.orig-eager-allreduce"]
    r = run_cli(["apply", "eager-allreduce", "--root", str(root), "--backup-template", "x/{file}"],
                project=project)
    assert r.code == 2 and "must be a file name" in r.stderr


def test_rollback_refuses_a_file_changed_since_apply(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    args = root_args(roots)
    assert run_cli(["apply", "eager-allreduce", *args], project=project).code == 0
    edited = AFTER + b"# local edit\n"
    (roots[1] / REL).write_bytes(edited)
    r: CliResult = run_cli(["rollback", "eager-allreduce", *args], project=project)
    assert r.code == 3
    assert (f"conflict: {roots[1] / REL}: file changed since variantctl applied it"
            in r.stderr)
    assert "refused to roll back: nothing was changed" in r.stderr
    assert (roots[0] / REL).read_bytes() == AFTER  # the other root untouched too
    assert (roots[1] / REL).read_bytes() == edited
    r = run_cli(["rollback", "eager-allreduce", *args, "--force"], project=project)
    assert r.code == 0, r.output
    assert (roots[0] / REL).read_bytes() == BEFORE
    assert (roots[1] / REL).read_bytes() == BEFORE + b"# local edit\n"


def test_rollback_of_a_hand_patched_file_needs_force(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    (root,) = make_roots(AFTER, n=1)
    r: CliResult = run_cli(["rollback", "eager-allreduce", "--root", str(root)], project=project)
    assert r.code == 3
    assert (f"conflict: {root / REL}: not applied by variantctl (no ledger entry in this root); "
            "rollback --force reverts with the inverse transform") in r.stderr
    r = run_cli(["rollback", "eager-allreduce", "--root", str(root), "--force"], project=project)
    assert r.code == 0 and (root / REL).read_bytes() == BEFORE


def test_partial_file_is_completed_and_status_says_partial(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    partial = BEFORE.replace(b"enforce_eager=True,", b"enforce_eager=self.enforce_eager,")
    roots = make_roots(partial)
    r: CliResult = run_cli(["status", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 3 and "partial" in r.stdout
    r = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0
    assert all((root / REL).read_bytes() == AFTER for root in roots)


def test_drifted_root_blocks_every_root(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    drifted = BEFORE.replace(b"enforce_eager=True,", b"enforce_eager=False,")
    (roots[1] / REL).write_bytes(drifted)
    start = snapshot(roots)
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 3
    assert (f"conflict: {roots[1] / REL}:51: enforce-eager: found neither `from` nor `to` "
            "(found False)") in r.stderr
    assert snapshot(roots) == start
    r = run_cli(["status", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 3
    assert "drifted" in r.stdout and "vllm/engine/arg_utils.py:51" in r.stdout
    assert f"conflict: {roots[1] / REL}:51: enforce-eager" in r.stderr


def test_missing_module_names_root_and_path(project, make_roots, run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    empty = tmp_path / "empty-root"
    empty.mkdir()
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args([*roots, empty])],
                           project=project)
    assert r.code == 2
    assert (f"error: {empty}: module vllm.engine.arg_utils not found in this root "
            f"({empty / REL})") in r.stderr
    assert "cannot apply: fix the files above; nothing was changed" in r.stderr
    assert all((root / REL).read_bytes() == BEFORE for root in roots)
    r = run_cli(["apply", "eager-allreduce", "--root", str(tmp_path / "nope")], project=project)
    assert r.code == 2 and f"error: {tmp_path / 'nope'}: root does not exist" in r.stderr
    assert not (tmp_path / "nope").exists()


@pytest.mark.parametrize("content,needle", [
    (b"class EngineArgs:\n    def create_model_config(self:\n        pass\n",
     ":2: syntax error on line 2: '(' was never closed"),
    (BEFORE.replace(b"fixture)", b"fixture \xe9)", 1),
     ":24: not valid UTF-8 (byte 0xe9 on line 24)"),
])
def test_broken_target_file_is_an_error_and_nothing_changes(project, make_roots, run_cli,  # type: ignore[no-untyped-def]
                                                            content, needle) -> None:
    roots = make_roots(BEFORE)
    (roots[1] / REL).write_bytes(content)
    start = snapshot(roots)
    for cmd in ("apply", "status", "rollback"):
        r: CliResult = run_cli([cmd, "eager-allreduce", *root_args(roots)], project=project)
        assert r.code == 2, (cmd, r.output)
        assert f"error: {roots[1] / REL}{needle}" in r.stderr, r.stderr
        assert "Traceback" not in r.output
    assert snapshot(roots) == start


def test_permission_denied_on_second_root_restores_the_first(project, make_roots, run_cli,  # type: ignore[no-untyped-def]
                                                             immutable) -> None:
    roots = make_roots(BEFORE)
    immutable(roots[1] / REL)
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 1
    assert f"error: {roots[1] / REL}: permission denied" in r.stderr
    assert "apply failed: nothing was changed" in r.stderr
    assert "Traceback" not in r.output
    assert (roots[0] / REL).read_bytes() == BEFORE
    assert (roots[1] / REL).read_bytes() == BEFORE
    assert backups(roots[0]) == [] and backups(roots[1]) == []
    assert not any((root / ".variantctl" / "journal.json").exists() for root in roots)
    assert read_ledger(LocalTarget(), str(roots[0])) == []


def test_read_only_filesystem_changes_nothing(project, make_roots, run_cli,  # type: ignore[no-untyped-def]
                                              readonly_mount) -> None:
    roots = make_roots(BEFORE)
    start = snapshot(roots)
    readonly_mount(roots[1])
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 1
    assert "read-only file system" in r.stderr and str(roots[1]) in r.stderr
    assert "Traceback" not in r.output
    assert snapshot(roots) == start


def test_locked_root_is_reported_busy(project, make_roots) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    target = LocalTarget()
    ps = load_patchset(project / "patchsets", "eager-allreduce")
    (roots[0] / ".variantctl").mkdir()
    with target.lock(str(roots[0] / ".variantctl" / "lock")):
        report = execute_apply(target, [str(r) for r in roots], ps,
                               now=datetime.now(timezone.utc), lock_timeout=0.2)
    assert report.exit_code == 1
    assert report.error == f"{roots[0]}/.variantctl/lock: locked by another variantctl process"
    assert all((root / REL).read_bytes() == BEFORE for root in roots)


def test_roots_from_host_configuration(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    (project / "variants").mkdir()
    (project / "variants" / "hosts.yaml").write_text(
        "local:\n  env:\n    PYTHONPATH: " + ":".join(str(r) for r in roots) + "\n")
    r: CliResult = run_cli(["apply", "eager-allreduce"], project=project)
    assert r.code == 0, r.output
    assert all((root / REL).read_bytes() == AFTER for root in roots)
    (project / "variants" / "hosts.yaml").write_text(
        f"local:\n  site_roots: [{roots[0]}]\n")
    r = run_cli(["status", "eager-allreduce", "--json"], project=project)
    assert [f["root"] for f in json.loads(r.stdout)["reports"][0]["files"]] == [str(roots[0])]


def test_no_roots_anywhere_is_a_clear_error(project, run_cli) -> None:  # type: ignore[no-untyped-def]
    r: CliResult = run_cli(["apply", "eager-allreduce"], project=project)
    assert r.code == 2
    assert "error: vllm.engine.arg_utils is not importable by host 'local'" in r.stderr
    assert "hint: pass --root DIR" in r.stderr


def test_apply_json(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots), "--json"],
                           project=project)
    data = json.loads(r.stdout)
    assert data["ok"] is True and data["exit_code"] == 0
    assert [f["action"] for f in data["files"]] == ["applied", "applied"]
    assert data["files"][0]["backup"].endswith(f"arg_utils.py.bak_{TODAY}_eager_allreduce")


def test_status_exit_code_when_copies_disagree(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    (roots[1] / REL).write_bytes(AFTER)
    r: CliResult = run_cli(["status", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 3
    r = run_cli(["status", *root_args(roots), "--json"], project=project)  # all patchsets
    assert r.code == 3
    files = json.loads(r.stdout)["reports"][0]["files"]
    assert [f["state"] for f in files] == ["pristine", "applied"]


def test_patch_diff_json_and_unknown_host(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    (root,) = make_roots(BEFORE, n=1)
    r: CliResult = run_cli(["patch", "diff", "eager-allreduce", "--root", str(root), "--json"],
                           project=project)
    assert r.code == 0
    (item,) = json.loads(r.stdout)["files"]
    assert "-            enforce_eager=True,\n+            enforce_eager=self.enforce_eager,\n" \
        in item["diff"]
    assert (root / REL).read_bytes() == BEFORE
    r = run_cli(["apply", "eager-allreduce", "--host", "gpu9"], project=project)
    assert r.code == 2 and "error: unknown host 'gpu9'" in r.stderr


def test_rollback_dry_run_and_reused_backup(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    (root,) = make_roots(BEFORE, n=1)
    seed = (root / REL).parent / f"arg_utils.py.bak_{TODAY}_eager_allreduce"
    seed.write_bytes(BEFORE)  # an identical backup already there: reused, never removed
    assert run_cli(["apply", "eager-allreduce", "--root", str(root)], project=project).code == 0
    assert backups(root) == [seed]
    r: CliResult = run_cli(["rollback", "eager-allreduce", "--root", str(root), "--dry-run"],
                           project=project)
    assert r.code == 0 and "would roll back" in r.stdout
    assert (root / REL).read_bytes() == AFTER
    assert run_cli(["rollback", "eager-allreduce", "--root", str(root)], project=project).code == 0
    assert (root / REL).read_bytes() == BEFORE and seed.read_bytes() == BEFORE


def test_status_without_patchsets_says_so(tmp_path, run_cli) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "empty-project"
    (project / "patchsets").mkdir(parents=True)
    r: CliResult = run_cli(["status"], project=project)
    assert r.code == 2
    assert r.stderr.startswith(f"error: no patchsets in {project / 'patchsets'}")


def test_a_root_given_twice_through_a_symlink_is_patched_once(project, make_roots, run_cli,  # type: ignore[no-untyped-def]
                                                              tmp_path) -> None:
    (root,) = make_roots(BEFORE, n=1)
    link = tmp_path / "lib64"
    link.symlink_to(root, target_is_directory=True)
    r: CliResult = run_cli(["apply", "eager-allreduce", "--root", str(root), "--root", str(link),
                            "--json"], project=project)
    assert r.code == 0, r.output
    assert [f["root"] for f in json.loads(r.stdout)["files"]] == [str(root)]
    assert (root / REL).read_bytes() == AFTER and len(backups(root)) == 1


def test_status_of_every_patchset_skips_another_layouts_patchset(  # type: ignore[no-untyped-def]
        project, make_roots, run_cli) -> None:
    """Without NAME, a patchset for another vLLM layout (its module exists in no root,
    like the V0 profile points on a V1 install) is listed but does not fail status; named,
    it still does."""
    (project / "patchsets" / "v0-only.yaml").write_text(
        "name: v0-only\ndescription: a module this layout does not have\n"
        "module: vllm.worker.model_runner\noperations:\n"
        "  - id: flag\n    op: set-assignment\n    target: X\n    from: '1'\n    to: '2'\n")
    roots = make_roots(BEFORE, n=2)
    every = run_cli(["status", *root_args(roots), "--json"], project=project)
    assert every.code == 0, every.output
    states = {r["patchset"]: {f["state"] for f in r["files"]}
              for r in json.loads(every.stdout)["reports"]}
    assert states["v0-only"] == {"missing"}
    named = run_cli(["status", "v0-only", *root_args(roots)], project=project)
    assert named.code == 2
    # a module missing from only one of the roots is still a failure without NAME
    (roots[1] / REL).unlink()
    assert run_cli(["status", *root_args(roots)], project=project).code == 2


def test_apply_on_local_roots_loads_only_what_it_uses(project, make_roots) -> None:  # type: ignore[no-untyped-def]
    """``apply`` of a set-keyword patchset on --root directories: the process never imports
    the remote, status-cache, custom-operation, profiling, analysis, network or tempfile
    modules (each is start-up time, a fifth of apply's on a 3,300-line file, for nothing)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    roots = make_roots(BEFORE)
    code = (
        "import sys\n"
        "from variantctl.cli import run\n"
        f"try:\n    run(['--project', {str(project)!r}, 'apply', 'eager-allreduce', "
        f"*{root_args(roots)!r}])\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('LOADED=' + ','.join(sorted(sys.modules)))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO, env=env)
    assert "2 file(s) written in 2 root(s)" in out.stdout
    loaded = set(out.stdout.strip().splitlines()[-1].removeprefix("LOADED=").split(","))
    for root in roots:
        assert (root / REL).read_bytes() == AFTER
    unwanted = {
        "fabric", "paramiko", "deepdiff", "numpy", "optuna", "socket", "tempfile", "shutil",
        "variantctl.targets.ssh", "variantctl.targets.connect", "variantctl.targets.statecache",
        "variantctl.config.hosts", "variantctl.config.variants", "variantctl.config.signatures",
        "variantctl.patching.custom", "variantctl.patching.instrument",
        "variantctl.cli.hostresults",
        "variantctl.render.hosts", "variantctl.secretmask",
    }
    assert "libcst" in loaded  # the check sees the process's modules
    assert sorted(loaded & unwanted) == []
