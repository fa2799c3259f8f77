"""``list``: every variant of the catalog with what it changes from its parent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.variants.model import ResolvedVariant


@dataclass(frozen=True)
class VariantRow:
    """One variant of the catalog and its changes relative to its parent."""

    name: str
    variant: ResolvedVariant
    changes: tuple[str, ...]


def list_variants(env: Environment, tags: tuple[str, ...]) -> list[VariantRow]:
    """The catalog's variants (those with one of ``tags`` when given), in order."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.diff import diff_variants, summarise
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    rows = []
    for name in catalog.names():
        v = resolve(catalog, name)
        if tags and not set(tags) & set(v.tags):
            continue
        if v.parents:
            changes = summarise(diff_variants(resolve(catalog, v.parents[0]), v))
        else:
            n = len(v.args)
            changes = [f"(base) {n} flag{'' if n == 1 else 's'} on {v.host}"]
        rows.append(VariantRow(name, v, tuple(changes)))
    return rows
