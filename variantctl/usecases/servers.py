"""``launch``, ``watch``, ``stop``, ``ps`` and ``logs``: a variant's server started (or
attached to) and watched to a verdict, stopped, listed, or its log read, on its hosts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.env import Environment
from variantctl.project.loaded import Project

if TYPE_CHECKING:
    from variantctl.launch.core import LaunchOptions, LaunchResult, LaunchUI
    from variantctl.launch.logs import LogText, Reconnecting, Truncated
    from variantctl.launch.servers import ServerStatus, StopOutcome
    from variantctl.targets.connect import HostOutcome


@dataclass(frozen=True)
class LaunchRequest:
    """``launch VARIANT`` (``watch VARIANT``: ``attach``) with its options."""

    variant: str
    options: LaunchOptions
    host: str | None = None
    port: int | None = None
    #: watch the server already started instead of starting one
    attach: bool = False


def launch(project: Project, req: LaunchRequest, ui: LaunchUI) -> LaunchResult:
    """Start ``req.variant`` (or attach to it) on its host and watch it to a verdict."""
    from variantctl.launch.core import launch_variant, watch_variant
    from variantctl.project.context import prepare, prepare_watch
    from variantctl.targets.connect import open_target

    if req.attach:
        resolved, host, ctx = prepare_watch(project, req.variant, req.host)
        with open_target(host) as target:
            return watch_variant(target, host, req.variant, resolved, req.options, ctx, ui)
    resolved, host, ctx = prepare(project, req.variant, host=req.host, port=req.port)
    with open_target(host) as target:
        return launch_variant(target, host, resolved, req.options, ctx, ui)


def stop(env: Environment, variant: str | None, *, host: str | None, hosts: str | None,
         grace: float) -> list[HostOutcome[list[StopOutcome]]]:
    """Stop ``variant`` (None: every server variantctl started) on its hosts, in
    parallel; one outcome (or error) per host."""
    from variantctl.launch.launcher import stop_servers
    from variantctl.project.selection import select_hosts, variant_host
    from variantctl.targets.connect import on_hosts

    default = (variant_host(Project(env), variant) if variant else None) or "local"
    chosen = select_hosts(env, host, hosts, default=default)
    outcomes = on_hosts(chosen, lambda h, t: stop_servers(t, h, variant, grace=grace))
    if variant and not any(o.value or o.error for o in outcomes):
        # nothing recorded under that name: fine for a known variant (already
        # stopped), bad input for a name that is no variant at all (a typo)
        refuse_unknown_variant(env, variant, [h.name for h in chosen])
    return outcomes


def refuse_unknown_variant(env: Environment, variant: str, hosts: list[str]) -> None:
    """NotFoundError (exit 2) unless ``variant`` is in the catalog.

    A catalog that cannot be read proves nothing either way, so it refuses nothing:
    stopping must keep working while a variant file is being edited.
    """
    from variantctl.config.schema import did_you_mean
    from variantctl.config.variants import load_catalog
    from variantctl.errors import NotFoundError, VariantctlError

    try:
        names = load_catalog(env.variants_dir).names()
    except VariantctlError:
        return
    if variant in names:
        return
    raise NotFoundError(
        f"unknown variant {variant!r}: not in {env.variants_dir} and no server of that name "
        f"is recorded on {', '.join(hosts)}",
        hint=did_you_mean(variant, names) or "variantctl ps lists the running servers",
    )


def server_statuses(env: Environment, host: str | None, hosts: str | None
                    ) -> list[HostOutcome[list[ServerStatus]]]:
    """``ps``: every server recorded on the chosen hosts, with its status."""
    from variantctl.launch.launcher import launcher_for
    from variantctl.launch.servers import layout_for, list_records
    from variantctl.project.selection import select_hosts
    from variantctl.targets.connect import on_hosts

    return on_hosts(select_hosts(env, host, hosts), lambda h, t: launcher_for(h).statuses(
        t, list_records(t, layout_for(t, h))))


def server_log(env: Environment, variant: str, host: str | None, *, follow: bool,
               lines: int | None) -> Iterator[LogText | Reconnecting | Truncated]:
    """``logs``: ``variant``'s latest server log on its host, as it is read (followed)."""
    from variantctl.launch.logs import log_stream
    from variantctl.project.selection import select_hosts, variant_host
    from variantctl.targets.connect import open_target

    default = variant_host(Project(env), variant) or "local"
    (chosen,) = select_hosts(env, host, None, default=default)
    with open_target(chosen) as target:
        yield from log_stream(target, chosen, variant, follow=follow, lines=lines)
