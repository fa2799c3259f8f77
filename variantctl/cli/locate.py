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
           as_json: bool) -> None:
    """List every copy of MODULE on the host Python's path with its sha256, and the one
    `import MODULE` would load (the seed's "confirm which path really runs")."""
    from variantctl.cli import finish
    from variantctl.cli.hostresults import print_host_errors, worst_exit_code
    from variantctl.cli.output import emit, print_json
    from variantctl.exitcodes import ExitCode
    from variantctl.render.hosts import located_blocks
    from variantctl.render.output import text
    from variantctl.usecases.hosts import locate_module

    outcomes = locate_module(env, module, host, hosts_csv)
    if as_json:
        print_json(env, {"results": [o.value.to_json() for o in outcomes if o.value],
                         "errors": [{"host": o.host.name, "error": o.error.to_json()}
                                    for o in outcomes if o.error]})
    codes: list[int] = []
    for o in outcomes:
        found = o.value
        if found is None:
            continue
        if not found.copies:
            codes.append(ExitCode.FAILED)
            if not as_json:
                emit(env, [text(f"{module} is not on the path of {found.python} on "
                                f"{found.host}", err=True)])
        elif not as_json:
            emit(env, located_blocks(found))
    codes += print_host_errors(env, [(o.host.name, o.error) for o in outcomes])
    code = worst_exit_code(codes)
    if code:
        finish(code)
