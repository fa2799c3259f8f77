"""The names a command argument can take, for shell completion: the project's variants,
patchsets, sweeps, run ids and tunes.

They are read while the shell waits, before any command runs: only names (file stems,
run directory names — no YAML is parsed but the variant catalog's, no run.json read).
A broken file raises (``OSError``, ``VariantctlError``); the caller completes nothing
for it rather than print into the user's prompt.
"""

from __future__ import annotations

from pathlib import Path


def project_dir(named: str | Path | None, cwd: Path) -> Path | None:
    """The project ``--project``/``VARIANTCTL_PROJECT`` names (``named``), else the one
    found from ``cwd``."""
    from variantctl.env import find_project_dir

    if named:
        return Path(named).expanduser()
    return find_project_dir(cwd)


def variants(project: Path) -> list[str]:
    from variantctl.config.variants import load_catalog

    return load_catalog(project / "variants").names()


def patchsets(project: Path) -> list[str]:
    from variantctl.config.patchsets import patchset_names

    return patchset_names(project / "patchsets")


def sweeps(project: Path) -> list[str]:
    """Sweep definitions (``sweeps/NAME.yaml``) and sweeps that ran (their state files)."""
    from variantctl.config.sweeps import sweep_names, sweeps_dir

    states = project / "runs" / "sweeps"
    ran = sorted(p.stem for p in states.glob("*.json")) if states.is_dir() else []
    return sweep_names(sweeps_dir(project)) + ran


def runs(project: Path) -> list[str]:
    """Run ids, newest first (the one usually wanted)."""
    from variantctl.runs.store import RunStore

    return [d.run_id for d in reversed(RunStore(project / "runs").dirs())]


def tunes(project: Path) -> list[str]:
    """Tunes that ran (their state files), for ``report --tune``."""
    states = project / "runs" / "tunes"
    return sorted(p.stem for p in states.glob("*.json")) if states.is_dir() else []
