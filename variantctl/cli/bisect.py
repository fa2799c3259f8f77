"""``variantctl bisect RUN_A RUN_B [--dry-run] [--resume] [--include-predicted]``.

Thin: the options; the flow is :mod:`variantctl.cli.bisectflow`, the rounds and the
decision :mod:`variantctl.sweeps.bisect`.
"""

from __future__ import annotations

import click

from variantctl.cli.common import FiniteFloat, json_option, pass_env
from variantctl.env import Environment


@click.command("bisect")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--dry-run", is_flag=True,
              help="Print the settings, the strategy, what it will cost in launches and "
              "the first round's plan; launch nothing.")
@click.option("--resume", is_flag=True,
              help="Keep the configurations an earlier bisect of these runs measured.")
@click.option("--include-predicted", is_flag=True,
              help="Also run the configurations the pre-flight rules predict to fail.")
@click.option("--grace", type=FiniteFloat(min=0), default=10.0, show_default=True,
              help="Seconds a server gets to exit on SIGTERM when it is stopped.")
@json_option
@pass_env
def bisect(env: Environment, run_a: str, run_b: str, dry_run: bool, resume: bool,
           include_predicted: bool, grace: float, as_json: bool) -> None:
    """Find which of the settings RUN_A and RUN_B differ in (args, env, patchsets)
    accounts for their throughput difference, by measuring configurations between them
    on their host (a sweep under the hood). RUN_A and RUN_B are run ids or unique
    prefixes."""
    from variantctl.cli import finish
    from variantctl.cli.bisectflow import run_bisect

    code = run_bisect(env, run_a, run_b, dry_run=dry_run, resume=resume,
                      include_predicted=include_predicted, grace=grace, as_json=as_json)
    if code:
        finish(code)
