"""Variant tables: ``show`` (a resolved variant's settings, optionally with where each
was set), ``list`` and ``diff`` (returns, never prints)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.logs.bounded import clipped
from variantctl.render.output import Block, cell

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from rich.table import Table

    from variantctl.hostmodel import Host
    from variantctl.usecases.variants import VariantRow
    from variantctl.variants.diff import Change
    from variantctl.variants.model import ResolvedVariant


def variant_table(v: ResolvedVariant, host: Host | None, *, origin: bool) -> Table:
    """One row per setting (the host's vLLM version and vendor where the variant has
    none: the rules use them); with ``origin``, the file:line that set it."""
    from rich.table import Table

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
        # from variant files (a description, a value): escaped, bounded
        cells = [cell(key), cell(value, 1000)]
        if origin:
            cells.append(cell(origins.get(where, "") if where else ""))
        table.add_row(*cells)
    return table




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


def list_table(rows: Sequence[VariantRow]) -> Table:
    """``list``: name, parent, changes, requires, tags."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("NAME", "EXTENDS", "CHANGES", "REQUIRES", "TAGS"):
        table.add_column(col, overflow="fold", no_wrap=col == "NAME")
    for r in rows:
        v = r.variant
        table.add_row(cell(r.name), cell(", ".join(v.parents) or "-", 400),
                      Text("\n".join(clipped(c, 400) for c in r.changes) or "(same)"),
                      cell(", ".join(v.requires) or "-", 400),
                      cell(", ".join(v.tags) or "-", 400))
    return table


def diff_table(a: str, b: str, changes: Sequence[Change]) -> Table:
    """``diff A B``: the changes grouped, old → new."""
    from rich.table import Table
    from rich.text import Text

    from variantctl.variants.diff import format_value

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("", "SETTING", a, "", b):
        table.add_column(col, overflow="fold")
    last = None
    for c in changes:
        group = c.group if c.group != last else ""
        last = c.group
        table.add_row(cell(group), cell(c.label), cell(format_value(c.old), 1000), Text("→"),
                      cell(format_value(c.new), 1000))
    return table


def variant_json(v: ResolvedVariant, *, origin: bool) -> JsonObject:
    """``show --json``: every field, with ``--origin`` the file:line that set each."""
    data = v.to_dict()
    if origin:
        data["origins"] = dict(v.origins)
    return data


def launch_json(v: ResolvedVariant, host: Host) -> JsonObject:
    """``render --format json``: what launch runs on ``host``, argv, environment, log and
    script."""
    from variantctl.variants.render import (
        render_argv,
        render_env,
        render_log_path,
        render_script,
    )

    return {"name": v.name, "host": host.name, "port": v.port,
            "argv": render_argv(v, host), "env": render_env(v, host),
            "log": render_log_path(v, host), "script": render_script(v, host)}


def list_json(rows: Sequence[VariantRow]) -> JsonObject:
    """``list --json``: per variant its parents, changes, requires, tags, host and port."""
    return {"variants": [
        {"name": r.name, "extends": list(r.variant.parents), "changes": list(r.changes),
         "requires": list(r.variant.requires), "tags": list(r.variant.tags),
         "host": r.variant.host, "port": r.variant.port,
         "description": r.variant.description}
        for r in rows]}


def unmasked_blocks(secrets: Iterable[str]) -> list[Block]:
    """``render`` and ``show`` print secrets unmasked (what launch runs): a note on
    stderr naming them, when there are any."""
    from variantctl.secretmask import unmasked_note

    note = unmasked_note(secrets)
    return [Block(note, err=True, markup=False, highlight=False)] if note else []
