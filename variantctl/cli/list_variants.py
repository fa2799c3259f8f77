"""``variantctl list``: every variant, its parent, what it changes, requires and tags."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.variants.model import ResolvedVariant


@click.command("list")
@click.option("--tag", "tags", multiple=True, help="Only variants carrying this tag (repeatable).")
@json_option
@pass_env
def list_variants(env: Environment, tags: tuple[str, ...], as_json: bool) -> None:
    """List launch variants: parent, changes relative to it, requires, tags."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.diff import diff_variants, summarise
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    rows: list[tuple[str, ResolvedVariant, list[str]]] = []
    for name in catalog.names():
        v = resolve(catalog, name)
        if tags and not set(tags) & set(v.tags):
            continue
        if v.parents:
            changes = summarise(diff_variants(resolve(catalog, v.parents[0]), v))
        else:
            n = len(v.args)
            changes = [f"(base) {n} flag{'' if n == 1 else 's'} on {v.host}"]
        rows.append((name, v, changes))
    if as_json:
        from variantctl.cli.output import print_json

        print_json(env, {"variants": [
            {"name": name, "extends": list(v.parents), "changes": changes,
             "requires": list(v.requires), "tags": list(v.tags),
             "host": v.host, "port": v.port, "description": v.description}
            for name, v, changes in rows]})
        return
    if not rows:
        env.stderr.print("no variants" + (f" tagged {', '.join(tags)}" if tags else "")
                         + f" in {env.variants_dir}", markup=False, highlight=False)
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("NAME", "EXTENDS", "CHANGES", "REQUIRES", "TAGS"):
        table.add_column(col, overflow="fold", no_wrap=col == "NAME")
    for name, v, changes in rows:
        table.add_row(Text(name), Text(", ".join(v.parents) or "-"),
                      Text("\n".join(changes) or "(same)"),
                      Text(", ".join(v.requires) or "-"), Text(", ".join(v.tags) or "-"))
    env.stdout.print(table)
