"""Options and steps shared by ``patch diff``, ``apply``, ``status`` and ``rollback``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import click

from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.render.output import Block

if TYPE_CHECKING:
    from variantctl.hostmodel import Host
    from variantctl.jsontypes import Json
    from variantctl.patching.model import Patchset
    from variantctl.targets.base import Target

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


def root_options(func: F) -> F:
    """``--root DIR`` (repeatable), ``--host NAME`` and ``--hosts A,B``."""
    func = click.option(
        "--hosts", "hosts_csv", metavar="A,B",
        help="Several hosts, in parallel, one result each (a failing host does not stop the "
        "others).",
    )(func)
    func = click.option(
        "--root", "roots", multiple=True, metavar="DIR",
        help="A directory holding the module (repeatable). Default: the host's site_roots, "
        "else every sys.path entry of the host's Python that holds it.",
    )(func)
    return click.option(
        "--host", "host_name", default="local", show_default=True, metavar="NAME",
        help="Host from variants/hosts.yaml whose copies to patch.",
    )(func)


def load(env: Environment, name: str) -> Patchset:
    from variantctl.config.patchsets import load_patchset

    return load_patchset(env.patchsets_dir, name)


@contextmanager
def host_target(env: Environment, host_name: str, roots: Sequence[str] = ()
                ) -> Iterator[tuple[Host | None, Target]]:
    """The host (None for ``--root`` on the local machine) and an open Target for it.

    ``--root`` on the local host needs nothing from variants/hosts.yaml (no
    discovery), so neither that file nor the host models are loaded then.
    """
    if roots and host_name == "local":
        from variantctl.targets.local import LocalTarget

        yield None, LocalTarget("local")
        return
    from variantctl.config.hosts import get_host, load_hosts
    from variantctl.targets.connect import open_target

    host = get_host(load_hosts(env.project_dir), host_name)
    with open_target(host) as target:
        yield host, target


def roots_for(env: Environment, host: Host | None, target: Target, patchset: Patchset,
              roots: Sequence[str]) -> list[str]:
    """Explicit roots (local ones made absolute), else configured, else discovered."""
    if roots:
        local = host is None or host.is_local
        # local roots are resolved, so a root given twice through a symlink is one root
        return [str((env.cwd / r).resolve()) if local else r for r in roots]
    from variantctl.targets.roots import resolve_roots

    assert host is not None
    return resolve_roots(target, host, patchset.modules)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while libcst is imported and a file parsed.

    A 3,300-line file becomes ~45,000 node objects; the collector would walk them
    again and again for nothing (they hold no cycles worth collecting). Restored after.
    """
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass(frozen=True)
class HostRun(Generic[R]):
    """One host's result of a patch command, or the error that stopped that host."""

    host: str
    value: R | None = None
    error: VariantctlError | None = None


def run_per_host(
    env: Environment,
    host_name: str,
    hosts_csv: str | None,
    roots: Sequence[str],
    work: Callable[[Host | None, Target], R],
) -> list[HostRun[R]]:
    """Run ``work`` on ``--host`` (errors propagate) or on every ``--hosts`` host in parallel.

    With ``--hosts`` each host gets one connection and its own result; an
    unreachable host is reported beside the others' results.
    """
    if not hosts_csv:
        with paused_gc(), host_target(env, host_name, roots) as (host, target):
            return [HostRun(host_name, work(host, target))]
    if roots:
        raise VariantctlError("--root names directories on one host; it cannot be combined "
                              "with --hosts", hint="configure site_roots per host in hosts.yaml")
    if host_name != "local":
        raise VariantctlError("give --host or --hosts, not both")
    from variantctl.project.selection import select_hosts
    from variantctl.targets.connect import on_hosts

    hosts = select_hosts(env, None, hosts_csv)
    with paused_gc():
        outcomes = on_hosts(hosts, work)
    return [HostRun(o.host.name, o.value, o.error) for o in outcomes]


def render_per_host(
    env: Environment,
    runs: list[HostRun[R]],
    *,
    multi: bool,
    as_json: bool,
    to_json: Callable[[R], Json],
    render: Callable[[R], list[Block]],
    exit_code: Callable[[R], int],
) -> int:
    """Print each host's result (a header per host with ``--hosts``); the worst exit code.

    A host that failed is reported by the one per-host error path (cli.hostresults).
    """
    from rich.rule import Rule

    from variantctl.cli.hostresults import print_host_error, worst_exit_code
    from variantctl.cli.output import emit, print_json

    if not multi:
        value = runs[0].value
        assert value is not None
        if as_json:
            print_json(env, to_json(value))
        else:
            emit(env, render(value))
        return exit_code(value)
    codes: list[int] = []
    if as_json:
        # one result per host, each the object the single-host command prints
        print_json(env, {"hosts": [
            {"host": r.host, "result": to_json(r.value) if r.value is not None else None,
             "error": r.error.to_json() if r.error else None}
            for r in runs
        ]})
    for r in runs:
        if not as_json:
            emit(env, [Block(Rule(f"host {r.host}", align="left"))])
        if r.error is not None:
            print_host_error(env, r.host, r.error)
            codes.append(r.error.exit_code)
            continue
        assert r.value is not None
        if not as_json:
            emit(env, render(r.value))
        codes.append(exit_code(r.value))
    return worst_exit_code(codes)
