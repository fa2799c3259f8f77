"""``variantctl locate MODULE``: every copy of a module on a host's path, and which one runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.render.output import Block
    from variantctl.targets.locate import Located


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
    from variantctl.cli.hostresults import print_host_errors, worst_exit_code
    from variantctl.cli.output import emit, print_json
    from variantctl.errors import VariantctlError
    from variantctl.exitcodes import ExitCode
    from variantctl.project.selection import select_hosts
    from variantctl.render.output import text
    from variantctl.targets.connect import on_hosts
    from variantctl.targets.locate import locate as do_locate

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", module):
        raise VariantctlError(f"{module!r} is not a dotted module name",
                              hint="e.g. vllm.engine.arg_utils")
    chosen = select_hosts(env, host, hosts_csv)
    outcomes = on_hosts(chosen, lambda h, t: do_locate(t, h, module))
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


def located_blocks(found: Located) -> list[Block]:
    """A host's Python, then each copy of the module (``*`` marks the imported one)."""
    from variantctl.render.output import text

    out = [text(f"{found.host}: {found.python} (Python {found.version})")]
    for c in found.copies:
        mark = "*" if c.imported else " "
        out.append(text(f" {mark} {c.path}  sha256:{c.sha256[:16]}  {c.size} bytes"))
    if found.imported:
        out.append(text(f"   (* = imported; {len(found.copies)} cop"
                        f"{'y' if len(found.copies) == 1 else 'ies'} on the path)"))
    return out
