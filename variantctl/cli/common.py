"""Small pieces every command module shares: the Environment decorator and --json."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from variantctl.env import Environment

F = TypeVar("F", bound=Callable[..., Any])

#: inject the Environment built by the group (or passed in by a test)
pass_env = click.make_pass_decorator(Environment)


def json_option(func: F) -> F:
    """``--json``: machine-readable output on stdout instead of rich tables."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of tables."
    )(func)


def watch_options(func: F) -> F:
    """``--timeout``, ``--stall``, ``--keep``, ``--grace``: how launch and watch wait and stop."""
    for option in reversed((
        click.option("--timeout", type=click.FloatRange(min=1),
                     help="Seconds to wait for ready."),
        click.option("--stall", type=click.FloatRange(min=1),
                     help="Seconds without progress = hang."),
        click.option("--keep", is_flag=True,
                     help="Do not stop a failed, hung or timed-out server."),
        click.option("--grace", type=click.FloatRange(min=0), default=10.0,
                     show_default=True, help="Seconds between TERM and KILL when stopping."),
    )):
        func = option(func)
    return func
