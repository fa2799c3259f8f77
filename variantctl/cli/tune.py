"""``variantctl tune NAME [--dry-run] [--resume] [--grace S] [--json]``.

Thin: the options; the search is :func:`variantctl.usecases.tune.run_tune` (the spec read by
:mod:`variantctl.config.tunes`, the space checked by :mod:`variantctl.tune.preflight`),
printed by :mod:`variantctl.render.tune`.
"""

from __future__ import annotations

import click

from variantctl.cli.common import FiniteFloat, json_option, pass_env
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
@click.option("--grace", type=FiniteFloat(min=0), default=10.0, show_default=True,
              help="Seconds a server gets to exit on SIGTERM when it is stopped.")
@json_option
@pass_env
def tune(env: Environment, name: str, dry_run: bool, resume: bool, grace: float,
         as_json: bool) -> None:
    """Search tunes/NAME.yaml's space of settings of a variant for the best configuration
    under its objective (docs/tune.md)."""
    from variantctl.project.loaded import Project
    from variantctl.render.output import text
    from variantctl.render.tune import space_blocks
    from variantctl.terminal.output import emit, print_json
    from variantctl.tune.preflight import plan_space

    project = Project(env)
    spec = project.tune(name)
    base = project.resolve(spec.variant)
    plan = plan_space(spec, base, project.hosts, project.patchset_names)
    if not dry_run:
        from variantctl.render.tune import result_blocks, tune_json
        from variantctl.sweeps.plan import Plan
        from variantctl.terminal.sweepprogress import ProgressPrinter
        from variantctl.usecases.tune import run_tune

        def start(batch: Plan) -> ProgressPrinter:  # each batch's points, as sweep shows
            return ProgressPrinter(env, batch, env.clock)

        outcome = run_tune(project, name, start, grace=grace, resume=resume)
        doc = tune_json(outcome)
        if as_json:
            print_json(env, doc)
        else:
            if outcome.stopped:
                emit(env, [text("tune: stopped server(s) the interrupted run left: "
                                + ", ".join(outcome.stopped), err=True)])
            for host, err in outcome.host_errors.items():
                emit(env, [text(f"tune: host {host}: {err.message}", err=True)])
            emit(env, result_blocks(doc))
        return
    if as_json:
        print_json(env, {"dry_run": True, "plan": plan.to_json()})
    else:
        emit(env, space_blocks(plan))
