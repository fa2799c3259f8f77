"""``variantctl rollback NAME``: undo an applied patchset (restore backups, verified)."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.patchcommon import host_target, load, paused_gc, root_options, roots_for
from variantctl.env import Environment


@click.command()
@click.argument("name")
@root_options
@click.option("--force", is_flag=True,
              help="If a file changed since it was patched (or has no backup), revert it with "
              "the inverse transform instead of refusing.")
@click.option("--dry-run", is_flag=True, help="Show what would be restored; write nothing.")
@json_option
@pass_env
def rollback(env: Environment, name: str, roots: tuple[str, ...], host_name: str, force: bool,
             dry_run: bool, as_json: bool) -> None:
    """Restore every root's copy from its backup, only if it is still what apply wrote."""
    from variantctl.cli import finish
    from variantctl.targets.patchrun import execute_rollback

    ps = load(env, name)
    with paused_gc(), host_target(env, host_name, roots) as (host, target):
        report = execute_rollback(target, roots_for(env, host, target, ps, roots), ps,
                                  now=env.now(), force=force, dry_run=dry_run)
    if as_json:
        from variantctl.render.output import print_json

        print_json(env, report.to_json())
    else:
        from variantctl.render.patching import print_report

        print_report(env, report)
    if report.exit_code:
        finish(report.exit_code)
