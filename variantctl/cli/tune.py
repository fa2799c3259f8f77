"""``variantctl tune NAME --dry-run [--json]``.

Thin: the options; the spec is read by :mod:`variantctl.config.tunes`, the space checked
by :mod:`variantctl.tune.preflight`, printed by :mod:`variantctl.render.tune`.
"""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.command("tune")
@click.argument("name")
@click.option("--dry-run", is_flag=True,
              help="Print the space, what the pre-flight rules prune, the sampler and the "
              "budget; launch nothing.")
@json_option
@pass_env
def tune(env: Environment, name: str, dry_run: bool, as_json: bool) -> None:
    """Search tunes/NAME.yaml's space of settings of a variant for the best configuration
    under its objective (docs/tune.md)."""
    from variantctl.cli.output import emit, print_json
    from variantctl.errors import VariantctlError
    from variantctl.exitcodes import ExitCode
    from variantctl.project.loaded import Project
    from variantctl.render.tune import space_blocks
    from variantctl.tune.preflight import plan_space

    project = Project(env)
    spec = project.tune(name)
    base = project.resolve(spec.variant)
    plan = plan_space(spec, base, project.hosts, project.patchset_names)
    if not dry_run:
        raise VariantctlError(
            "tune launches nothing yet: only --dry-run is implemented (the search is "
            "docs/tune.md's next step)", hint=f"variantctl tune {name} --dry-run",
            exit_code=ExitCode.USAGE)
    if as_json:
        print_json(env, {"dry_run": True, "plan": plan.to_json()})
    else:
        emit(env, space_blocks(plan))
