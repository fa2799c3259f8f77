"""``variantctl launch``: start a variant on its host and diagnose its startup."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env, watch_options
from variantctl.cli.completion import variant_names
from variantctl.env import Environment


@click.command("launch")
@click.argument("variant", shell_complete=variant_names)
@click.option("--host", "host", help="Run on this host instead of the variant's.")
@click.option("--port", type=click.IntRange(1, 65535), help="Override the variant's port.")
@click.option("--apply-patches", is_flag=True, help="Apply the variant's required patchsets.")
@click.option("--force", is_flag=True, help="Launch even if the pre-flight check finds errors.")
@click.option("--replace", is_flag=True, help="Stop a running copy (or the server on the port).")
@click.option("--no-wait", is_flag=True, help="Return once started; `variantctl watch` attaches.")
@watch_options
@json_option
@pass_env
def launch(env: Environment, variant: str, host: str | None, port: int | None,
           apply_patches: bool, force: bool, replace: bool, no_wait: bool,
           timeout: float | None, stall: float | None, keep: bool, grace: float,
           as_json: bool) -> int:
    """Start VARIANT, watch its log and /health, and report ready/failed/hang/exited/timeout."""
    from variantctl.launch.core import LaunchOptions
    from variantctl.project.loaded import Project
    from variantctl.terminal.launchview import ConsoleUI
    from variantctl.usecases.servers import LaunchRequest, launch

    opts = LaunchOptions(apply_patches=apply_patches, force=force, replace=replace,
                         wait=not no_wait, timeout=timeout, stall=stall, keep=keep, grace=grace)
    with ConsoleUI(env, as_json=as_json) as ui:
        result = launch(Project(env), LaunchRequest(variant, opts, host=host, port=port), ui)
    ui.finished(result)
    return result.exit_code

