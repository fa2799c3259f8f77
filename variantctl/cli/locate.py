"""``variantctl locate MODULE``: every copy of a module on a host's path, and which one runs."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.command("locate")
@click.argument("module")
@click.option("--host", "host", help="Host whose Python to ask (default: local).")
@click.option("--hosts", "hosts_csv", help="Comma-separated hosts, in parallel.")
@json_option
@pass_env
def locate(env: Environment, module: str, host: str | None, hosts_csv: str | None,
           as_json: bool) -> int:
    """List every copy of MODULE on the host Python's path with its sha256, and the one
    `import MODULE` would load (the seed's "confirm which path really runs")."""
    from variantctl.exitcodes import ExitCode, worst_exit_code
    from variantctl.render.hosts import host_errors_blocks, locate_blocks, locate_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.hosts import locate_module

    outcomes = locate_module(env, module, host, hosts_csv)
    if as_json:
        print_json(env, locate_json(outcomes))
    else:
        emit(env, locate_blocks(module, outcomes))
    emit(env, host_errors_blocks((o.host.name, o.error) for o in outcomes))
    # a host whose Python does not have the module at all: nothing to locate there
    missing = [ExitCode.FAILED for o in outcomes if o.value and not o.value.copies]
    return worst_exit_code(missing + [o.error.exit_code for o in outcomes if o.error])
