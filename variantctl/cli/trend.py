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
    from variantctl.cli.output import emit, print_json
    from variantctl.errors import NotFoundError
    from variantctl.render.trend import trend_blocks
    from variantctl.report.load import load_runs
    from variantctl.report.trend import trend as make_trend
    from variantctl.runs.run import RunRecord
    from variantctl.runs.store import RunStore

    store = RunStore(env.runs_dir)
    ids = [d.run_id for d in store.of_key(target)]
    if not ids:
        # a damaged record has no variant name: its directory's says whose it was
        ids = [d.run_id for d, rec in store.records()
               if (rec.variant_name if isinstance(rec, RunRecord) else d.variant) == target]
    if not ids:
        raise NotFoundError(f"no run of variant or configuration key {target!r} in "
                            f"{store.root}",
                            hint="variantctl runs lists the runs: VARIANT column, or the "
                                 "10-hex key before the run id's '-N'")
    runs, damaged = load_runs(store, ids)
    result = make_trend(runs, metric, damaged)
    if as_json:
        print_json(env, {"trend": {"target": target, **result.to_json()}})
        return
    emit(env, trend_blocks(target, result))
