"""How a launch ended, as one closed set of values, and what each means as an exit code.

A launch (or ``watch``) ends ``ready`` (``/health`` answered 200), ``failed`` (a failure
signature matched), ``hang`` (no progress for the stall time), ``exited`` (the process
died with no known signature), ``timeout`` (no verdict in time), or stays ``started``
while nobody watches it. The value is a ``str`` enum so that ``run.json`` and every
``--json`` output keep the plain strings they always had; code compares and maps the
members, never spelled-out strings.
"""

from __future__ import annotations

from enum import Enum

from variantctl.exitcodes import ExitCode


class VerdictKind(str, Enum):
    """A launch's verdict. ``str(kind)`` and f-strings give the plain value (``ready``)."""

    STARTED = "started"
    READY = "ready"
    FAILED = "failed"
    HANG = "hang"
    EXITED = "exited"
    TIMEOUT = "timeout"

    # a str-valued enum prints as its value (Python 3.11+ would print VerdictKind.READY)
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def ended_badly(self) -> bool:
        """The server did not come up (it is stopped unless ``--keep``)."""
        return self in (VerdictKind.FAILED, VerdictKind.HANG, VerdictKind.TIMEOUT,
                        VerdictKind.EXITED)

    def exit_code(self, *, expect_ok: bool = True) -> ExitCode:
        """What the verdict means to the shell: up (or started) with every expectation met
        is 0, a hang 5, a timeout 6, anything else that ended badly 1."""
        if self in (VerdictKind.STARTED, VerdictKind.READY):
            return ExitCode.OK if expect_ok else ExitCode.FAILED
        return _CODES.get(self, ExitCode.FAILED)


_CODES = {VerdictKind.HANG: ExitCode.HANG, VerdictKind.TIMEOUT: ExitCode.TIMEOUT}
