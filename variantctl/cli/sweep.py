"""``variantctl sweep NAME [--dry-run] [--resume] [--hosts a,b] [--include-predicted]``.

Thin: the options, one call to :mod:`variantctl.usecases.sweep` (the planning and the
execution are :mod:`variantctl.sweeps`), the plan and the outcome printed, the exit code.
"""

from __future__ import annotations

import click

from variantctl.cli.common import grace_option, json_option, pass_env
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
@grace_option()
@json_option
@pass_env
def sweep(env: Environment, name: str, dry_run: bool, resume: bool, hosts: str | None,
          include_predicted: bool, grace: float, as_json: bool) -> int:
    """Run a sweep file's grid: plan, launch, bench and stop every point, resumable."""
    from variantctl.project.loaded import Project
    from variantctl.render import sweep as view
    from variantctl.sweeps.plan import Plan
    from variantctl.terminal.output import emit, print_json
    from variantctl.terminal.sweepprogress import ProgressPrinter
    from variantctl.usecases.sweep import SweepRequest, plan_sweep, run_sweep

    req = SweepRequest(name, dry_run=dry_run, resume=resume, hosts=hosts,
                       include_predicted=include_predicted, grace=grace)
    project = Project(env)
    if dry_run:
        plan = plan_sweep(project, req)
        if as_json:
            print_json(env, {"plan": view.plan_json(plan, project.secrets), "dry_run": True})
        else:
            emit(env, view.plan_blocks(plan, dry_run=True, secrets=project.secrets))
        return 0

    def start(plan: Plan) -> ProgressPrinter:
        if not as_json:
            emit(env, view.plan_blocks(plan, dry_run=False, secrets=project.secrets))
        return ProgressPrinter(env, plan, env.clock)

    out = run_sweep(project, req, start)
    if as_json:
        print_json(env, view.run_json(out.doc, out.path, out.host_errors))
    else:
        emit(env, view.result_blocks(out.doc, str(out.path)))
        emit(env, view.host_error_blocks(sorted(out.host_errors.items())))
    return out.exit_code
