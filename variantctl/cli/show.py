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
    from variantctl.render.variant import unmasked_blocks, variant_json, variant_table
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.variants import secrets_in, show_variant

    v, host = show_variant(env, name)
    emit(env, unmasked_blocks(secrets_in(env, v)))
    if as_json:
        print_json(env, variant_json(v, origin=origin))
        return
    env.stdout.print(variant_table(v, host, origin=origin))
