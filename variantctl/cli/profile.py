"""``variantctl profile RUN [--trace FILE] [--json]``: the profile breakdown a
``bench --profile`` stored in a run, and its raw events as a Chrome trace.

Exit codes: 0 shown; 1 the trace file cannot be written; 2 no such run, a run
without profile files, or a stored profile file that cannot be read (missing,
not a regular file, too large, or damaged: the file and the field named).
"""

from __future__ import annotations

from pathlib import Path

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import run_ids
from variantctl.env import Environment


@click.command("profile")
@click.argument("run_id", metavar="RUN", shell_complete=run_ids)
@click.option("--trace", "trace", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the run's events as a Chrome trace (chrome://tracing, Perfetto).")
@json_option
@pass_env
def profile(env: Environment, run_id: str, trace: Path | None, as_json: bool) -> None:
    """Show the profile breakdown stored in RUN (an id or unique prefix)."""
    from variantctl.render.profile import breakdown_tables
    from variantctl.terminal.output import print_json
    from variantctl.usecases.runs import run_profile

    got = run_profile(env, run_id, trace)
    if trace is not None:
        env.stderr.print(f"Chrome trace written {trace}", markup=False, highlight=False,
                         soft_wrap=True)
    if as_json:
        print_json(env, {"run_id": got.run_id, "levels": got.levels})
        return
    for table in breakdown_tables(got.variant, got.levels):
        env.stdout.print(table)
