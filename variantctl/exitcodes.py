"""Exit codes shared by every command (documented in README)."""

from __future__ import annotations

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
