"""``variantctl rollback NAME``: undo an applied patchset (restore backups, verified)."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import patchset_names
from variantctl.cli.patchcommon import render_per_host, root_options
from variantctl.env import Environment


@click.command()
@click.argument("name", shell_complete=patchset_names)
@root_options
@click.option("--force", is_flag=True,
              help="If a file changed since it was patched (or has no backup), revert it with "
              "the inverse transform instead of refusing.")
@click.option("--dry-run", is_flag=True, help="Show what would be restored; write nothing.")
@json_option
@pass_env
def rollback(env: Environment, name: str, roots: tuple[str, ...], host_name: str,
             hosts_csv: str | None, force: bool, dry_run: bool, as_json: bool) -> int:
    """Restore every root's copy from its backup, only if it is still what apply wrote."""
    from variantctl.render.patching import report_blocks
    from variantctl.usecases.patching import PatchRequest, rollback_patchset

    runs = rollback_patchset(env, PatchRequest(name, host_name, hosts_csv, roots),
                             force=force, dry_run=dry_run)
    return render_per_host(env, runs, multi=bool(hosts_csv), as_json=as_json,
                           to_json=lambda r: r.to_json(),
                           render=lambda r: report_blocks(env.cwd, r),
                           exit_code=lambda r: r.exit_code)
