"""``variantctl check NAME… | --all``: pre-flight rules, each naming the failure it predicts."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment
from variantctl.exitcodes import ExitCode


@click.command("check")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Check every variant of the catalog.")
@click.option("--connect", is_flag=True,
              help="Also read the SSH hosts (the model's config.json, the profile points "
                   "of their vLLM); without it only this machine's hosts are read.")
@json_option
@pass_env
def check(env: Environment, names: tuple[str, ...], all_: bool, connect: bool,
          as_json: bool) -> int:
    """Predict startup failures of variants before launching them (non-zero on errors)."""
    from variantctl.render.check import check_json, findings_blocks
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.check import check_variants
    from variantctl.variants.check import has_errors

    report = check_variants(env, names, all_=all_, connect=connect)
    if as_json:
        print_json(env, check_json(report))
    else:
        emit(env, findings_blocks(list(report.findings), len(report.selected)))
    return ExitCode.FAILED if has_errors(report.findings) else ExitCode.OK
