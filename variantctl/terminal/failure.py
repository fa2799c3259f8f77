"""How a command that ends in an error says so: ``error:``/``hint:`` on stderr, and
with ``--json`` the one ``{"error": …}`` document on stdout."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from itertools import pairwise
from typing import TYPE_CHECKING

import click

from variantctl.errors import VariantctlError
from variantctl.jsontypes import JsonObject

if TYPE_CHECKING:
    from variantctl.env import Environment

#: True once the running command's ``--json`` (or ``--format json``) has been parsed
#: (``cli.common.json_option``). A context variable rather than an Environment field
#: because the error that ends a command is printed by ``cli.run`` after click has
#: let go of the context (and, in a real process, of the Environment it built). Here,
#: not in cli.common, so that ``variantctl --help`` imports no more than before.
JSON_OUTPUT: ContextVar[bool] = ContextVar("variantctl_json_output", default=False)


def _echo_err(env: Environment | None, text: str) -> None:
    if env is None:
        click.echo(text, err=True)
    else:
        # soft_wrap: an error stays one line however narrow the terminal (a long path
        # must not break it for `grep '^error:'`); the terminal folds it for the eye
        env.stderr.print(text, markup=False, highlight=False, soft_wrap=True)


def print_json_error(env: Environment | None, error: JsonObject) -> None:
    from variantctl.render.output import json_text

    text = json_text({"error": error})
    if env is None:
        click.echo(text)
    else:
        env.stdout.file.write(text + "\n")
        env.stdout.file.flush()


def report_error(exc: VariantctlError, env: Environment | None = None) -> int:
    """Print an error that ends a command; return its exit code.

    Always ``error: …`` (and ``hint: …``) on stderr for the person; with ``--json``
    also ``{"error": {"kind", "message", "hint", "where"}}`` on stdout for the script
    (the only JSON document the command prints).
    """
    if JSON_OUTPUT.get():
        print_json_error(env, exc.to_json())
    from variantctl.logs.bounded import clipped_lines

    # a message may quote a server or a log (an error body, a model id): filtered
    _echo_err(env, f"error: {clipped_lines(exc.message)}")
    if exc.hint:
        _echo_err(env, f"hint: {clipped_lines(exc.hint)}")
    return exc.exit_code


def report_click_error(exc: click.ClickException, env: Environment | None, *,
                       as_json: bool) -> int:
    """Print an error click raised (bad usage, a bad option value); return its exit code.

    click's own ``Error: …`` line on stderr; with ``as_json`` also the ``{"error": …}``
    document holding the same message (a usage error for exit 2).
    """
    if as_json:
        from variantctl.errors import KIND_BY_EXIT_CODE

        print_json_error(env, {"kind": KIND_BY_EXIT_CODE.get(exc.exit_code, "usage"),
                               "message": exc.format_message(), "hint": None,
                               "where": None})
    if env is None:
        exc.show()
    else:
        env.stderr.print(f"Error: {exc.format_message()}", markup=False, highlight=False)
    return exc.exit_code


def json_requested(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for JSON, for usage errors click raises before any callback.

    Words after ``--`` are arguments (a log file may be called ``--json``).
    """
    words = list(argv[: argv.index("--")] if "--" in argv else argv)
    if "--json" in words or "--format=json" in words:
        return True
    return any(a == "--format" and b == "json" for a, b in pairwise(words))
