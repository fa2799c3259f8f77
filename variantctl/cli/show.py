"""``variantctl show NAME [--origin]``: the resolved variant, optionally with origins."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import variant_names
from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.variants.model import ResolvedVariant


@click.command("show")
@click.argument("name", shell_complete=variant_names)
@click.option("--origin", is_flag=True, help="Show which file (file:line) set each value.")
@json_option
@pass_env
def show(env: Environment, name: str, origin: bool, as_json: bool) -> None:
    """Show the resolved variant NAME (after inheritance)."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    v = resolve(catalog, name)
    host = catalog.hosts.get(v.host)
    if as_json:
        from variantctl.cli.output import print_json

        data = v.to_dict()
        if origin:
            data["origins"] = dict(v.origins)
        print_json(env, data)
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column("setting", style="bold")
    table.add_column("value", overflow="fold")
    if origin:
        table.add_column("origin", style="dim", overflow="fold")
    table.columns[0].no_wrap = True
    origins = dict(v.origins)
    rows = _rows(v)
    at = next(i for i, r in enumerate(rows) if r[0] == "startup.ready_timeout")
    platform: list[tuple[str, str, str | None]] = []
    if host is not None and host.vllm_version and not v.vllm_version:
        # the rules use the host's declaration; show it so `check` findings make sense
        platform.append(("vllm_version", host.vllm_version, "host.vllm_version"))
        origins["host.vllm_version"] = f"host {host.name} ({host.origin})"
    if host is not None and host.vendor and not v.vendor:
        platform += [(f"vendor.{k}", _fmt(val), f"host.vendor.{k}")
                     for k, val in host.vendor.to_dict().items() if val not in (None, [])]
        origins.update({f"host.vendor.{k}": f"host {host.name} ({host.origin})"
                        for k in host.vendor.to_dict()})
    rows[at:at] = platform
    for key, value, where in rows:
        cells = [Text(key), Text(value)]
        if origin:
            cells.append(Text(origins.get(where, "") if where else ""))
        table.add_row(*cells)
    env.stdout.print(table)


def _fmt(value: object) -> str:
    from variantctl.variants.diff import format_value

    return format_value(value)


def _rows(v: ResolvedVariant) -> list[tuple[str, str, str | None]]:
    from variantctl.variants.diff import format_value

    rows: list[tuple[str, str, str | None]] = [
        ("name", v.name, None),
        ("file", v.source, None),
    ]
    if v.description:
        rows.append(("description", v.description, "description"))
    if v.ancestors:
        rows.append(("extends", " <- ".join(v.ancestors), None))
    rows += [
        ("host", v.host, "host"),
        ("command", " ".join(v.command), "command"),
        ("model", format_value(v.model), "model"),
        ("port", str(v.port), "port"),
    ]
    rows += [(f"args.{k}", format_value(val), f"args.{k}") for k, val in v.args.items()]
    rows += [(f"env.{k}", val, f"env.{k}") for k, val in v.env.items()]
    rows += [("requires", r, f"requires.{r}") for r in v.requires]
    rows += [(f"expect.{k}", format_value(val), f"expect.{k}") for k, val in v.expect.items()]
    if v.vllm_version:
        rows.append(("vllm_version", v.vllm_version, "vllm_version"))
    if v.vendor:
        rows += [(f"vendor.{k}", format_value(val), f"vendor.{k}")
                 for k, val in v.vendor.to_dict().items() if val not in (None, [])]
    rows += [
        ("startup.ready_timeout", f"{v.startup.ready_timeout:g}s", "startup.ready_timeout"),
        ("startup.stall", f"{v.startup.stall:g}s", "startup.stall"),
        ("log", v.log, "log"),
    ]
    rows += [("tags", t, f"tags.{t}") for t in v.tags]
    return rows
