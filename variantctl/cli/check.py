"""``variantctl check NAME… | --all``: pre-flight rules, each naming the failure it predicts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment
from variantctl.exitcodes import ExitCode

if TYPE_CHECKING:
    from variantctl.variants.rules import Finding


@click.command("check")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Check every variant of the catalog.")
@click.option("--connect", is_flag=True,
              help="Also read the SSH hosts (the model's config.json, the profile points "
                   "of their vLLM); without it only this machine's hosts are read.")
@json_option
@pass_env
def check(env: Environment, names: tuple[str, ...], all_: bool, connect: bool,
          as_json: bool) -> None:
    """Predict startup failures of variants before launching them (non-zero on errors)."""
    from variantctl.cli import finish
    from variantctl.usecases.check import check_variants
    from variantctl.variants.check import has_errors

    report = check_variants(env, names, all_=all_, connect=connect)
    findings, selected = list(report.findings), report.selected
    if as_json:
        from variantctl.cli.output import print_json

        print_json(env, {"variants": list(selected), "predicted": report.predicted,
                         "findings": [f.to_dict() for f in findings]})
    else:
        _print(env, findings, len(selected))
    if has_errors(findings):
        finish(ExitCode.FAILED)


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _print(env: Environment, findings: list[Finding], count: int) -> None:
    # one finding per block, compiler style: easy to read at any width and to grep
    out = env.stdout
    for f in findings:
        style = "red" if f.severity == "error" else "yellow"
        predicts = f"predicts {f.signature}" if f.signature else "no log signature"
        rule = escape(f"[{f.rule}]")
        out.print(f"[bold]{escape(f.variant)}[/]: [{style}]{f.severity}[/] {rule} "
                  f"{escape(predicts)}", highlight=False)
        out.print("  " + f.message, markup=False, highlight=False)
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    out.print(f"{count} variant(s) checked: {errors} error(s), {warnings} warning(s)",
              markup=False, highlight=False)
