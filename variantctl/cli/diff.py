"""``variantctl diff A B``: how two variants differ, grouped (flags, env, requires, …)."""

from __future__ import annotations

import click

from variantctl.cli.common import format_option, pass_env
from variantctl.env import Environment


@click.command("diff")
@click.argument("a")
@click.argument("b")
@format_option(["table", "json"], "table", "table: grouped changes; json.")
@pass_env
def diff(env: Environment, a: str, b: str, fmt: str) -> None:
    """Show what changes from variant A to variant B."""
    from variantctl.usecases.variants import variant_changes

    changes = variant_changes(env, a, b)
    if fmt == "json":
        from variantctl.terminal.output import print_json

        print_json(env, {"a": a, "b": b, "changes": [c.to_dict() for c in changes]})
        return
    if not changes:
        env.stdout.print(f"{a} and {b} run the same server (no differences)",
                         markup=False, highlight=False)
        return
    from variantctl.render.variant import diff_table

    env.stdout.print(diff_table(a, b, changes))
