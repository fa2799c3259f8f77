"""``variantctl stop``: TERM the server's process group, KILL after a grace period, verify."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.command("stop")
@click.argument("variant", required=False)
@click.option("--all", "stop_all", is_flag=True, help="Stop every server variantctl started.")
@click.option("--host", "host", help="Host the server runs on (default: the variant's host).")
@click.option("--hosts", "hosts", help="Comma-separated hosts, in parallel.")
@click.option("--grace", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Seconds between TERM and KILL.")
@json_option
@pass_env
def stop(env: Environment, variant: str | None, stop_all: bool, host: str | None,
         hosts: str | None, grace: float, as_json: bool) -> None:
    """Stop VARIANT (or --all) and check no process remains and the port is free."""
    from variantctl.cli import finish
    from variantctl.errors import VariantctlError
    from variantctl.launch.report import print_stops
    from variantctl.launch.selection import select_hosts, variant_host
    from variantctl.launch.servers import stop_servers
    from variantctl.targets.connect import on_hosts

    if bool(variant) == stop_all:
        raise VariantctlError("give a VARIANT or --all", hint="variantctl ps lists them")
    default = (variant_host(env, variant) if variant else None) or "local"
    chosen = select_hosts(env, host, hosts, default=default)
    outcomes = on_hosts(chosen, lambda h, t: stop_servers(t, h, variant, grace=grace))
    code = print_stops(env, outcomes, variant, as_json=as_json)
    if code:
        finish(code)
