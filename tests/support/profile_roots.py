"""Runnable copies of the real vLLM CPU build whose profiled modules are real files.

Each root holds ``vllm/`` as a tree of symlinks to the installed package, except
the directories on the way to the modules a patchset patches, which are real
directories, and those modules, which are real copies. ``PYTHONPATH=A:B`` makes
the real server import A's copies, and the patch engine has real files to patch
in every root (it never writes through a link) while the cached venv itself is
never touched.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path


def _materialise(real: Path, copy: Path, parts: Sequence[str]) -> None:
    """Make ``copy/parts…`` a real file, its parents real directories of links."""
    here_real, here_copy = real, copy
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        target = here_copy / part
        if last:
            if target.is_symlink():
                target.unlink()
            if not target.exists():
                shutil.copy2(here_real / part, target)
            return
        if target.is_symlink():
            target.unlink()
        if not target.exists():
            target.mkdir()
            for entry in (here_real / part).iterdir():
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        here_real, here_copy = here_real / part, target


def make_profile_roots(site_packages: Path, dest: Path, modules: Sequence[str],
                       names: tuple[str, ...] = ("lib", "lib64")) -> list[Path]:
    """Roots ``dest/NAME/python3/dist-packages`` with ``modules`` as real copies."""
    roots = []
    for name in names:
        root = dest / name / "python3" / "dist-packages"
        root.mkdir(parents=True)
        (root / "vllm").symlink_to(site_packages / "vllm")
        for module in modules:
            parts = module.split(".")
            parts[-1] += ".py"
            _materialise(site_packages, root, parts)
        roots.append(root)
    return roots
