"""``variantctl compare RUN_A RUN_B [--json]``."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import run_ids
from variantctl.env import Environment


@click.command("compare")
@click.argument("run_a", shell_complete=run_ids)
@click.argument("run_b", shell_complete=run_ids)
@json_option
@pass_env
def compare(env: Environment, run_a: str, run_b: str, as_json: bool) -> None:
    """Whether B differs from A beyond the noise, per level and figure (Δ %, its 95 % CI,
    n; Welch over repeats or a bootstrap over requests) with a verdict per level on
    output throughput, beside what differs between them: configuration, patches, host
    and environment, engine facts and benchmark parameters (ports and addresses apart).
    RUN_A and RUN_B are run ids or unique prefixes."""
    from variantctl.project.loaded import Project
    from variantctl.render.compare import comparison_blocks, comparison_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.runs import compare_runs

    result = compare_runs(Project(env), run_a, run_b)
    if as_json:
        print_json(env, comparison_json(result))
        return
    emit(env, comparison_blocks(result))
