"""LocalTarget: atomic writes keep mode, never clobber, map errno to kinds."""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from variantctl.errors import TargetError
from variantctl.targets.base import Target
from variantctl.targets.local import LocalTarget


def test_is_a_target() -> None:
    assert isinstance(LocalTarget(), Target)


def test_write_atomic_keeps_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("old\n")
    f.chmod(0o640)
    t = LocalTarget()
    t.write_atomic(str(f), b"new\n")
    assert f.read_bytes() == b"new\n"
    assert f.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["a.py"]


def test_write_atomic_from_writes_chunks_or_leaves_the_old_file(tmp_path: Path) -> None:
    f = tmp_path / "index.jsonl"
    f.write_text("old\n")
    t = LocalTarget()
    t.write_atomic_from(str(f), iter([b"one\n", b"two\n"]))
    assert f.read_bytes() == b"one\ntwo\n"

    def failing() -> Iterator[bytes]:
        yield b"half"
        raise ValueError("the producer failed")

    with pytest.raises(ValueError):
        t.write_atomic_from(str(f), failing())
    assert f.read_bytes() == b"one\ntwo\n"
    assert os.listdir(tmp_path) == ["index.jsonl"]


def test_temp_files_are_private_new_and_recognised_as_temps(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A write's temp file (what an interrupted write leaves) is created owner-only, never
    over an existing file or through a link, and named as recovery's pattern expects."""
    from variantctl.targets import local
    from variantctl.targets.guard import temp_pattern

    monkeypatch.chdir(tmp_path)
    fd, tmp = local._create_temp(".", ".a.py.", ".variantctl-tmp")
    os.close(fd)
    assert os.path.dirname(tmp) == str(tmp_path)  # absolute, as mkstemp's
    assert temp_pattern(str(tmp_path / "a.py")).fullmatch(os.path.basename(tmp))
    assert os.stat(tmp).st_mode & 0o777 == 0o600
    # a name already taken (a file, or a link to one elsewhere) is never opened: another
    # name is drawn
    taken = iter([bytes(6), bytes(6), b"\x01" * 6])
    monkeypatch.setattr(local.os, "urandom", lambda n: next(taken))
    (tmp_path / "elsewhere").write_text("keep\n")
    os.symlink(tmp_path / "elsewhere", tmp_path / f".b.{bytes(6).hex()}.t")
    fd, second = local._create_temp(str(tmp_path), ".b.", ".t")
    os.close(fd)
    assert second.endswith(f".b.{'01' * 6}.t")
    assert (tmp_path / "elsewhere").read_text() == "keep\n"


def test_write_new_refuses_existing(tmp_path: Path) -> None:
    t = LocalTarget()
    p = str(tmp_path / "b.bak")
    t.write_new(p, b"one")
    with pytest.raises(TargetError) as exc:
        t.write_new(p, b"two")
    assert exc.value.kind == "exists"
    assert Path(p).read_bytes() == b"one"
    assert sorted(os.listdir(tmp_path)) == ["b.bak"]


def test_read_only_dir_is_classified(tmp_path: Path) -> None:
    t = LocalTarget()
    with pytest.raises(TargetError) as exc:
        t.read_bytes(str(tmp_path / "missing.py"))
    assert exc.value.kind == "not-found"
    assert "missing.py: no such file or directory" in str(exc.value)


def _hold(path: str, ready: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    with LocalTarget().lock(path):
        ready.set()
        time.sleep(1.5)


def test_lock_is_exclusive_and_released_on_death(tmp_path: Path) -> None:
    lock = str(tmp_path / "lock")
    ready = multiprocessing.Event()
    proc = multiprocessing.Process(target=_hold, args=(lock, ready))
    proc.start()
    assert ready.wait(10)
    with pytest.raises(TargetError) as exc, LocalTarget().lock(lock, timeout=0.2):
        pass
    assert exc.value.kind == "busy"
    proc.kill()  # a killed holder must not leave a stale lock
    proc.join()
    with LocalTarget().lock(lock, timeout=1.0):
        pass


def test_run_captures_output() -> None:
    r = LocalTarget().run(["sh", "-c", "echo $X; exit 3"], env={"X": "hi"})
    assert (r.returncode, r.stdout) == (3, "hi\n")
    with pytest.raises(TargetError, match="program not found"):
        LocalTarget().run(["/nonexistent/prog"])
