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
    import re

    from variantctl.cli import finish
    from variantctl.errors import VariantctlError
    from variantctl.exitcodes import ExitCode
    from variantctl.launch.selection import select_hosts
    from variantctl.render.output import print_json
    from variantctl.targets.connect import on_hosts
    from variantctl.targets.locate import locate as do_locate

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", module):
        raise VariantctlError(f"{module!r} is not a dotted module name",
                              hint="e.g. vllm.engine.arg_utils")
    chosen = select_hosts(env, host, hosts_csv)
    outcomes = on_hosts(chosen, lambda h, t: do_locate(t, h, module))
    code = 0
    if as_json:
        print_json(env, {"results": [o.value.to_json() for o in outcomes if o.value],
                         "errors": [{"host": o.host.name, "error": str(o.error)}
                                    for o in outcomes if o.error]})
    for o in outcomes:
        if o.error is not None:
            env.stderr.print(f"error: {o.error.message}", markup=False, highlight=False,
                             soft_wrap=True)
            code = code or o.error.exit_code
            continue
        found = o.value
        assert found is not None
        if not found.copies:
            code = code or ExitCode.FAILED
            if not as_json:
                env.stderr.print(f"{module} is not on the path of {found.python} on "
                                 f"{found.host}", markup=False, highlight=False, soft_wrap=True)
            continue
        if as_json:
            continue
        env.stdout.print(f"{found.host}: {found.python} (Python {found.version})",
                         markup=False, highlight=False, soft_wrap=True)
        for c in found.copies:
            mark = "*" if c.imported else " "
            env.stdout.print(f" {mark} {c.path}  sha256:{c.sha256[:16]}  {c.size} bytes",
                             markup=False, highlight=False, soft_wrap=True)
        if found.imported:
            env.stdout.print(f"   (* = imported; {len(found.copies)} cop"
                             f"{'y' if len(found.copies) == 1 else 'ies'} on the path)",
                             markup=False, highlight=False, soft_wrap=True)
    if code:
        finish(code)
