"""The one path for per-host results of ``--hosts`` commands: error lines and exit code.

``apply``, ``status``, ``rollback``, ``patch diff``, ``ps``, ``stop`` and ``locate``
run on several hosts at once and keep going when one fails. Each failed host is
reported here, the same way for all of them (``error:``/``hint:`` on stderr, the
host named), and the command's exit code is the worst of the hosts' codes by
:func:`worst_exit_code` (README, "Exit codes").
"""

from __future__ import annotations

from collections.abc import Iterable

from variantctl.env import Environment
from variantctl.errors import VariantctlError

# Worst last. A host we could not use at all (4) outranks bad input (2), which
# outranks a failed operation (1), which outranks a conflict (3): the code should
# name the problem the user has to fix first. Hangs, timeouts, bugs and
# interrupts (5, 6, 7, 70, 130) outrank all of these.
_RANK = {0: 0, 3: 1, 1: 2, 2: 3, 4: 4}


def worst_exit_code(codes: Iterable[int]) -> int:
    """The exit code of a command over several hosts (or items): the worst one, 0 if none."""
    return max(codes, key=lambda c: _RANK.get(c, len(_RANK)), default=0)


def print_host_error(env: Environment, host: str, error: VariantctlError) -> None:
    """Print one host's error (stderr)."""
    from variantctl.cli.output import emit
    from variantctl.render.hosts import host_error_blocks

    emit(env, host_error_blocks(host, error))


def print_host_errors(env: Environment,
                      failed: Iterable[tuple[str, VariantctlError | None]]) -> list[int]:
    """Print the error of every ``(host, error)`` pair that has one; their exit codes."""
    codes = []
    for host, error in failed:
        if error is not None:
            print_host_error(env, host, error)
            codes.append(error.exit_code)
    return codes
