"""Exit codes shared by every command (documented in README)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    #: the operation ran and its outcome is a failure (a failed verdict, a failed apply)
    FAILED = 1
    #: bad input: usage, configuration, unknown names, missing files
    USAGE = 2
    #: the on-disk state is not what the operation needs (drifted, partial, changed under us)
    CONFLICT = 3
    #: a host could not be reached or refused us (ssh, auth, host key)
    UNREACHABLE = 4
    #: the server hung (no progress) during startup
    HANG = 5
    #: a deadline passed without a verdict
    TIMEOUT = 6
    #: a log was read but did not hold enough evidence for a verdict (classify)
    UNKNOWN = 7
    #: a bug in variantctl itself
    INTERNAL = 70
    #: interrupted by the user
    INTERRUPTED = 130


# Worst last. A host we could not use at all (4) outranks bad input (2), which
# outranks a failed operation (1), which outranks a conflict (3): the code should
# name the problem the user has to fix first. Hangs, timeouts, bugs and
# interrupts (5, 6, 7, 70, 130) outrank all of these.
_RANK = {0: 0, 3: 1, 1: 2, 2: 3, 4: 4}


def worst_exit_code(codes: Iterable[int]) -> int:
    """The exit code of a command over several hosts (or items): the worst one, 0 if none.

    ``apply``, ``status``, ``rollback``, ``patch diff``, ``ps``, ``stop`` and ``locate``
    run on several hosts at once and keep going when one fails (README, "Exit codes").
    """
    return max(codes, key=lambda c: _RANK.get(c, len(_RANK)), default=0)
