"""patch record over real SSH: a hand edit on the host's first root, recorded from its
backup there, tried on the second root, adopted, applied and rolled back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ssh.test_remote_patch import CASE, REL, make_project, make_root
from tests.support.sshd import SshLab

pytestmark = pytest.mark.ssh


def test_record_over_ssh(run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:  # type: ignore[no-untyped-def]
    roots = [make_root(tmp_path / "lib"), make_root(tmp_path / "lib64")]
    project = make_project(tmp_path, ssh_lab, roots)
    vendor = (CASE / "before.py").read_bytes()
    edited = roots[0] / REL
    backup = edited.with_name("arg_utils.py.bak_20250101_eager")
    backup.write_bytes(vendor)
    edited.write_bytes((CASE / "after.py").read_bytes())

    res = run_cli(["patch", "record", "mine", "--module", "vllm.engine.arg_utils", "--from",
                   str(backup), "--host", "gpu1", "--json"], project=project)
    assert res.code == 0, res.output
    report = json.loads(res.stdout)
    assert [(c["where"], c["verdict"]) for c in report["copies"]] == [
        (str(roots[1]), "applies")]
    assert [o["op"] for o in report["operations"]] == ["set-keyword", "set-keyword"]
    assert (roots[0] / ".variantctl" / "ledger.jsonl").exists()  # adopted on the host

    res = run_cli(["status", "mine", "--host", "gpu1", "--json"], project=project)
    files = json.loads(res.stdout)["reports"][0]["files"]
    assert [f["state"] for f in files] == ["applied", "pristine"]
    assert run_cli(["apply", "mine", "--host", "gpu1"], project=project).code == 0
    assert run_cli(["rollback", "mine", "--host", "gpu1"], project=project).code == 0
    assert [(r / REL).read_bytes() for r in roots] == [vendor, vendor]
    assert backup.read_bytes() == vendor


def test_scan_over_ssh(run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:  # type: ignore[no-untyped-def]
    from tests.unit.patching.test_scan import _installed

    roots = [tmp_path / "lib", tmp_path / "lib64"]
    for root in roots:
        _installed(root)
    project = make_project(tmp_path, ssh_lab, roots)
    edited = roots[1] / REL
    edited.with_name("arg_utils.py.bak_x").write_bytes(edited.read_bytes())
    edited.write_bytes((CASE / "after.py").read_bytes())
    res = run_cli(["status", "--scan", "--host", "gpu1", "--json"], project=project)
    assert res.code == 3, res.output
    scans = json.loads(res.stdout)["roots"]
    assert [[(f["path"], f["kind"], len(f["backups"])) for f in s["files"]] for s in scans] == [
        [], [(str(edited), "hand edit", 1)]]
