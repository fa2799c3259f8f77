"""Small pieces every command module shares: the Environment decorator and --json."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import update_wrapper
from typing import Any, TypeVar, cast

import click

from variantctl.env import Environment
from variantctl.terminal.failure import JSON_OUTPUT

F = TypeVar("F", bound=Callable[..., Any])


def current_env(ctx: click.Context) -> Environment:
    """The Environment of ``ctx``, after checking the project named by ``--project``."""
    env = ctx.find_object(Environment)
    if env is None:  # the group always builds one; a command run on its own has none
        raise RuntimeError("variantctl commands need the Environment the `cli` group builds")
    env.check_project()
    return env


def pass_env(func: F) -> F:
    """Inject the Environment built by the group (or passed in by a test) as first argument.

    The ``--project`` check runs here, once the command's own options are parsed, so a
    bad project is reported as JSON when the command was given ``--json``.
    """

    # the wrapped command's own arguments, passed through as click gives them
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(current_env(click.get_current_context()), *args, **kwargs)

    return cast(F, update_wrapper(wrapper, func))


def _note_json(ctx: click.Context, param: click.Parameter, value: bool | str
               ) -> bool | str:
    if value is True or value == "json":
        JSON_OUTPUT.set(True)
    return value


def json_option(func: F) -> F:
    """``--json``: machine-readable output on stdout instead of rich tables.

    Eager, so it is known before any other option can fail: errors are then
    printed as ``{"error": {…}}`` too (README, "Commands").
    """
    return click.option(
        "--json", "as_json", is_flag=True, is_eager=True, callback=_note_json,
        help="Print machine-readable JSON instead of tables (errors too).",
    )(func)


def format_option(choices: Sequence[str], default: str, help: str) -> Callable[[F], F]:
    """``--format CHOICE`` for commands with several renderings; ``json`` acts like ``--json``."""

    def decorate(func: F) -> F:
        return click.option(
            "--format", "fmt", type=click.Choice(list(choices)), default=default,
            show_default=True, is_eager=True, callback=_note_json, help=help,
        )(func)

    return decorate


class FiniteFloat(click.FloatRange):
    """A number of seconds (or any float option) that must be finite: click's float
    reads ``nan`` and ``inf``, which every range check lets through (``nan < 1`` is
    false) and which would disable a deadline or a wait. ``max`` defaults to
    :data:`~variantctl.benchparams.MAX_SECONDS` (longer waits overflow the clocks)."""

    name = "finite number"

    def __init__(self, min: float | None = None, max: float | None = None,
                 min_open: bool = False, max_open: bool = False) -> None:
        from variantctl.benchparams import MAX_SECONDS

        super().__init__(min=min, max=MAX_SECONDS if max is None else max,
                         min_open=min_open, max_open=max_open)

    # click's ParamType API: a value of any type in, the converted value out
    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        import math

        rv = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(rv, param, ctx)


def grace_option(help: str = "Seconds a server gets to exit on SIGTERM when it is stopped."
                 ) -> Callable[[F], F]:
    """``--grace S`` (default 10): how long a stopped server gets between TERM and KILL."""
    return click.option("--grace", type=FiniteFloat(min=0), default=10.0, show_default=True,
                        help=help)


def watch_options(func: F) -> F:
    """``--timeout``, ``--stall``, ``--keep``, ``--grace``: how launch and watch wait and stop."""
    for option in reversed((
        click.option("--timeout", type=FiniteFloat(min=1),
                     help="Seconds to wait for ready."),
        click.option("--stall", type=FiniteFloat(min=1),
                     help="Seconds without progress = hang."),
        click.option("--keep", is_flag=True,
                     help="Do not stop a failed, hung or timed-out server."),
        grace_option("Seconds between TERM and KILL when stopping."),
    )):
        func = option(func)
    return func
