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
          stall: float | None, keep: bool, grace: float, as_json: bool) -> None:
    """Follow VARIANT's log from the start and report its verdict (like launch)."""
    from variantctl.cli import finish
    from variantctl.cli.launchresult import launch_exit_code, print_result
    from variantctl.launch.core import LaunchOptions, watch_variant
    from variantctl.launch.ui import ConsoleUI
    from variantctl.project.context import prepare_watch
    from variantctl.project.loaded import Project
    from variantctl.targets.connect import open_target

    resolved, target_host, ctx = prepare_watch(Project(env), variant, host)
    opts = LaunchOptions(timeout=timeout, stall=stall, keep=keep, grace=grace)
    ui = ConsoleUI(env, as_json=as_json)
    try:
        with open_target(target_host) as target:
            result = watch_variant(target, target_host, variant, resolved, opts, ctx, ui)
    finally:
        ui.close()
    code = launch_exit_code(result)
    print_result(env, result, code, as_json=as_json, verdict_shown=ui.shown_verdict)
    if code:
        finish(code)
