"""``variantctl watch``: attach to a started variant and wait for its verdict."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env, watch_options
from variantctl.cli.completion import variant_names
from variantctl.env import Environment


@click.command("watch")
@click.argument("variant", shell_complete=variant_names)
@click.option("--host", "host", help="Host it runs on (default: the variant's host).")
@watch_options
@json_option
@pass_env
def watch(env: Environment, variant: str, host: str | None, timeout: float | None,
          stall: float | None, keep: bool, grace: float, as_json: bool) -> int:
    """Follow VARIANT's log from the start and report its verdict (like launch)."""
    from variantctl.launch.core import LaunchOptions
    from variantctl.project.loaded import Project
    from variantctl.terminal.launchview import ConsoleUI
    from variantctl.usecases.servers import LaunchRequest, launch

    opts = LaunchOptions(timeout=timeout, stall=stall, keep=keep, grace=grace)
    with ConsoleUI(env, as_json=as_json) as ui:
        result = launch(Project(env), LaunchRequest(variant, opts, host=host, attach=True), ui)
    ui.finished(result)
    return result.exit_code
