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
