"""Options and output shared by ``patch diff``, ``apply``, ``status`` and ``rollback``
(the work is :mod:`variantctl.usecases.patching`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from variantctl.env import Environment
from variantctl.render.output import Block
from variantctl.usecases.patching import HostRun

if TYPE_CHECKING:
    from variantctl.jsontypes import Json

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

    A host that failed is reported by the one per-host error path
    (render/hosts.host_error_blocks).
    """
    from variantctl.terminal.output import emit, print_json

    if not multi:
        value = runs[0].value
        assert value is not None
        if as_json:
            print_json(env, to_json(value))
        else:
            emit(env, render(value))
        return exit_code(value)
    # only --hosts reports per host (one host's result needs neither module)
    from variantctl.exitcodes import worst_exit_code
    from variantctl.render.hosts import per_host_blocks, per_host_json

    per_host = [(r.host, r.value, r.error) for r in runs]
    if as_json:
        print_json(env, per_host_json(per_host, to_json))
    emit(env, per_host_blocks(per_host, render, results=not as_json))
    return worst_exit_code(_code(r, exit_code) for r in runs)


def _code(run: HostRun[R], exit_code: Callable[[R], int]) -> int:
    if run.error is not None:
        return run.error.exit_code
    assert run.value is not None
    return exit_code(run.value)
