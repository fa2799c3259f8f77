"""``variantctl stop``: TERM the server's process group, KILL after a grace period, verify."""

from __future__ import annotations

import click

from variantctl.cli.common import grace_option, json_option, pass_env
from variantctl.env import Environment


@click.command("stop")
@click.argument("variant", required=False)
@click.option("--all", "stop_all", is_flag=True, help="Stop every server variantctl started.")
@click.option("--host", "host", help="Host the server runs on (default: the variant's host).")
@click.option("--hosts", "hosts", help="Comma-separated hosts, in parallel.")
@grace_option("Seconds between TERM and KILL.")
@json_option
@pass_env
def stop(env: Environment, variant: str | None, stop_all: bool, host: str | None,
         hosts: str | None, grace: float, as_json: bool) -> int:
    """Stop VARIANT (or --all) and check no process remains and the port is free."""
    from variantctl.errors import VariantctlError
    from variantctl.exitcodes import ExitCode, worst_exit_code
    from variantctl.render.hosts import host_errors_blocks
    from variantctl.render.servers import stop_blocks, stops_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.servers import stop as stop_variant

    if bool(variant) == stop_all:
        raise VariantctlError("give a VARIANT or --all", hint="variantctl ps lists them")
    outcomes = stop_variant(env, variant, host=host, hosts=hosts, grace=grace)
    if as_json:
        print_json(env, stops_json(outcomes))
    else:
        emit(env, stop_blocks(outcomes, variant))
    failed: list[int] = [ExitCode.FAILED for o in outcomes if any(not s.ok for s in o.value or [])]
    emit(env, host_errors_blocks((o.host.name, o.error) for o in outcomes))
    return worst_exit_code([o.error.exit_code for o in outcomes if o.error] + failed)
