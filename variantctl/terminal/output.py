"""Where rendered output is printed: the CLI (its commands and this terminal package) is
the only place that prints."""

from __future__ import annotations

from collections.abc import Iterable

from variantctl.env import Environment
from variantctl.jsontypes import Json
from variantctl.render.output import Block, json_list_chunks, json_text


def emit(env: Environment, blocks: Iterable[Block]) -> None:
    """Print ``blocks`` in order, each on its stream with its own print options."""
    for b in blocks:
        console = env.stderr if b.err else env.stdout
        console.print(b.body, markup=b.markup, highlight=b.highlight, soft_wrap=b.soft_wrap)


def print_json_list(env: Environment, key: str, items: Iterable[Json]) -> None:
    """``print_json(env, {key: list(items)})``, written item by item."""
    for chunk in json_list_chunks(key, items):
        env.stdout.file.write(chunk)
    env.stdout.file.write("\n")
    env.stdout.file.flush()


def print_json(env: Environment, data: Json) -> None:
    """Write ``data`` as the one indented JSON document of ``--json`` on stdout."""
    env.stdout.file.write(json_text(data) + "\n")
    env.stdout.file.flush()
