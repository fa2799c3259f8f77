"""Which hosts a command acts on (``--host H``, ``--hosts a,b``, a variant's host)."""

from __future__ import annotations

from variantctl.config.hosts import get_host, load_hosts
from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.hostmodel import Host
from variantctl.project.loaded import Project


def all_hosts(env: Environment) -> dict[str, Host]:
    """The built-in ``local`` plus the project's ``variants/hosts.yaml``."""
    return load_hosts(env.project_dir)


def select_hosts(
    env: Environment,
    host: str | None,
    hosts: str | None,
    *,
    default: str | None = "local",
) -> list[Host]:
    """Hosts named by ``--host``/``--hosts`` (not both), else ``default``."""
    if host and hosts:
        raise VariantctlError("give --host or --hosts, not both")
    known = all_hosts(env)
    if hosts:
        names = [n.strip() for n in hosts.split(",") if n.strip()]
        if not names:
            raise VariantctlError("--hosts needs a comma-separated list of host names")
        return [get_host(known, n) for n in dict.fromkeys(names)]
    name = host or default
    if name is None:
        raise VariantctlError("no host given", hint="pass --host H")
    return [get_host(known, name)]


def variant_host(project: Project, variant: str) -> str | None:
    """The host a variant declares, when the variant catalog can tell (else None)."""
    try:
        return project.resolve(variant).host
    except (VariantctlError, ImportError):
        return None
