"""``variantctl hosts [check]``: the configured hosts, and whether they are usable."""

from __future__ import annotations

import click

from variantctl.cli.common import FiniteFloat, current_env, json_option, pass_env
from variantctl.env import Environment


@click.group("hosts", invoke_without_command=True)
@json_option
@click.pass_context
def hosts(ctx: click.Context, as_json: bool) -> None:
    """List hosts (`variantctl hosts check` connects to them)."""
    if ctx.invoked_subcommand is not None:
        return
    from variantctl.project.selection import all_hosts
    from variantctl.render.hosts import host_rows, hosts_table
    from variantctl.terminal.output import print_json

    env = current_env(ctx)
    rows = host_rows(all_hosts(env))
    if as_json:
        print_json(env, {"hosts": rows})
        return
    env.stdout.print(hosts_table(rows))


@hosts.command("check")
@click.argument("names", nargs=-1)
@click.option("--host", "host", help="One host.")
@click.option("--hosts", "hosts_csv", help="Comma-separated hosts.")
@click.option("--timeout", type=FiniteFloat(min=0.5), default=10.0, show_default=True,
              help="Connect timeout in seconds.")
@json_option
@pass_env
def check(env: Environment, names: tuple[str, ...], host: str | None, hosts_csv: str | None,
          timeout: float, as_json: bool) -> int:
    """Reachability, Python version and GPU monitor of NAMES (default: every host), in parallel."""
    from variantctl.exitcodes import ExitCode
    from variantctl.render.hosts import check_table
    from variantctl.terminal.output import print_json
    from variantctl.usecases.hosts import check_hosts

    results = check_hosts(env, names, host, hosts_csv, timeout=timeout)
    if as_json:
        print_json(env, {"hosts": [r.to_json() for r in results]})
    else:
        env.stdout.print(check_table(results))
    if any(not r.reachable for r in results):
        return ExitCode.UNREACHABLE
    return ExitCode.FAILED if any(not r.ok for r in results) else ExitCode.OK
