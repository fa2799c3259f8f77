"""``variantctl bisect RUN_A RUN_B [--dry-run] [--resume] [--include-predicted]``.

Thin: the options, one call to :mod:`variantctl.usecases.bisect` (the rounds and the
decision are :mod:`variantctl.sweeps.bisect`), the output, the exit code.
"""

from __future__ import annotations

from dataclasses import replace

import click

from variantctl.cli.common import grace_option, json_option, pass_env
from variantctl.env import Environment


@click.command("bisect")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--dry-run", is_flag=True,
              help="Print the settings, the strategy, what it will cost in launches and "
              "the first round's plan; launch nothing.")
@click.option("--resume", is_flag=True,
              help="Keep the configurations an earlier bisect of these runs measured.")
@click.option("--include-predicted", is_flag=True,
              help="Also run the configurations the pre-flight rules predict to fail.")
@grace_option()
@json_option
@pass_env
def bisect(env: Environment, run_a: str, run_b: str, dry_run: bool, resume: bool,
           include_predicted: bool, grace: float, as_json: bool) -> int:
    """Find which of the settings RUN_A and RUN_B differ in (args, env, patchsets)
    accounts for their throughput difference, by measuring configurations between them
    on their host (a sweep under the hood). RUN_A and RUN_B are run ids or unique
    prefixes."""
    from variantctl.exitcodes import ExitCode
    from variantctl.project.loaded import Project
    from variantctl.render.bisect import bisect_blocks, bisect_json, dry_run_blocks, dry_run_json
    from variantctl.render.sweep import plan_blocks
    from variantctl.sweeps.plan import Plan
    from variantctl.terminal.output import emit, print_json
    from variantctl.terminal.sweepprogress import ProgressPrinter
    from variantctl.usecases.bisect import BisectRequest, plan_bisect, run_bisect

    req = BisectRequest(run_a, run_b, resume=resume, include_predicted=include_predicted,
                        grace=grace)
    project = Project(env)
    if dry_run:
        p = plan_bisect(project, req)
        if as_json:
            print_json(env, dry_run_json(p, project.secrets))
        else:
            emit(env, dry_run_blocks(p.bisection, p.plan, p.first_launches, p.at_most,
                                     project.secrets))
        return ExitCode.OK

    def start(plan: Plan) -> ProgressPrinter:
        emit(env, [replace(b, err=True)
                   for b in plan_blocks(plan, dry_run=False, secrets=project.secrets)])
        return ProgressPrinter(env, plan, env.clock)

    result = run_bisect(project, req, start)
    if as_json:
        print_json(env, bisect_json(result))
    else:
        emit(env, bisect_blocks(result))
    return ExitCode.FAILED if result.found is None else ExitCode.OK
