"""Everything a launch needs from the project, loaded up front (the YAML side).

:func:`~variantctl.launch.core.launch_variant` reads no YAML and resolves no names;
the CLI (and a sweep) call :func:`prepare` (or :meth:`Project.launch_context
<variantctl.project.loaded.Project.launch_context>`) first, on the command's one
:class:`~variantctl.project.loaded.Project`.
"""

from __future__ import annotations

from variantctl.config.hosts import get_host
from variantctl.errors import NotFoundError
from variantctl.hostmodel import Host
from variantctl.launch.core import LaunchContext
from variantctl.project.loaded import Project
from variantctl.variants.model import ResolvedVariant


def prepare(project: Project, name: str, *, host: str | None = None, port: int | None = None
            ) -> tuple[ResolvedVariant, Host, LaunchContext]:
    """Resolve variant ``name`` (on ``host`` / ``port`` if given), its host and context."""
    variant = project.resolve(name, host=host, port=port)
    target_host = get_host(project.hosts, variant.host)
    return variant, target_host, project.launch_context(variant.requires)


def prepare_watch(project: Project, name: str, host_name: str | None
                  ) -> tuple[ResolvedVariant | None, Host, LaunchContext]:
    """For ``watch``: the variant if the catalog still has it (a broken catalog is an
    error, never silently the default timeouts), and the host it runs on."""
    variant: ResolvedVariant | None = None
    if project.env.variants_dir.is_dir():
        try:
            variant = project.resolve(name, host=host_name)
        except NotFoundError:
            variant = None  # removed from the catalog since the launch: its record still runs
    hosts = project.hosts
    host = get_host(hosts, host_name or (variant.host if variant else None) or "local")
    return variant, host, project.launch_context(variant.requires if variant else ())
