"""Nothing outside a root is ever written, and no link under a root is followed
(issue 8, family 1): links planted as the lock, the state directory, a package
directory, the target file, a backup name, or named by an edited ledger."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.unit.patching.conftest import EAGER, REL, root_args, snapshot
from variantctl.errors import TargetError
from variantctl.targets.local import LocalTarget

BEFORE = (EAGER / "v062_model_config" / "before.py").read_bytes()
AFTER = (EAGER / "v062_model_config" / "after.py").read_bytes()
VICTIM = b"precious: not variantctl's\n"


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "outside" / "victim.txt"
    v.parent.mkdir(parents=True, exist_ok=True)
    v.write_bytes(VICTIM)
    return v


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, project, make_roots,  # type: ignore[no-untyped-def]
                                                             run_cli) -> None:
    roots = make_roots(BEFORE)
    victim = _victim(tmp_path)
    (roots[0] / ".variantctl").mkdir()
    (roots[0] / ".variantctl" / "lock").symlink_to(victim)
    start = snapshot(roots)

    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 2, r.output
    assert f"{roots[0] / '.variantctl' / 'lock'}: is a symbolic link" in r.stderr
    assert victim.read_bytes() == VICTIM
    assert (roots[0] / ".variantctl" / "lock").is_symlink()
    assert snapshot(roots) == start  # nothing patched, no backup


def test_the_local_lock_never_opens_a_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "lock"
    link.symlink_to(victim)
    with pytest.raises(TargetError) as info, LocalTarget().lock(str(link)):
        pass
    assert info.value.kind == "link" and info.value.exit_code == 2
    assert victim.read_bytes() == VICTIM


def test_a_symlinked_state_dir_is_refused(tmp_path, project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (roots[1] / ".variantctl").symlink_to(elsewhere, target_is_directory=True)
    start = snapshot(roots)

    for cmd in (["apply"], ["rollback"]):
        r: CliResult = run_cli([*cmd, "eager-allreduce", *root_args(roots)], project=project)
        assert r.code == 2, r.output
        assert f"{roots[1] / '.variantctl'}: is a symbolic link" in r.stderr
    assert list(elsewhere.iterdir()) == []  # no lock, journal or ledger outside the root
    assert snapshot(roots) == start


def test_a_symlinked_package_dir_is_neither_patched_nor_backed_up(  # type: ignore[no-untyped-def]
        tmp_path, project, make_roots, run_cli) -> None:
    roots = make_roots(BEFORE, n=1)
    outside = tmp_path / "outside-pkg"
    (outside / "engine").mkdir(parents=True)
    (outside / "engine" / "arg_utils.py").write_bytes(BEFORE)
    import shutil

    shutil.rmtree(roots[0] / "vllm")
    (roots[0] / "vllm").symlink_to(outside, target_is_directory=True)

    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 2, r.output
    assert f"{roots[0] / 'vllm'} is a symbolic link" in r.stderr
    assert sorted(p.name for p in (outside / "engine").iterdir()) == ["arg_utils.py"]
    assert (outside / "engine" / "arg_utils.py").read_bytes() == BEFORE

    # status says the same (and does not read the copy outside the root as if it were in it)
    r = run_cli(["status", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 2, r.output
    assert "is a symbolic link" in r.output and "pristine" not in r.stdout


def test_a_symlinked_target_file_is_refused_and_stays_a_link(  # type: ignore[no-untyped-def]
        tmp_path, project, make_roots, run_cli) -> None:
    roots = make_roots(BEFORE, n=2)
    # inside the root or not, a link is refused (docs/patching.md: "What is refused")
    real = roots[0] / "vllm" / "real_arg_utils.py"
    real.write_bytes(BEFORE)
    (roots[0] / REL).unlink()
    (roots[0] / REL).symlink_to(real)
    start = snapshot(roots)

    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 2, r.output
    assert f"{roots[0] / REL}: is a symbolic link" in r.stderr
    assert (roots[0] / REL).is_symlink() and os.readlink(roots[0] / REL) == str(real)
    assert snapshot(roots) == start  # the other root is not patched either: one transaction

    r = run_cli(["rollback", "eager-allreduce", "--force", *root_args(roots)], project=project)
    assert r.code == 2, r.output
    assert (roots[0] / REL).is_symlink() and real.read_bytes() == BEFORE


def test_write_atomic_refuses_to_replace_a_link(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "file.py"
    link.symlink_to(victim)
    with pytest.raises(TargetError) as info:
        LocalTarget().write_atomic(str(link), b"new")
    assert info.value.kind == "link"
    assert link.is_symlink() and victim.read_bytes() == VICTIM
    assert [p.name for p in tmp_path.iterdir() if p.name != "outside"] == ["file.py"]


def test_a_dangling_link_at_the_backup_name_is_skipped(project, make_roots, run_cli) -> None:  # type: ignore[no-untyped-def]
    from datetime import datetime, timezone

    roots = make_roots(BEFORE, n=1)
    today = datetime.now(timezone.utc).strftime("%Y%m%d")
    name = roots[0] / REL.parent / f"arg_utils.py.bak_{today}_eager_allreduce"
    name.symlink_to(roots[0] / "nowhere")

    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert name.is_symlink() and not (roots[0] / "nowhere").exists()
    backup = Path(f"{name}.1")
    assert backup.read_bytes() == BEFORE and not backup.is_symlink()
    assert (roots[0] / REL).read_bytes() == AFTER

    r = run_cli(["rollback", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert (roots[0] / REL).read_bytes() == BEFORE and name.is_symlink()


def test_a_ledger_naming_a_backup_elsewhere_is_not_followed(  # type: ignore[no-untyped-def]
        tmp_path, project, make_roots, run_cli) -> None:
    roots = make_roots(BEFORE, n=1)
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    # an edited ledger points the backup at a file outside the root holding the original
    decoy = tmp_path / "outside" / "decoy.py"
    decoy.parent.mkdir()
    decoy.write_bytes(BEFORE)
    ledger = roots[0] / ".variantctl" / "ledger.jsonl"
    rec = json.loads(ledger.read_text())
    rec["backup"] = str(decoy)
    ledger.write_text(json.dumps(rec) + "\n")

    r = run_cli(["rollback", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 3, r.output
    assert f"backup {decoy} is not beside" in r.output
    assert decoy.read_bytes() == BEFORE  # neither restored from nor removed
    assert (roots[0] / REL).read_bytes() == AFTER
