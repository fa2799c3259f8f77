"""A project with the ``prof`` instrument patchset over a ``pkg.runner`` module in one
root (``check``'s profile-point rule, locally and over SSH)."""

from __future__ import annotations

from pathlib import Path

#: the patchset: one point the sample has, one (MultiStep) it may lack
PROF_PATCHSET = (
    "name: prof\nmodule: pkg.runner\noperations:\n"
    "  - op: instrument\n    functions: [Runner.execute_model, MultiStep.execute_model]\n")


def prof_project(project: Path, root: Path, runner_source: str) -> None:
    """``project`` with patchsets/prof.yaml and an empty variants/; ``root`` holding
    ``pkg/runner.py`` = ``runner_source``."""
    (project / "patchsets").mkdir(parents=True)
    (project / "variants").mkdir()
    (project / "patchsets" / "prof.yaml").write_text(PROF_PATCHSET)
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "runner.py").write_text(runner_source)
