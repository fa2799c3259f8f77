"""Exceptions that carry a user-facing message and an exit code.

Only *expected* conditions (bad input, unreachable hosts, state conflicts) are
raised as these; the CLI prints them as one short message without a traceback.
Per-item outcomes (one root drifted, one host down) are values, not exceptions.
"""

from __future__ import annotations

from variantctl.exitcodes import ExitCode


class VariantctlError(Exception):
    """An error the user can act on: printed as ``error: <message>`` plus an optional hint."""

    exit_code: int = ExitCode.USAGE

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class ConfigError(VariantctlError):
    """A problem in a YAML file: names ``file:line:column`` and the key path."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        key_path: str | None = None,
        hint: str | None = None,
    ):
        self.source = source
        self.line = line
        self.column = column
        self.key_path = key_path
        self.detail = message
        where = ""
        if source:
            where = source
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            where += ": "
        if key_path:
            where += f"{key_path}: "
        super().__init__(where + message, hint=hint, exit_code=ExitCode.USAGE)


class NotFoundError(VariantctlError):
    """An unknown name (patchset, variant, host, signature)."""


class TargetError(VariantctlError):
    """A filesystem or process operation on a target (local or SSH host) failed.

    ``kind`` classifies the cause so callers can turn it into a per-item result:
    ``not-found``, ``permission``, ``read-only``, ``no-space``, ``busy``,
    ``exists``, ``unreachable``, ``auth``, ``host-key``, ``other``.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "other",
        host: str | None = None,
        path: str | None = None,
        hint: str | None = None,
    ):
        self.kind = kind
        self.host = host
        self.path = path
        prefix = ""
        if host and host != "local":
            prefix += f"{host}: "
        if path:
            prefix += f"{path}: "
        unreachable = kind in {"unreachable", "auth", "host-key"}
        code = ExitCode.UNREACHABLE if unreachable else ExitCode.FAILED
        super().__init__(prefix + message, hint=hint, exit_code=code)
