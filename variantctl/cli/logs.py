"""``variantctl logs``: print (or follow) a variant's server log on its host."""

from __future__ import annotations

import click

from variantctl.cli.common import pass_env
from variantctl.cli.completion import variant_names
from variantctl.env import Environment


@click.command("logs")
@click.argument("variant", shell_complete=variant_names)
@click.option("--host", "host", help="Host the server runs on (default: the variant's host).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines until it exits.")
@click.option("--lines", "-n", type=click.IntRange(min=0), default=None,
              help="Only the last N lines.")
@pass_env
def logs(env: Environment, variant: str, host: str | None, follow: bool,
         lines: int | None) -> None:
    """Print VARIANT's latest server log (from the running server or the last launch)."""
    from variantctl.launch.logs import LogText
    from variantctl.usecases.servers import server_log

    out = env.stdout.file
    for item in server_log(env, variant, host, follow=follow, lines=lines):
        if isinstance(item, LogText):
            out.write(item.text)
            out.flush()
        else:
            env.stderr.print(item.message, markup=False, highlight=False, soft_wrap=True)
