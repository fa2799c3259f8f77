"""Shell completion of the project's names: variants, patchsets, sweeps and run ids.

click completes commands and options itself (``_VARIANTCTL_COMPLETE=bash_source
variantctl``, README "Shell completion"); these callbacks add the names an argument
takes. They run while the shell waits, before any command: they read only names (file
stems, run directory names — no YAML is parsed but the variant catalog's, no run.json
read), and any error completes nothing rather than print into the user's prompt.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import click
from click.shell_completion import CompletionItem

from variantctl.errors import VariantctlError

Complete = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]


def _project(ctx: click.Context) -> Path | None:
    """The project ``--project``/``VARIANTCTL_PROJECT``/the working directory names."""
    from variantctl.env import find_project_dir

    named = ctx.find_root().params.get("project") or os.environ.get("VARIANTCTL_PROJECT")
    if named:
        return Path(named).expanduser()
    return find_project_dir(Path.cwd())


def _items(names: Iterable[str], incomplete: str, help: str) -> list[CompletionItem]:
    return [CompletionItem(n, help=help) for n in dict.fromkeys(names)
            if n.startswith(incomplete)]


def _variants(project: Path) -> list[str]:
    from variantctl.config.variants import load_catalog

    return load_catalog(project / "variants").names()


def _patchsets(project: Path) -> list[str]:
    from variantctl.config.patchsets import patchset_names

    return patchset_names(project / "patchsets")


def _sweeps(project: Path) -> list[str]:
    """Sweep definitions (``sweeps/NAME.yaml``) and sweeps that ran (their state files)."""
    from variantctl.config.sweeps import sweep_names, sweeps_dir

    states = project / "runs" / "sweeps"
    ran = sorted(p.stem for p in states.glob("*.json")) if states.is_dir() else []
    return sweep_names(sweeps_dir(project)) + ran


def _runs(project: Path) -> list[str]:
    """Run ids, newest first (the one usually wanted)."""
    from variantctl.runs.store import RunStore

    return [d.run_id for d in reversed(RunStore(project / "runs").dirs())]


def _tunes(project: Path) -> list[str]:
    """Tunes that ran (their state files), for ``report --tune``."""
    states = project / "runs" / "tunes"
    return sorted(p.stem for p in states.glob("*.json")) if states.is_dir() else []


def _completer(*sources: tuple[Callable[[Path], list[str]], str]) -> Complete:
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str
                 ) -> list[CompletionItem]:
        project = _project(ctx)
        if project is None:
            return []
        out: list[CompletionItem] = []
        for names, what in sources:
            try:
                out += _items(names(project), incomplete, what)
            except (OSError, VariantctlError):
                continue  # a broken file: the command itself will say what is wrong
        return out

    return complete


variant_names = _completer((_variants, "variant"))
patchset_names = _completer((_patchsets, "patchset"))
sweep_names = _completer((_sweeps, "sweep"))
run_ids = _completer((_runs, "run"))
sweeps_and_runs = _completer((_sweeps, "sweep"), (_runs, "run"))
tune_names = _completer((_tunes, "tune"))
