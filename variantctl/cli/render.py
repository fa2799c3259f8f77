"""``variantctl render NAME``: exactly what launch will run on the variant's host."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import format_option, pass_env
from variantctl.cli.completion import variant_names
from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.variants.model import ResolvedVariant


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
    from variantctl.usecases.variants import placed_variant
    from variantctl.variants.render import render_argv, render_env, render_log_path, render_script

    v, host = placed_variant(env, name, host_name, port)
    say_secrets(env, v)
    out = env.stdout.file
    if fmt == "sh":
        out.write(render_script(v, host))
    elif fmt == "argv":
        out.write("".join(word + "\n" for word in render_argv(v, host)))
    else:
        from variantctl.terminal.output import print_json

        print_json(env, {"name": v.name, "host": host.name, "port": v.port,
                         "argv": render_argv(v, host), "env": render_env(v, host),
                         "log": render_log_path(v, host), "script": render_script(v, host)})
        return
    out.flush()


def say_secrets(env: Environment, v: ResolvedVariant) -> None:
    """``render`` and ``show`` print secrets unmasked (what launch runs): say so."""
    from variantctl.project.loaded import Project
    from variantctl.secretmask import unmasked_note

    project = Project(env)
    host = project.hosts.get(v.host)
    names = [*v.env, *v.args, *(host.env if host is not None else ())]
    note = unmasked_note(project.secrets.names_in(names))
    if note:
        env.stderr.print(note, markup=False, highlight=False)
