"""A process killed between the roots' writes, two concurrent applies, the status cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, CliResult
from tests.unit.patching.conftest import EAGER, REL, root_args, snapshot
from variantctl.targets.ledger import read_ledger
from variantctl.targets.local import LocalTarget

BEFORE = (EAGER / "v055_engine_config" / "before.py").read_bytes()
AFTER = (EAGER / "v055_engine_config" / "after.py").read_bytes()

# Runs the real executor in a child process whose Target SIGKILLs the process right
# after the first patched file has been renamed into place: the second root is not
# written, the journals stay behind - what `kill -9` mid-apply leaves.
KILLER = """\
import os, signal, sys
from datetime import datetime, timezone
from pathlib import Path
from variantctl.config.patchsets import load_patchset
from variantctl.targets.local import LocalTarget
from variantctl.targets.patchrun import execute_apply, execute_rollback


class DiesAfterFirstFile(LocalTarget):
    def write_atomic(self, path, data):
        super().write_atomic(path, data)
        if path.endswith(SUFFIX):
            os.kill(os.getpid(), signal.SIGKILL)


action, suffix, patchsets, *roots = sys.argv[1:]
SUFFIX = suffix
ps = load_patchset(Path(patchsets), "eager-allreduce")
run = execute_apply if action == "apply" else execute_rollback
run(DiesAfterFirstFile(), roots, ps, now=datetime.now(timezone.utc))
print("not killed")
"""


def _kill_midway(tmp_path: Path, action: str, project: Path, roots: list[Path],
                 after: str = "/arg_utils.py") -> None:
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    proc = subprocess.run([sys.executable, str(script), action, after,
                           str(project / "patchsets"),
                           *map(str, roots)], capture_output=True, text=True, cwd=REPO,
                          check=False)
    assert proc.returncode == -9, proc.stdout + proc.stderr


def test_killed_apply_is_rolled_back_by_the_next_status(tmp_path, project, make_roots,  # type: ignore[no-untyped-def]
                                                        run_cli) -> None:
    roots = make_roots(BEFORE)
    start = snapshot(roots)
    _kill_midway(tmp_path, "apply", project, roots)
    # the crash left one root patched, the other not, and both journals
    assert (roots[0] / REL).read_bytes() == AFTER
    assert (roots[1] / REL).read_bytes() == BEFORE
    assert all((r / ".variantctl" / "journal.json").exists() for r in roots)

    # a dry run repairs nothing but says a repair is due
    r: CliResult = run_cli(["patch", "diff", "eager-allreduce", *root_args(roots)],
                           project=project)
    assert f"{roots[0]}: an interrupted apply of eager-allreduce will be repaired" in r.stderr
    assert all((r / ".variantctl" / "journal.json").exists() for r in roots)

    r = run_cli(["status", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert f"recovered: {roots[0]}: repaired an interrupted apply of eager-allreduce" in r.stderr
    assert f"recovered: {roots[0] / REL}: restored from backup" in r.stderr
    assert snapshot(roots) == start  # backups created by the dead apply are gone too
    assert not any((r / ".variantctl" / "journal.json").exists() for r in roots)
    assert r.stdout.count("pristine") == 6

    r = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0 and all((root / REL).read_bytes() == AFTER for root in roots)


def test_killed_apply_is_repaired_by_the_next_apply(tmp_path, project, make_roots,  # type: ignore[no-untyped-def]
                                                    run_cli) -> None:
    roots = make_roots(BEFORE)
    _kill_midway(tmp_path, "apply", project, roots)
    r: CliResult = run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert "repaired an interrupted apply" in r.stderr
    assert all((root / REL).read_bytes() == AFTER for root in roots)
    for root in roots:
        assert [rec.action for rec in read_ledger(LocalTarget(), str(root))] == ["apply"]
        assert len(list((root / REL).parent.glob("*.bak_*"))) == 1


def test_killed_rollback_is_completed_by_the_next_rollback(tmp_path, project, make_roots,  # type: ignore[no-untyped-def]
                                                           run_cli) -> None:
    roots = make_roots(BEFORE)
    start = snapshot(roots)
    assert run_cli(["apply", "eager-allreduce", *root_args(roots)], project=project).code == 0
    _kill_midway(tmp_path, "rollback", project, roots)
    assert (roots[0] / REL).read_bytes() == BEFORE
    assert (roots[1] / REL).read_bytes() == AFTER
    r: CliResult = run_cli(["rollback", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert f"recovered: {roots[1] / REL}: rolled back" in r.stderr
    assert (roots[1] / REL).read_bytes() == BEFORE
    for root in roots:
        assert [rec.action for rec in read_ledger(LocalTarget(), str(root))] == [
            "apply", "rollback"]
    # the completed rollback removed the backups the apply had created, like a normal one
    assert snapshot(roots) == start


def test_apply_killed_after_its_commit_point_is_finished_not_undone(  # type: ignore[no-untyped-def]
        tmp_path, project, make_roots, run_cli) -> None:
    roots = make_roots(BEFORE)
    # killed right after the first root's ledger record: the transaction is committed
    _kill_midway(tmp_path, "apply", project, roots, after="/ledger.jsonl")
    assert all((root / REL).read_bytes() == AFTER for root in roots)
    assert read_ledger(LocalTarget(), str(roots[1])) == []
    r: CliResult = run_cli(["status", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0, r.output
    assert "finished the bookkeeping of a committed apply" in r.stderr
    assert all((root / REL).read_bytes() == AFTER for root in roots)
    for root in roots:
        (rec,) = read_ledger(LocalTarget(), str(root))
        assert rec.action == "apply"
        assert not (root / ".variantctl" / "journal.json").exists()
    r = run_cli(["rollback", "eager-allreduce", *root_args(roots)], project=project)
    assert r.code == 0 and all((root / REL).read_bytes() == BEFORE for root in roots)


def test_two_concurrent_applies_do_not_interleave(project, make_roots) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE, n=3)
    env = dict(os.environ, VARIANTCTL_PROJECT=str(project))
    argv = [sys.executable, "-m", "variantctl", "apply", "eager-allreduce", *root_args(roots),
            "--json"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              cwd=REPO) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    actions = sorted(tuple(f["action"] for f in json.loads(o[0])["files"]) for o in outs)
    assert actions == [("applied",) * 3, ("unchanged",) * 3]
    for root in roots:
        assert (root / REL).read_bytes() == AFTER
        assert len(read_ledger(LocalTarget(), str(root))) == 1
        assert len(list((root / REL).parent.glob("*.bak_*"))) == 1


def _status_in_child(project: Path, roots: list[Path], cache: Path) -> tuple[int, bool]:
    code = (
        "import sys\n"
        "from variantctl.cli import run\n"
        f"rc = run(['status', 'eager-allreduce', *{[str(a) for a in root_args(roots)]}, "
        "'--json'])\n"
        "print('LIBCST=' + str('libcst' in sys.modules))\n"
        "sys.exit(rc)\n"
    )
    env = dict(os.environ, VARIANTCTL_PROJECT=str(project), VARIANTCTL_CACHE=str(cache))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       check=False)
    return p.returncode, p.stdout.strip().splitlines()[-1] == "LIBCST=True"


def test_status_answers_unchanged_files_from_the_cache(tmp_path, project, make_roots) -> None:  # type: ignore[no-untyped-def]
    roots = make_roots(BEFORE)
    cache = tmp_path / "cache"
    assert _status_in_child(project, roots, cache) == (0, True)   # parsed
    assert _status_in_child(project, roots, cache) == (0, False)  # from the cache
    (roots[1] / REL).write_bytes(AFTER)
    assert _status_in_child(project, roots, cache) == (3, True)   # changed: parsed again


def test_help_imports_no_heavy_module() -> None:
    code = ("import sys\nfrom variantctl.cli import run\nrun(['--help'])\n"
            "print([m for m in ('libcst', 'fabric', 'deepdiff') if m in sys.modules])\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip().splitlines()[-1] == "[]"


def test_a_file_changed_under_us_is_not_overwritten(project, make_roots) -> None:  # type: ignore[no-untyped-def]
    """Another program writes the second copy after variantctl read it: that copy is
    left with the other program's bytes, the first copy is restored, no backup stays."""
    from datetime import datetime, timezone

    from variantctl.config.patchsets import load_patchset
    from variantctl.targets.patchrun import execute_apply

    roots = make_roots(BEFORE)
    edited = BEFORE + b"# saved by an editor meanwhile\n"

    class EditorSavesMeanwhile(LocalTarget):
        """Writes the second root's file the moment variantctl starts writing backups."""

        def write_new(self, path: str, data: bytes, *, mode: int | None = None) -> None:
            (roots[1] / REL).write_bytes(edited)
            super().write_new(path, data, mode=mode)

    ps = load_patchset(project / "patchsets", "eager-allreduce")
    report = execute_apply(EditorSavesMeanwhile(), [str(r) for r in roots], ps,
                           now=datetime.now(timezone.utc))
    assert report.exit_code == 1
    assert report.error is not None
    assert "changed since variantctl read it" in report.error
    assert str(roots[1] / REL) in report.error
    assert (roots[0] / REL).read_bytes() == BEFORE  # written, then restored
    assert (roots[1] / REL).read_bytes() == edited  # the other program's bytes survive
    for root in roots:
        assert not [p for p in (root / REL).parent.iterdir() if ".bak_" in p.name]
        assert not (root / ".variantctl" / "journal.json").exists()
