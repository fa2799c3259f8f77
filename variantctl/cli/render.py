"""``variantctl render NAME``: exactly what launch will run on the variant's host."""

from __future__ import annotations

import click

from variantctl.cli.common import format_option, pass_env
from variantctl.cli.completion import variant_names
from variantctl.env import Environment


@click.command("render")
@click.argument("name", shell_complete=variant_names)
@format_option(["sh", "argv", "json"], "sh",
               "sh: the launch script; argv: one word per line; json.")
@click.option("--host", "host_name", help="Render for another host than the variant's.")
@click.option("--port", type=click.IntRange(1, 65535), help="Override the port.")
@pass_env
def render(env: Environment, name: str, fmt: str, host_name: str | None,
           port: int | None) -> None:
    """Render variant NAME as a POSIX shell script (every value quoted), argv or JSON."""
    from variantctl.render.variant import launch_json, unmasked_blocks
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.variants import placed_variant, secrets_in
    from variantctl.variants.render import render_argv, render_script

    v, host = placed_variant(env, name, host_name, port)
    emit(env, unmasked_blocks(secrets_in(env, v)))
    out = env.stdout.file
    if fmt == "sh":
        out.write(render_script(v, host))
    elif fmt == "argv":
        out.write("".join(word + "\n" for word in render_argv(v, host)))
    else:
        print_json(env, launch_json(v, host))
        return
    out.flush()
