"""``variantctl tune NAME [--dry-run] [--resume] [--grace S] [--json]``.

Thin: the options; the search is :func:`variantctl.usecases.tune.run_tune` (the spec read by
:mod:`variantctl.config.tunes`, the space checked by :mod:`variantctl.tune.preflight`),
printed by :mod:`variantctl.render.tune`.
"""

from __future__ import annotations

import click

from variantctl.cli.common import grace_option, json_option, pass_env
from variantctl.env import Environment


@click.command("tune")
@click.argument("name")
@click.option("--dry-run", is_flag=True,
              help="Print the space, what the pre-flight rules prune, the sampler and the "
              "budget; launch nothing.")
@click.option("--resume", is_flag=True,
              help="Continue the tune's interrupted run (Ctrl-C, a kill) within its "
              "budget, reusing every measurement it made; a plain rerun of an "
              "interrupted tune is refused.")
@grace_option()
@json_option
@pass_env
def tune(env: Environment, name: str, dry_run: bool, resume: bool, grace: float,
         as_json: bool) -> None:
    """Search tunes/NAME.yaml's space of settings of a variant for the best configuration
    under its objective (docs/tune.md)."""
    from variantctl.project.loaded import Project
    from variantctl.render.tune import notes_blocks, result_blocks, space_blocks, tune_json
    from variantctl.sweeps.plan import Plan
    from variantctl.terminal.output import emit, print_json
    from variantctl.terminal.sweepprogress import ProgressPrinter
    from variantctl.usecases.tune import plan_tune, run_tune

    project = Project(env)
    if dry_run:
        plan = plan_tune(project, name)
        if as_json:
            print_json(env, {"dry_run": True, "plan": plan.to_json()})
        else:
            emit(env, space_blocks(plan))
        return

    def start(batch: Plan) -> ProgressPrinter:  # each batch's points, as sweep shows
        return ProgressPrinter(env, batch, env.clock)

    outcome = run_tune(project, name, start, grace=grace, resume=resume)
    doc = tune_json(outcome)
    if as_json:
        print_json(env, doc)
    else:
        emit(env, notes_blocks(outcome) + result_blocks(doc))
