"""``variantctl show NAME [--origin]``: the resolved variant, optionally with origins."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import variant_names
from variantctl.env import Environment


@click.command("show")
@click.argument("name", shell_complete=variant_names)
@click.option("--origin", is_flag=True, help="Show which file (file:line) set each value.")
@json_option
@pass_env
def show(env: Environment, name: str, origin: bool, as_json: bool) -> None:
    """Show the resolved variant NAME (after inheritance)."""
    from variantctl.usecases.variants import show_variant

    v, host = show_variant(env, name)
    from variantctl.cli.render import say_secrets

    say_secrets(env, v)
    if as_json:
        from variantctl.terminal.output import print_json

        data = v.to_dict()
        if origin:
            data["origins"] = dict(v.origins)
        print_json(env, data)
        return
    from variantctl.render.variant import variant_table

    env.stdout.print(variant_table(v, host, origin=origin))
