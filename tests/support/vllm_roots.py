"""Two "CoreX-style" roots of the real vLLM package whose arg_utils.py hard-codes
``enforce_eager=True`` (and ``disable_custom_all_reduce=True``), like the seed's
Iluvatar build with two full copies on PYTHONPATH.

Each root holds ``vllm/`` as a directory of symlinks to the real installed
package, except ``vllm/engine/`` whose ``arg_utils.py`` is a real, edited copy;
so ``PYTHONPATH=A:B`` makes the real server import A's arg_utils.py, and the
patch engine has two real files to patch (symlinked files are never touched).
"""

from __future__ import annotations

from pathlib import Path

KEYWORDS = {
    "enforce_eager=self.enforce_eager,": "enforce_eager=True,",
    "disable_custom_all_reduce=self.disable_custom_all_reduce,": "disable_custom_all_reduce=True,",
}


def hard_code(text: str) -> str:
    for before, after in KEYWORDS.items():
        assert text.count(before) == 1, f"{before!r} not found exactly once"
        text = text.replace(before, after)
    return text


def make_corex_roots(site_packages: Path, dest: Path, names: tuple[str, ...] = ("lib", "lib64")
                     ) -> list[Path]:
    real = site_packages / "vllm"
    roots = []
    for name in names:
        root = dest / name / "python3" / "dist-packages"
        pkg = root / "vllm"
        pkg.mkdir(parents=True)
        for entry in real.iterdir():
            if entry.name in ("engine", "__pycache__"):
                continue
            (pkg / entry.name).symlink_to(entry)
        engine = pkg / "engine"
        engine.mkdir()
        for entry in (real / "engine").iterdir():
            if entry.name in ("arg_utils.py", "__pycache__"):
                continue
            (engine / entry.name).symlink_to(entry)
        (engine / "arg_utils.py").write_text(hard_code((real / "engine" / "arg_utils.py")
                                                       .read_text()))
        roots.append(root)
    return roots
