"""Recovery leaves nothing behind and says what it did (issue 8, family 9): temp files of
a killed write are removed, an unreadable journal or ledger is a conflict (exit 3)
naming the file, never "recovered" when nothing was repaired, never guessed at."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, CliResult
from tests.unit.patching.conftest import EAGER, REL, root_args, snapshot

BEFORE = (EAGER / "v055_engine_config" / "before.py").read_bytes()
AFTER = (EAGER / "v055_engine_config" / "after.py").read_bytes()

# SIGKILLs the apply once the temp file of the first *backup* is fully written (before
# it is linked into place): what `kill -9` during the backup write leaves.
KILLER = """\
import os, signal, sys
from datetime import datetime, timezone
from pathlib import Path
from variantctl.config.patchsets import load_patchset
from variantctl.targets.local import LocalTarget
from variantctl.targets.patchrun import execute_apply


class DiesWritingTheBackup(LocalTarget):
    def _write_temp(self, path, data):
        tmp = super()._write_temp(path, data)
        if ".bak_" in path:
            os.kill(os.getpid(), signal.SIGKILL)
        return tmp


patchsets, *roots = sys.argv[1:]
ps = load_patchset(Path(patchsets), "eager-allreduce")
execute_apply(DiesWritingTheBackup(), roots, ps, now=datetime.now(timezone.utc))
print("not killed")
"""


def temps(roots: list[Path]) -> list[Path]:
    return [p for r in roots for p in r.rglob("*.variantctl-tmp")]


def test_a_kill_during_the_backup_write_leaves_no_temp_file(tmp_path, project, make_roots,  # type: ignore[no-untyped-def]
                                                            run_cli) -> None:
    roots = make_roots(BEFORE)
    start = snapshot(roots)
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    proc = subprocess.run([sys.executable, str(script), str(project / "patchsets"),
                           *map(str, roots)], capture_output=True, text=True, cwd=REPO,
                          check=False)
    assert proc.returncode == -9, proc.stdout + proc.stderr
    (tmp,) = temps(roots)  # a full-size temp file beside the target
    assert tmp.read_bytes() == BEFORE

    r: CliResult = run_cli(["status", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert f"recovered: {tmp}: removed a temp file left by an interrupted write" in r.stderr
    assert temps(roots) == []
    assert snapshot(roots) == start
    assert not any((r / ".variantctl" / "journal.json").exists() for r in roots)


def test_an_unreadable_journal_is_a_conflict_never_recovered(project, make_roots,  # type: ignore[no-untyped-def]
                                                             run_cli) -> None:
    roots = make_roots(BEFORE)
    journal = roots[1] / ".variantctl" / "journal.json"
    journal.parent.mkdir()
    journal.write_bytes(b'{"txn": "20260101T000000-deadbeef", "files": [')  # cut short
    start = snapshot(roots)

    for cmd in (["status"], ["apply"], ["rollback"], ["apply", "--dry-run"]):
        r: CliResult = run_cli([*cmd, "eager-allreduce", *root_args(roots)], project=project)
        assert r.code == 3, (cmd, r.output)
        assert f"{journal}: unreadable transaction journal" in r.stderr, (cmd, r.stderr)
        assert "recovered" not in r.stderr, (cmd, r.stderr)
        assert journal.exists()  # kept: it is the only record of the interrupted run
    assert snapshot(roots) == start

    r = run_cli(["status", "eager-allreduce", "--json", *root_args(roots)], project=project)
    assert r.code == 3
    data = json.loads(r.stdout)
    (report,) = data["reports"] if isinstance(data, dict) else data  # shape: see README
    assert report["recovered"] == [] and str(journal) in report["error"]


def test_a_journal_naming_a_file_outside_its_root_is_refused(tmp_path, project, make_roots,  # type: ignore[no-untyped-def]
                                                             run_cli) -> None:
    roots = make_roots(BEFORE, n=1)
    victim = tmp_path / "victim.py"
    victim.write_bytes(AFTER)  # "after" content, so a naive recovery would restore it
    backup = tmp_path / "victim.py.bak"
    backup.write_bytes(BEFORE)
    import hashlib

    def sha(b: bytes) -> str:
        return hashlib.sha256(b).hexdigest()

    journal = {
        "txn": "20260101T000000-deadbeef", "action": "apply", "patchset": "eager-allreduce",
        "fingerprint": "x", "time": "2026-01-01T00:00:00", "tool_version": "0", "host": "local",
        "roots": [str(roots[0])], "state": "intent",
        "files": [{"root": str(roots[0]), "path": str(victim), "module": "vllm.engine.arg_utils",
                   "sha256_before": sha(BEFORE), "sha256_after": sha(AFTER),
                   "recover_sha256": sha(BEFORE), "recover_from": str(backup),
                   "content": None, "backup": str(backup), "backup_created": True}],
    }
    (roots[0] / ".variantctl").mkdir()
    (roots[0] / ".variantctl" / "journal.json").write_text(json.dumps(journal))

    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 3, r.output
    assert "not the file of vllm.engine.arg_utils in this root" in r.stderr
    assert victim.read_bytes() == AFTER and backup.read_bytes() == BEFORE
    assert (roots[0] / REL).read_bytes() == BEFORE


def test_a_corrupt_ledger_is_a_conflict_not_an_empty_ledger(project, make_roots,  # type: ignore[no-untyped-def]
                                                            run_cli) -> None:
    roots = make_roots(BEFORE)
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    ledger = roots[0] / ".variantctl" / "ledger.jsonl"
    ledger.write_bytes(ledger.read_bytes()[:40] + b"\n")  # a torn record
    applied = snapshot(roots)

    for cmd in (["rollback"], ["apply"], ["rollback", "--force"]):
        r = run_cli([*cmd, "eager-allreduce", *root_args(roots)], project=project)
        assert r.code == 3, (cmd, r.output)
        assert f"{ledger}:1: line 1 is not a ledger record" in r.stderr, r.stderr
        assert "not applied by variantctl" not in r.output
    assert snapshot(roots) == applied


def test_a_recovery_that_cannot_repair_keeps_the_journal_and_says_so(  # type: ignore[no-untyped-def]
        tmp_path, project, make_roots, run_cli) -> None:
    from tests.unit.patching.test_recovery import _kill_midway

    roots = make_roots(BEFORE)
    _kill_midway(tmp_path, "apply", project, roots)
    assert (roots[0] / REL).read_bytes() == AFTER
    edited = AFTER + b"# edited by someone after the crash\n"
    (roots[0] / REL).write_bytes(edited)

    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 3, r.output
    assert f"{roots[0] / REL}: changed by someone else since the interrupted apply" in r.stderr
    assert "recovered:" not in r.stderr
    assert (roots[0] / ".variantctl" / "journal.json").exists()
    assert (roots[0] / REL).read_bytes() == edited
    # the backup holding the original is still there, named by the journal
    (bak,) = (roots[0] / REL.parent).glob("arg_utils.py.bak_*")
    assert bak.read_bytes() == BEFORE
