"""Helpers for variant tests: write a small catalog into a temp project and load it."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from variantctl.config.variants import Catalog, load_catalog

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures" / "variants"


def write_project(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``variants/<name>`` files (dedented) under ``root``; returns the project dir."""
    vdir = root / "variants"
    vdir.mkdir(parents=True, exist_ok=True)
    (root / "patchsets").mkdir(exist_ok=True)
    for name, text in files.items():
        (vdir / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def make_catalog(tmp_path: Path) -> Callable[..., Catalog]:
    """``make_catalog({"a.yaml": "...", ...}, environ={...})`` -> a loaded Catalog."""

    def _make(files: Mapping[str, str], environ: Mapping[str, str] | None = None) -> Catalog:
        project = write_project(tmp_path, files)
        return load_catalog(project / "variants", environ or {})

    return _make
