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
