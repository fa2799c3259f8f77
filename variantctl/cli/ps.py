"""``variantctl ps``: servers variantctl started, with pid, port, uptime and health."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.command("ps")
@click.option("--host", "host", help="Host to look at (default: local).")
@click.option("--hosts", "hosts", help="Comma-separated hosts, checked in parallel.")
@json_option
@pass_env
def ps(env: Environment, host: str | None, hosts: str | None, as_json: bool) -> None:
    """List running variants (stale records of dead servers are shown as `stale`)."""
    from variantctl.cli import finish
    from variantctl.launch.report import print_ps
    from variantctl.launch.selection import select_hosts
    from variantctl.launch.servers import layout_for, list_records, statuses
    from variantctl.targets.connect import on_hosts

    chosen = select_hosts(env, host, hosts)
    outcomes = on_hosts(
        chosen, lambda h, t: statuses(t, list_records(t, layout_for(t, h)))
    )
    code = print_ps(env, outcomes, as_json=as_json)
    if code:
        finish(code)
