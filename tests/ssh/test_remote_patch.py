"""Remote patching through SshTarget: apply / status / rollback over real SSH,
one transaction over two roots, and a full filesystem on the host mid-apply."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.ssh.launchkit import FAKE, run_json
from tests.support.sshd import SshLab, free_port

pytestmark = pytest.mark.ssh

CASE = REPO / "tests" / "fixtures" / "patching" / "eager_allreduce" / "v062_model_config"
REL = Path("vllm/engine/arg_utils.py")


def make_project(base: Path, lab: SshLab, roots: list[Path]) -> Path:
    project = base / "project"
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", project / "patchsets")
    (project / "variants" / "hosts.yaml").write_text(
        f"gpu1:\n  ssh:\n    alias: gpu1\n    config: {lab.ssh_config}\n"
        f"  python: {sys.executable}\n  workdir: {base / 'work'}\n"
        f"  site_roots: [{', '.join(str(r) for r in roots)}]\n"
    )
    return project


def make_root(root: Path) -> Path:
    (root / REL).parent.mkdir(parents=True, exist_ok=True)
    (root / REL).write_bytes((CASE / "before.py").read_bytes())
    return root


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                  and ".variantctl" not in p.parts)


def test_apply_status_rollback_over_ssh(run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:  # type: ignore[no-untyped-def]
    roots = [make_root(tmp_path / "lib"), make_root(tmp_path / "lib64")]
    project = make_project(tmp_path, ssh_lab, roots)
    before = (CASE / "before.py").read_bytes()
    after = (CASE / "after.py").read_bytes()

    res = run_cli(["apply", "eager-allreduce", "--host", "gpu1"], project=project)
    assert res.code == 0, res.output
    for r in roots:
        assert (r / REL).read_bytes() == after
        backups = [p for p in (r / REL).parent.iterdir() if ".bak" in p.name]
        assert len(backups) == 1 and backups[0].read_bytes() == before
        assert not list(r.rglob("*.variantctl-tmp"))

    st = run_cli(["status", "eager-allreduce", "--host", "gpu1", "--json"], project=project)
    assert st.code == 0, st.output
    reports = json.loads(st.stdout)["reports"]
    assert {f["state"] for rep in reports for f in rep["files"]} == {"applied"}

    rb = run_cli(["rollback", "eager-allreduce", "--host", "gpu1"], project=project)
    assert rb.code == 0, rb.output
    for r in roots:
        assert (r / REL).read_bytes() == before


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted for the test (the host's 'disk')."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_on_the_host_leaves_everything_as_it_was(
    run_cli, tmp_path: Path, ssh_lab: SshLab, small_fs: Path  # type: ignore[no-untyped-def]
) -> None:
    roots = [make_root(tmp_path / "lib"), make_root(small_fs / "lib64")]
    project = make_project(tmp_path, ssh_lab, roots)
    before = (CASE / "before.py").read_bytes()
    # fill the small filesystem
    subprocess.run(["dd", "if=/dev/zero", f"of={small_fs / 'filler'}", "bs=4k"],
                   capture_output=True, check=False)
    names_before = {str(r): files_under(r) for r in roots}

    res = run_cli(["apply", "eager-allreduce", "--host", "gpu1"], project=project)
    assert res.code != 0
    assert "no space left on device" in res.output, res.output
    assert "Traceback" not in res.output
    for r in roots:
        assert (r / REL).read_bytes() == before  # untouched or restored, never partial
        assert not list(r.rglob("*.variantctl-tmp"))
        assert files_under(r) == names_before[str(r)] or all(
            ".bak" in n for n in set(files_under(r)) - set(names_before[str(r)]))

    # with space again the same apply succeeds
    (small_fs / "filler").unlink()
    ok = run_cli(["apply", "eager-allreduce", "--host", "gpu1"], project=project)
    assert ok.code == 0, ok.output
    assert all((r / REL).read_bytes() == (CASE / "after.py").read_bytes() for r in roots)


def test_launch_requires_patchsets_on_the_host(run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:  # type: ignore[no-untyped-def]
    roots = [make_root(tmp_path / "lib"), make_root(tmp_path / "lib64")]
    project = make_project(tmp_path, ssh_lab, roots)
    (project / "variants" / "fake-patched.yaml").write_text(
        "description: FAKE server (a test double) that needs the eager-allreduce patch\n"
        "host: gpu1\n"
        f"command: [python, {FAKE}, --scenario, healthy, --pace, '0.01']\n"
        "requires: [eager-allreduce]\n"
        "args: {enforce-eager: true}\n")  # the fake's log says enforce_eager=True
    port = str(free_port())
    refused = run_cli(["launch", "fake-patched", "--port", port], project=project)
    assert refused.code == 3, refused.output
    assert "requires patchset eager-allreduce, which is not applied on host gpu1" in refused.stderr
    assert "--apply-patches" in refused.stderr
    assert not (project / "runs").exists()

    res = run_cli(["launch", "fake-patched", "--port", port, "--apply-patches", "--json"],
                  project=project)
    try:
        assert res.code == 0, res.output
        assert json.loads(res.stdout)["verdict"] == "ready"
        assert "applying eager-allreduce on gpu1" in res.stderr
        after = (CASE / "after.py").read_bytes()
        assert all((r / REL).read_bytes() == after for r in roots)
        patches = run_json(project, "fake-patched")["patches"]["eager-allreduce"]
        assert set(patches["roots"].values()) == {"applied"}
        assert {f["sha256"] for f in patches["files"]} == {hashlib.sha256(after).hexdigest()}
    finally:
        run_cli(["stop", "fake-patched"], project=project)


def test_apply_on_several_hosts_in_parallel(run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:  # type: ignore[no-untyped-def]
    """--hosts: each host is its own transaction; an unreachable one does not stop the others."""
    before = (CASE / "before.py").read_bytes()
    after = (CASE / "after.py").read_bytes()
    project = tmp_path / "project"
    (project / "variants").mkdir(parents=True)
    (project / "patchsets").mkdir()
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", project / "patchsets")
    roots = {alias: make_root(tmp_path / alias / "lib") for alias in ("gpu1", "gpu2")}
    dead_port = free_port()
    (project / "variants" / "hosts.yaml").write_text(
        "".join(
            f"{alias}:\n  ssh:\n    alias: {alias}\n    config: {ssh_lab.ssh_config}\n"
            f"  python: {sys.executable}\n  workdir: {tmp_path / alias / 'work'}\n"
            f"  site_roots: [{root}]\n"
            for alias, root in roots.items()
        )
        + f"down:\n  ssh:\n    host: 127.0.0.1\n    port: {dead_port}\n    user: root\n"
        f"    config: {ssh_lab.ssh_config}\n  site_roots: [/nonexistent]\n"
    )

    res = run_cli(["apply", "eager-allreduce", "--hosts", "gpu1,down,gpu2", "--json"],
                  project=project)
    assert res.code == 4, res.output  # ExitCode.UNREACHABLE outranks the successes
    results = json.loads(res.stdout)["hosts"]
    assert [r["host"] for r in results] == ["gpu1", "down", "gpu2"]
    assert results[1]["result"] is None and "down" in results[1]["error"]["message"]
    assert (results[1]["error"]["kind"], results[1]["error"]["where"]) == ("unreachable", "down")
    for r in (results[0], results[2]):
        assert r["error"] is None
        assert {f["action"] for f in r["result"]["files"]} == {"applied"}, r
    for root in roots.values():
        assert (root / REL).read_bytes() == after

    # the table view names each host; status agrees per host
    st = run_cli(["status", "eager-allreduce", "--hosts", "gpu1,gpu2"], project=project)
    assert st.code == 0, st.output
    assert "host gpu1" in st.stdout and "host gpu2" in st.stdout

    rb = run_cli(["rollback", "eager-allreduce", "--hosts", "gpu1,gpu2"], project=project)
    assert rb.code == 0, rb.output
    for root in roots.values():
        assert (root / REL).read_bytes() == before

    bad = run_cli(["apply", "eager-allreduce", "--hosts", "gpu1", "--root", "/x"],
                  project=project)
    assert bad.code == 2 and "cannot be combined with --hosts" in bad.stderr


# -- issue 8: no link under a root is followed over SFTP either ---------------------------

VICTIM = b"precious: not variantctl's\n"


def test_a_symlinked_lock_on_the_host_is_refused(run_cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                 ssh_lab: SshLab) -> None:
    roots = [make_root(tmp_path / "lib"), make_root(tmp_path / "lib64")]
    project = make_project(tmp_path, ssh_lab, roots)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    (roots[0] / ".variantctl").mkdir()
    (roots[0] / ".variantctl" / "lock").symlink_to(victim)

    res = run_cli(["apply", "eager-allreduce", "--host", "gpu1"], project=project)
    assert res.code == 2, res.output
    assert f"{roots[0] / '.variantctl' / 'lock'}: is a symbolic link" in res.stderr
    assert victim.read_bytes() == VICTIM
    before = (CASE / "before.py").read_bytes()
    assert all((r / REL).read_bytes() == before for r in roots)


def test_the_remote_lock_never_opens_a_link(tmp_path: Path, gpu1) -> None:  # type: ignore[no-untyped-def]
    """Below the patch engine's lstat checks: the holder on the host refuses a link itself."""
    from variantctl.errors import TargetError
    from variantctl.targets.ssh import SshTarget

    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    (tmp_path / "lock").symlink_to(victim)
    target = SshTarget(gpu1).connect()
    try:
        with pytest.raises(TargetError) as info, target.lock(str(tmp_path / "lock")):
            pass
        assert info.value.kind == "link"
        with pytest.raises(TargetError) as info:
            target.write_atomic(str(tmp_path / "lock"), b"x")
        assert info.value.kind == "link"
    finally:
        target.close()
    assert victim.read_bytes() == VICTIM and (tmp_path / "lock").is_symlink()


def test_a_symlinked_target_file_on_the_host_stays_a_link(run_cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          ssh_lab: SshLab) -> None:
    roots = [make_root(tmp_path / "lib"), make_root(tmp_path / "lib64")]
    project = make_project(tmp_path, ssh_lab, roots)
    outside = tmp_path / "outside.py"
    outside.write_bytes((CASE / "before.py").read_bytes())
    (roots[1] / REL).unlink()
    (roots[1] / REL).symlink_to(outside)

    res = run_cli(["apply", "eager-allreduce", "--host", "gpu1"], project=project)
    assert res.code == 2, res.output
    assert f"{roots[1] / REL}: is a symbolic link" in res.stderr
    assert (roots[1] / REL).is_symlink()
    assert outside.read_bytes() == (CASE / "before.py").read_bytes()
    assert files_under(roots[0]) == [str(REL)]  # one transaction: no root was patched


def test_a_dangling_link_at_the_backup_name_on_the_host_is_skipped(  # type: ignore[no-untyped-def]
        run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:
    from datetime import datetime, timezone

    roots = [make_root(tmp_path / "lib")]
    project = make_project(tmp_path, ssh_lab, roots)
    today = datetime.now(timezone.utc).strftime("%Y%m%d")
    name = roots[0] / REL.parent / f"arg_utils.py.bak_{today}_eager_allreduce"
    name.symlink_to(tmp_path / "nowhere")

    res = run_cli(["apply", "eager-allreduce", "--host", "gpu1"], project=project)
    assert res.code == 0, res.output
    assert name.is_symlink() and not (tmp_path / "nowhere").exists()
    assert Path(f"{name}.1").read_bytes() == (CASE / "before.py").read_bytes()


def test_recovery_over_ssh_removes_temp_files_and_names_an_unreadable_journal(  # type: ignore[no-untyped-def]
        run_cli, tmp_path: Path, ssh_lab: SshLab) -> None:
    from tests.unit.patching.test_recovery_safety import KILLER

    roots = [make_root(tmp_path / "lib"), make_root(tmp_path / "lib64")]
    project = make_project(tmp_path, ssh_lab, roots)
    before = (CASE / "before.py").read_bytes()
    # killed while writing the first backup (locally: the files are the host's files)
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    proc = subprocess.run([sys.executable, str(script), str(project / "patchsets"),
                           *map(str, roots)], capture_output=True, text=True, cwd=REPO,
                          check=False)
    assert proc.returncode == -9, proc.stdout + proc.stderr
    (tmp,) = [p for r in roots for p in r.rglob("*.variantctl-tmp")]

    st = run_cli(["status", "eager-allreduce", "--host", "gpu1"], project=project)
    assert st.code == 0, st.output
    assert f"{tmp}: removed a temp file left by an interrupted write" in st.stderr
    assert not [p for r in roots for p in r.rglob("*.variantctl-tmp")]
    assert all(files_under(r) == [str(REL)] and (r / REL).read_bytes() == before for r in roots)

    journal = roots[1] / ".variantctl" / "journal.json"
    journal.write_bytes(b"\x00not json")
    st = run_cli(["status", "eager-allreduce", "--host", "gpu1"], project=project)
    assert st.code == 3, st.output
    assert f"{journal}: unreadable transaction journal" in st.stderr
    assert "recovered" not in st.stderr and journal.exists()
