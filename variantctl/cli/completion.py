"""Shell completion of the project's names: variants, patchsets, sweeps and run ids.

click completes commands and options itself (``_VARIANTCTL_COMPLETE=bash_source
variantctl``, README "Shell completion"); these callbacks add the names an argument
takes, read by :mod:`variantctl.usecases.names`. Any error completes nothing rather
than print into the user's prompt.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import click
from click.shell_completion import CompletionItem

from variantctl.errors import VariantctlError
from variantctl.usecases import names

Complete = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]


def _completer(*sources: tuple[Callable[[Path], list[str]], str]) -> Complete:
    def complete(ctx: click.Context, param: click.Parameter, incomplete: str
                 ) -> list[CompletionItem]:
        named = ctx.find_root().params.get("project") or os.environ.get("VARIANTCTL_PROJECT")
        project = names.project_dir(named, Path.cwd())
        if project is None:
            return []
        out: list[CompletionItem] = []
        for read, what in sources:
            try:
                found = read(project)
            except (OSError, VariantctlError):
                continue  # a broken file: the command itself will say what is wrong
            out += [CompletionItem(n, help=what) for n in dict.fromkeys(found)
                    if n.startswith(incomplete)]
        return out

    return complete


variant_names = _completer((names.variants, "variant"))
patchset_names = _completer((names.patchsets, "patchset"))
sweep_names = _completer((names.sweeps, "sweep"))
run_ids = _completer((names.runs, "run"))
sweeps_and_runs = _completer((names.sweeps, "sweep"), (names.runs, "run"))
tune_names = _completer((names.tunes, "tune"))
