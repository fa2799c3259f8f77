"""``variantctl apply NAME``: apply a patchset to every copy of its module(s) on a host."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.patchcommon import host_target, load, paused_gc, root_options, roots_for
from variantctl.env import Environment


@click.command()
@click.argument("name")
@root_options
@click.option("--dry-run", is_flag=True, help="Plan and show what would change; write nothing.")
@click.option("--backup-template", metavar="TEMPLATE",
              help="Backup file name, e.g. '{file}.bak_{date}_{slug}' (default: the patchset's).")
@json_option
@pass_env
def apply(env: Environment, name: str, roots: tuple[str, ...], host_name: str, dry_run: bool,
          backup_template: str | None, as_json: bool) -> None:
    """Apply patchset NAME to every root, as one transaction (backups, ledger, lock)."""
    from variantctl.cli import finish
    from variantctl.targets.patchrun import execute_apply

    ps = load(env, name)
    if backup_template is not None:
        from variantctl.config.patchsets import _template_problem
        from variantctl.errors import VariantctlError

        problem = _template_problem(backup_template)
        if problem:
            raise VariantctlError(f"--backup-template: {problem}")
    with paused_gc(), host_target(env, host_name, roots) as (host, target):
        report = execute_apply(target, roots_for(env, host, target, ps, roots), ps,
                               now=env.now(), dry_run=dry_run, backup_template=backup_template)
    if as_json:
        from variantctl.render.output import print_json

        print_json(env, report.to_json())
    else:
        from variantctl.render.patching import print_report

        print_report(env, report)
    if report.exit_code:
        finish(report.exit_code)
