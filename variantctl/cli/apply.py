"""``variantctl apply NAME``: apply a patchset to every copy of its module(s) on a host."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import patchset_names
from variantctl.cli.patchcommon import render_per_host, root_options
from variantctl.env import Environment


@click.command()
@click.argument("name", shell_complete=patchset_names)
@root_options
@click.option("--dry-run", is_flag=True, help="Plan and show what would change; write nothing.")
@click.option("--backup-template", metavar="TEMPLATE",
              help="Backup file name, e.g. '{file}.bak_{date}_{slug}' (default: the patchset's).")
@json_option
@pass_env
def apply(env: Environment, name: str, roots: tuple[str, ...], host_name: str,
          hosts_csv: str | None, dry_run: bool, backup_template: str | None,
          as_json: bool) -> int:
    """Apply patchset NAME to every root, as one transaction (backups, ledger, lock)."""
    from variantctl.render.patching import report_blocks
    from variantctl.usecases.patching import PatchRequest, apply_patchset

    runs = apply_patchset(env, PatchRequest(name, host_name, hosts_csv, roots),
                          dry_run=dry_run, backup_template=backup_template)
    return render_per_host(env, runs, multi=bool(hosts_csv), as_json=as_json,
                           to_json=lambda r: r.to_json(),
                           render=lambda r: report_blocks(env.cwd, r),
                           exit_code=lambda r: r.exit_code)
