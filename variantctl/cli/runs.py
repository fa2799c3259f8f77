"""``variantctl runs [--variant V] [--verdict K] [--json]`` and ``runs show ID``."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.group("runs", invoke_without_command=True)
@click.option("--variant", "variant", help="Only the runs of this variant.")
@click.option("--verdict", "verdict",
              help="Only runs that ended so (ready, failed, hang, exited, timeout, started).")
@json_option
@click.pass_context
def runs(ctx: click.Context, variant: str | None, verdict: str | None, as_json: bool) -> None:
    """The archived runs (runs/ of the project): id, verdict, facts, benchmarks."""
    if ctx.invoked_subcommand is not None:
        return
    from variantctl.cli.common import current_env
    from variantctl.cli.output import emit, print_json
    from variantctl.render.output import Block, text
    from variantctl.render.runs import runs_table
    from variantctl.usecases.runs import list_runs

    env = current_env(ctx)
    root, rows = list_runs(env, variant=variant, verdict=verdict)
    if as_json:
        print_json(env, {"runs": rows})
        return
    if not rows:
        emit(env, [text(f"no runs in {root}", err=True)])
        return
    emit(env, [Block(runs_table(rows))])


@runs.command("show")
@click.argument("run_id")
@json_option
@pass_env
def show(env: Environment, run_id: str, as_json: bool) -> None:
    """One run in full: verdict, evidence, facts, patches, benchmarks."""
    from variantctl.cli.output import emit, print_json
    from variantctl.project.loaded import Project
    from variantctl.render.output import text
    from variantctl.render.runs import run_lines
    from variantctl.secretmask import masked_record
    from variantctl.usecases.runs import show_run

    rule = Project(env).secrets  # secrets in the record are shown masked
    d, rec = show_run(env, run_id)
    if as_json:
        print_json(env, {"run": {"dir": str(d.path), **masked_record(rec.to_json(), rule)}})
        return
    emit(env, [text(line) for line in run_lines(d, rec, rule)])


def _add_trend() -> None:
    from variantctl.cli.trend import trend

    runs.add_command(trend)


_add_trend()
