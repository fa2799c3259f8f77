"""``variantctl/cli/`` stays thin (issue 27.1): options, one use case, rendering through
``render/`` and ``terminal/``, an exit code. Work that grows there belongs below it, so
the package is held to a size: at most 2,000 lines, no module over 200."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REPO

CLI = REPO / "variantctl" / "cli"
TOTAL, PER_MODULE = 2000, 200


def _sizes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): len(p.read_text().splitlines())
            for p in sorted(folder.rglob("*.py"))}


def test_cli_package_stays_within_its_size() -> None:
    sizes = _sizes(CLI)
    assert sum(sizes.values()) <= TOTAL, sizes
    assert {name: n for name, n in sizes.items() if n > PER_MODULE} == {}


def test_the_size_check_sees_a_large_module(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * (PER_MODULE + 1))
    (tmp_path / "small.py").write_text("y = 2\n")
    assert _sizes(tmp_path) == {"big.py": PER_MODULE + 1, "small.py": 1}
