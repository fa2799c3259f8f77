"""``variantctl runs trend VARIANT|CONFIG_KEY [--metric M] [--json]``."""

from __future__ import annotations

import click

from variantctl.bench.uncertainty import HEADLINES
from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.command("trend")
@click.argument("target", metavar="VARIANT|CONFIG_KEY")
@click.option("--metric", type=click.Choice(list(HEADLINES)), default="output_throughput",
              show_default=True, help="The figure to follow.")
@json_option
@pass_env
def trend(env: Environment, target: str, metric: str, as_json: bool) -> None:
    """A configuration's figure across its stored runs, in time order, with 95 % CIs; a
    change beyond the noise between consecutive runs is flagged with what changed
    (patches, vLLM version, host facts, configuration)."""
    from variantctl.render.trend import trend_blocks
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.runs import trend_of

    result = trend_of(env, target, metric)
    if as_json:
        print_json(env, {"trend": {"target": target, **result.to_json()}})
        return
    emit(env, trend_blocks(target, result))
