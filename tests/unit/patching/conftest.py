"""Fixtures for the patch engine: a throwaway project and roots holding fixture copies."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "patching"
EAGER = FIXTURES / "eager_allreduce"
REL = Path("vllm/engine/arg_utils.py")
CASES = ("v055_engine_config", "v062_model_config", "traps")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project dir with the shipped eager-allreduce patchset."""
    p = tmp_path / "project"
    (p / "patchsets").mkdir(parents=True)
    shutil.copy(REPO / "patchsets" / "eager-allreduce.yaml", p / "patchsets")
    return p


@pytest.fixture
def make_roots(tmp_path: Path) -> Callable[..., list[Path]]:
    """``make_roots(data, n=2)``: n roots each holding ``data`` as vllm/engine/arg_utils.py."""

    def _make(data: bytes, n: int = 2, names: tuple[str, ...] = ()) -> list[Path]:
        roots = []
        for i in range(n):
            name = names[i] if names else f"root{i + 1}"
            root = tmp_path / name / "dist-packages"
            (root / REL).parent.mkdir(parents=True, exist_ok=True)
            (root / REL).write_bytes(data)
            roots.append(root)
        return roots

    return _make


def root_args(roots: list[Path]) -> list[str]:
    return [a for r in roots for a in ("--root", str(r))]


def snapshot(dirs: list[Path]) -> dict[str, bytes]:
    """Every file (except .variantctl bookkeeping) under the dirs, by path."""
    out = {}
    for d in dirs:
        for p in sorted(d.rglob("*")):
            if p.is_file() and ".variantctl" not in p.parts:
                out[str(p)] = p.read_bytes()
    return out


@pytest.fixture
def immutable() -> Iterator[Callable[[Path], None]]:
    """``immutable(path)``: chattr +i (blocks even root); undone at teardown."""
    done: list[Path] = []

    def _set(path: Path) -> None:
        if os.geteuid() != 0:
            pytest.fail("this test needs root (chattr +i); CI runs as root")
        subprocess.run(["chattr", "+i", str(path)], check=True)
        done.append(path)

    yield _set
    for p in reversed(done):
        subprocess.run(["chattr", "-i", str(p)], check=False)


@pytest.fixture
def readonly_mount(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """``readonly_mount(dir)``: bind-mount ``dir`` read-only onto itself; unmounted after."""
    mounted: list[Path] = []

    def _mount(path: Path) -> None:
        if os.geteuid() != 0:
            pytest.fail("this test needs root (a read-only bind mount); CI runs as root")
        subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
        mounted.append(path)
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)

    yield _mount
    for p in reversed(mounted):
        subprocess.run(["umount", str(p)], check=False)
