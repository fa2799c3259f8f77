"""Exceptions that carry a user-facing message and an exit code.

Only *expected* conditions (bad input, unreachable hosts, state conflicts) are
raised as these; the CLI prints them as one short message without a traceback.
Per-item outcomes (one root drifted, one host down) are values, not exceptions.
"""

from __future__ import annotations

from typing import ClassVar

from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonObject

#: the ``kind`` of an error that names none itself, by exit code (README: "--json errors")
KIND_BY_EXIT_CODE: dict[int, str] = {
    ExitCode.FAILED: "failed",
    ExitCode.USAGE: "usage",
    ExitCode.CONFLICT: "conflict",
    ExitCode.UNREACHABLE: "unreachable",
    ExitCode.HANG: "hang",
    ExitCode.TIMEOUT: "timeout",
    ExitCode.UNKNOWN: "unknown",
    ExitCode.INTERNAL: "internal",
    ExitCode.INTERRUPTED: "interrupted",
}


class VariantctlError(Exception):
    """An error the user can act on: printed as ``error: <message>`` plus an optional hint.

    ``kind`` is a stable word for scripts (``--json`` prints :meth:`to_json`); ``where``
    is the ``file:line[:column]`` or host the error is about, when there is one.
    """

    exit_code: int = ExitCode.USAGE
    #: the kind of every error of this class; None: derived from the exit code
    default_kind: ClassVar[str | None] = None

    def __init__(self, message: str, *, hint: str | None = None, exit_code: int | None = None,
                 kind: str | None = None, where: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code
        self._kind = kind
        self.where = where

    @property
    def kind(self) -> str:
        # derived when read: a subclass may set exit_code after __init__
        return self._kind or self.default_kind or KIND_BY_EXIT_CODE.get(self.exit_code, "error")

    @kind.setter
    def kind(self, value: str) -> None:
        self._kind = value

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> JsonObject:
        """``{"kind", "message", "hint", "where"}``: the ``error`` object of ``--json``."""
        return {"kind": self.kind, "message": self.message, "hint": self.hint,
                "where": self.where}


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
        location = None
        if source:
            location = source
            if line is not None:
                location += f":{line}"
                if column is not None:
                    location += f":{column}"
        prefix = f"{location}: " if location else ""
        if key_path:
            prefix += f"{key_path}: "
        super().__init__(prefix + message, hint=hint, exit_code=ExitCode.USAGE, kind="config",
                         where=location)


class NotFoundError(VariantctlError):
    """An unknown name (patchset, variant, host, signature)."""

    default_kind = "not-found"


class TargetError(VariantctlError):
    """A filesystem or process operation on a target (local or SSH host) failed.

    ``kind`` classifies the cause so callers can turn it into a per-item result:
    ``not-found``, ``permission``, ``read-only``, ``no-space``, ``busy``,
    ``exists``, ``unreachable``, ``auth``, ``host-key``, ``no-sftp`` (the host's
    sshd offers no SFTP subsystem), ``config`` (the host's settings name a file
    that does not exist here: bad input, exit 2), ``other``.
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
        self.host = host
        self.path = path
        prefix = ""
        if host and host != "local":
            prefix += f"{host}: "
        if path:
            prefix += f"{path}: "
        if kind in UNUSABLE_HOST_KINDS:
            code = ExitCode.UNREACHABLE
        elif kind == "config":
            code = ExitCode.USAGE
        else:
            code = ExitCode.FAILED
        # a remote error is about the host; a local one about the file it names
        remote = bool(host) and host != "local"
        super().__init__(prefix + message, hint=hint, exit_code=code, kind=kind,
                         where=host if remote else path)


#: TargetError kinds meaning the host cannot be used at all (exit 4)
UNUSABLE_HOST_KINDS = frozenset({"unreachable", "auth", "host-key", "no-sftp"})
