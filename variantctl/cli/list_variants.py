"""``variantctl list``: every variant, its parent, what it changes, requires and tags."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.command("list")
@click.option("--tag", "tags", multiple=True, help="Only variants carrying this tag (repeatable).")
@json_option
@pass_env
def list_variants(env: Environment, tags: tuple[str, ...], as_json: bool) -> None:
    """List launch variants: parent, changes relative to it, requires, tags."""
    from variantctl.usecases.variants import list_variants as catalog_rows

    rows = catalog_rows(env, tags)
    if as_json:
        from variantctl.render.variant import list_json
        from variantctl.terminal.output import print_json

        print_json(env, list_json(rows))
        return
    if not rows:
        env.stderr.print("no variants" + (f" tagged {', '.join(tags)}" if tags else "")
                         + f" in {env.variants_dir}", markup=False, highlight=False)
        return
    from variantctl.render.variant import list_table

    env.stdout.print(list_table(rows))
