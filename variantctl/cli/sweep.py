"""``variantctl sweep NAME [--dry-run] [--resume] [--hosts a,b] [--include-predicted]``.

Thin: the options; the flow is :mod:`variantctl.cli.sweepflow`, the planning and the
execution :mod:`variantctl.sweeps`.
"""

from __future__ import annotations

import click

from variantctl.cli.common import FiniteFloat, json_option, pass_env
from variantctl.cli.completion import sweep_names
from variantctl.env import Environment


@click.command("sweep")
@click.argument("name", shell_complete=sweep_names)
@click.option("--dry-run", is_flag=True,
              help="Print the plan (points, predictions, history, ETA) and stop; "
              "needs no connection to any host.")
@click.option("--resume", is_flag=True,
              help="Continue the last run of this sweep: skip the points it measured.")
@click.option("--hosts", "hosts", help="Spread the points over these hosts (comma-separated; "
              "default: the sweep file's hosts, else each base variant's host).")
@click.option("--include-predicted", is_flag=True,
              help="Also run the points the pre-flight rules predict to fail "
              "(the real outcome is recorded with its signature).")
@click.option("--grace", type=FiniteFloat(min=0), default=10.0, show_default=True,
              help="Seconds a server gets to exit on SIGTERM when it is stopped.")
@json_option
@pass_env
def sweep(env: Environment, name: str, dry_run: bool, resume: bool, hosts: str | None,
          include_predicted: bool, grace: float, as_json: bool) -> None:
    """Run a sweep file's grid: plan, launch, bench and stop every point, resumable."""
    from variantctl.cli import finish
    from variantctl.cli.sweepflow import run_sweep_command

    code = run_sweep_command(env, name, dry_run=dry_run, resume=resume, hosts=hosts,
                             include_predicted=include_predicted, grace=grace,
                             as_json=as_json)
    if code:
        finish(code)
