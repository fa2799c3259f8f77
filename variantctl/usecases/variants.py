"""``list``, ``show``, ``diff`` and ``render``: the variant catalog read and resolved
(every variant with what it changes from its parent, one variant and its host, the
changes between two)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.hostmodel import Host
    from variantctl.variants.diff import Change
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


def show_variant(env: Environment, name: str) -> tuple[ResolvedVariant, Host | None]:
    """Variant ``name`` resolved, and its host (None when the catalog has none of that
    name: the pre-flight reports it)."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    v = resolve(catalog, name)
    return v, catalog.hosts.get(v.host)


def placed_variant(env: Environment, name: str, host: str | None, port: int | None
                   ) -> tuple[ResolvedVariant, Host]:
    """Variant ``name`` resolved on ``host``/``port`` (default: its own), and that host
    (an error naming it when the catalog has none)."""
    from variantctl.config.hosts import get_host
    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    v = resolve(catalog, name, host=host, port=port)
    return v, get_host(catalog.hosts, v.host)


def secrets_in(env: Environment, v: ResolvedVariant) -> list[str]:
    """The secrets (by the project's rule) among ``v``'s environment, arguments and its
    host's environment: ``render`` and ``show`` print them as launch passes them."""
    from variantctl.project.loaded import Project

    project = Project(env)
    host = project.hosts.get(v.host)
    names = [*v.env, *v.args, *(host.env if host is not None else ())]
    return project.secrets.names_in(names)


def variant_changes(env: Environment, a: str, b: str) -> list[Change]:
    """What changes from variant ``a`` to variant ``b``, grouped."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.diff import diff_variants
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    return diff_variants(resolve(catalog, a), resolve(catalog, b))
