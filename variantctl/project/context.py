"""Everything a launch needs from the project, loaded up front (the YAML side).

:func:`~variantctl.launch.core.launch_variant` reads no YAML and resolves no names;
the CLI (and a sweep) call :func:`prepare` or :func:`context_for` first.
"""

from __future__ import annotations

from variantctl.config.hosts import get_host
from variantctl.env import Environment
from variantctl.errors import NotFoundError
from variantctl.hostmodel import Host
from variantctl.launch.core import LaunchContext
from variantctl.runs.store import RunStore
from variantctl.variants.model import ResolvedVariant


def context_for(env: Environment, variant: ResolvedVariant, hosts: dict[str, Host] | None = None
                ) -> LaunchContext:
    """The launch context of ``variant`` in ``env``'s project."""
    from variantctl.config.catalog import default_catalog
    from variantctl.config.patchsets import load_patchset, patchset_names

    if hosts is None:
        from variantctl.project.selection import all_hosts

        hosts = dict(all_hosts(env))
    has_patchsets = env.patchsets_dir.is_dir()
    names = patchset_names(env.patchsets_dir) if has_patchsets else []
    # every patchset: a required one must load; the state of the others is recorded with
    # the run (a broken file among them is an error too: it is the project's patch state)
    patchsets = {n: load_patchset(env.patchsets_dir, n) for n in names}
    for n in variant.requires:
        patchsets.setdefault(n, load_patchset(env.patchsets_dir, n))
    return LaunchContext(
        runs=RunStore(env.runs_dir),
        clock=env.clock,
        now=env.now,
        hosts=hosts,
        patchsets=patchsets,
        known_patchsets=tuple(names),
        signatures=default_catalog(),
    )


def prepare(env: Environment, name: str, *, host: str | None = None, port: int | None = None
            ) -> tuple[ResolvedVariant, Host, LaunchContext]:
    """Resolve variant ``name`` (on ``host`` / ``port`` if given), its host and context."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    variant = resolve(catalog, name, host=host, port=port)
    target_host = get_host(catalog.hosts, variant.host)
    return variant, target_host, context_for(env, variant, dict(catalog.hosts))


def prepare_watch(env: Environment, name: str, host_name: str | None
                  ) -> tuple[ResolvedVariant | None, Host, LaunchContext]:
    """For ``watch``: the variant if the catalog still has it (a broken catalog is an
    error, never silently the default timeouts), and the host it runs on."""
    from variantctl.config.variants import load_catalog
    from variantctl.project.selection import all_hosts, variant_host
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir) if env.variants_dir.is_dir() else None
    variant: ResolvedVariant | None = None
    if catalog is not None:
        try:
            variant = resolve(catalog, name, host=host_name)
        except NotFoundError:
            variant = None  # removed from the catalog since the launch: its record still runs
    hosts = dict(all_hosts(env))
    host = get_host(hosts, host_name or (variant.host if variant else None)
                    or variant_host(env, name) or "local")
    if variant is None:
        ctx = context_for(env, ResolvedVariant(name=name), hosts)
    else:
        ctx = context_for(env, variant, hosts)
    return variant, host, ctx
