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
    from variantctl.render.runs import runs_table, summary_json
    from variantctl.runs.store import RunStore

    env = current_env(ctx)
    store = RunStore(env.runs_dir)
    rows = [summary_json(d, rec) for d, rec in store.records()]
    if variant is not None:
        rows = [r for r in rows if r["variant"] == variant]
    if verdict is not None:
        rows = [r for r in rows if r.get("verdict") == verdict]
    if as_json:
        print_json(env, {"runs": rows})
        return
    if not rows:
        emit(env, [text(f"no runs in {store.root}", err=True)])
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
    from variantctl.runs.store import RunStore
    from variantctl.secretmask import masked_record

    rule = Project(env).secrets
    store = RunStore(env.runs_dir)
    d = store.find(run_id)
    rec = store.read(d.path)
    if as_json:
        print_json(env, {"run": {"dir": str(d.path), **masked_record(rec.to_json(), rule)}})
        return
    emit(env, [text(line) for line in run_lines(d, rec, rule)])


def _add_trend() -> None:
    from variantctl.cli.trend import trend

    runs.add_command(trend)


_add_trend()
