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
def ps(env: Environment, host: str | None, hosts: str | None, as_json: bool) -> int:
    """List running variants (stale records of dead servers are shown as `stale`)."""
    from variantctl.exitcodes import worst_exit_code
    from variantctl.render.hosts import host_errors_blocks
    from variantctl.render.servers import ps_blocks, ps_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.servers import server_statuses

    outcomes = server_statuses(env, host, hosts)
    if as_json:
        print_json(env, ps_json(outcomes, env.now()))
    else:
        emit(env, ps_blocks(outcomes, env.now()))
    emit(env, host_errors_blocks((o.host.name, o.error) for o in outcomes))
    return worst_exit_code(o.error.exit_code for o in outcomes if o.error)
