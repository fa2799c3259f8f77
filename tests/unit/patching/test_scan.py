"""status --scan: files that differ from pip's RECORD, named as ours or as hand edits."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

from tests.unit.patching.conftest import EAGER, REL, root_args

CASE = EAGER / "v062_model_config"


def _installed(root: Path) -> None:
    """A pip-like install: the package files and a RECORD with their hashes."""
    (root / REL).parent.mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (root / REL).write_bytes((CASE / "before.py").read_bytes())
    lines = []
    for rel in ("vllm/__init__.py", str(REL)):
        digest = base64.urlsafe_b64encode(hashlib.sha256((root / rel).read_bytes()).digest())
        lines.append(f"{rel},sha256={digest.decode().rstrip('=')},{(root / rel).stat().st_size}")
    info = root / "vllm-0.6.3.dist-info"
    info.mkdir()
    lines += ["vllm-0.6.3.dist-info/RECORD,,", "../../../bin/vllm,sha256=" + "A" * 43 + ",1"]
    (info / "RECORD").write_text("\n".join(lines) + "\n")


def _scan(run_cli, project: Path, roots: list[Path]):  # type: ignore[no-untyped-def]
    r = run_cli(["status", "--scan", "vllm", *root_args(roots), "--json"], project=project)
    return r.code, json.loads(r.stdout)["roots"] if r.stdout else r.stderr


def test_scan_finds_hand_edits_then_names_the_recorded_patchset(project, tmp_path, run_cli) -> None:  # type: ignore[no-untyped-def]
    roots = [tmp_path / "a" / "site-packages", tmp_path / "b" / "site-packages"]
    for root in roots:
        _installed(root)
    code, scans = _scan(run_cli, project, roots)
    assert code == 0 and [s["files"] for s in scans] == [[], []]
    assert scans[0]["checked"] == 3

    edited = roots[0] / REL
    backup = edited.with_name("arg_utils.py.bak_20250101_eager")
    backup.write_bytes(edited.read_bytes())
    edited.write_bytes((CASE / "after.py").read_bytes())
    code, scans = _scan(run_cli, project, roots)
    assert code == 3
    assert scans[0]["files"] == [{"path": str(edited), "kind": "hand edit", "patchset": None,
                                  "backups": [str(backup)]}]
    assert scans[1]["files"] == []

    r = run_cli(["patch", "record", "mine", "--module", "vllm.engine.arg_utils", "--from",
                 str(backup), *root_args(roots)], project=project)
    assert r.code == 0, r.output
    code, scans = _scan(run_cli, project, roots)
    assert code == 0
    assert [(f["kind"], f["patchset"]) for f in scans[0]["files"]] == [("patched", "mine")]


def test_a_missing_or_edited_record_is_said(project, tmp_path, run_cli) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "site-packages"
    _installed(root)
    record = root / "vllm-0.6.3.dist-info" / "RECORD"
    record.write_text(record.read_text().replace(",sha256=", ",md5=", 1))
    code, out = _scan(run_cli, project, [root])
    assert code == 2 and "RECORD:1 is not a line pip writes" in out[0]["problem"]
    record.unlink()
    code, out = _scan(run_cli, project, [root])
    assert code == 2 and "RECORD is missing" in out[0]["problem"]
    r = run_cli(["status", "--scan", "vllm", "--root", str(root)], project=project)
    assert "patch record --from" in r.stdout
