"""Options and steps shared by ``patch diff``, ``apply``, ``status`` and ``rollback``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.config.hosts import Host
    from variantctl.config.patchsets import Patchset
    from variantctl.targets.base import Target

F = TypeVar("F", bound=Callable[..., Any])


def root_options(func: F) -> F:
    """``--root DIR`` (repeatable) and ``--host NAME``."""
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
