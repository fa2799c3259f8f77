"""The executor interface every effectful feature is written against.

Paths are POSIX strings on the *target* (a remote host's paths are not local
``Path`` objects). Failures raise :class:`~variantctl.errors.TargetError` with a
``kind`` (``not-found``, ``permission``, ``read-only``, ``no-space``, ``busy``,
``exists``, ``link``, ``unreachable``, ``auth``, ``host-key``, ``other``) so callers turn
them into per-item results.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from variantctl.errors import TargetError


@dataclass(frozen=True)
class FileStat:
    size: int
    mode: int
    uid: int
    gid: int
    mtime_ns: int


@dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@runtime_checkable
class Target(Protocol):
    """A place where files live and processes run: ``local`` or an SSH host."""

    #: the host name as configured (``local`` for this machine)
    name: str

    def read_bytes(self, path: str) -> bytes:
        """The whole file."""
        ...

    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace ``path`` with ``data``: temp file in the same directory, fsync,
        rename over. Keeps the existing file's mode and owner. Never leaves a
        partial file at ``path`` (the temp file is removed on failure). Refuses
        (kind ``link``) when ``path`` is a symbolic link or not a regular file:
        renaming over a link would silently turn it into a regular file."""
        ...

    def write_new(self, path: str, data: bytes, *, mode: int | None = None) -> None:
        """Create ``path`` with ``data`` (and permission bits ``mode``); kind ``exists``
        if it is already there. Written atomically (temp + fsync + link), so a crash
        leaves no partial file."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Atomic rename, replacing ``dst``."""
        ...

    def remove(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        ...

    def stat(self, path: str) -> FileStat | None:
        """File metadata, or None when it does not exist."""
        ...

    def lstat(self, path: str) -> FileStat | None:
        """Like :meth:`stat`, but of a symbolic link itself (not followed): how the
        patch engine checks that nothing it writes under a root goes through a link."""
        ...

    def listdir(self, path: str) -> list[str]:
        """Entry names of a directory (kind ``not-found`` if missing)."""
        ...

    def makedirs(self, path: str) -> None:
        """``mkdir -p``."""
        ...

    def lock(self, path: str, *, timeout: float = 0.0) -> AbstractContextManager[None]:
        """An exclusive lock held while the context is open; released if the
        holder dies. Kind ``busy`` when another holder keeps it past ``timeout``;
        kind ``link`` when ``path`` is a symbolic link (never followed: the pid
        written into the lock file would overwrite the link's target)."""
        ...

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        input: bytes | None = None,
    ) -> RunResult:
        """Run a program to completion (no shell; argv is quoted for SSH)."""
        ...

    # -- what the launch/measure loop needs beyond files and programs ---------------
    #
    # Declared here (never probed with getattr) so every feature works on every target.
    # Concurrency: one target may be used at the same time by a log watcher, a GPU
    # sampler and a benchmark client from different threads. Each process run and each
    # TCP connection gets its own channel; file operations are serialised by the target
    # (SFTP requests share one channel, so SshTarget holds a lock per request).

    def read_from(self, path: str, offset: int, limit: int = 1 << 20) -> bytes:
        """Up to ``limit`` bytes of a (growing) file from byte ``offset``; b"" when
        nothing new."""
        ...

    def expand_user(self, path: str) -> str:
        """``~`` and ``~/…`` expanded to the home directory *on the target*."""
        ...

    def open_tcp(self, port: int, address: str = "127.0.0.1", timeout: float = 3.0) -> Socketish:
        """A connected stream to ``address:port`` as seen from the target (for a one-shot
        probe such as ``/health``). Raises OSError (e.g. ConnectionRefusedError) when
        nothing listens there; TargetError kind ``unreachable`` when the target is gone."""
        ...

    def forward(self, port: int, address: str = "127.0.0.1"
                ) -> AbstractContextManager[tuple[str, int]]:
        """A local ``(host, port)`` that any client in this process can connect to, reaching
        ``address:port`` on the target (for an HTTP client: benchmarks, ``/metrics``).
        Local targets yield the address itself; SSH targets relay each connection over
        its own ``direct-tcpip`` channel."""
        ...

    def reconnect(self) -> None:
        """Re-establish a dropped connection (kind ``unreachable`` if it cannot be);
        a no-op for targets without one."""
        ...


class Socketish(Protocol):
    """The part of a socket :meth:`Target.open_tcp` returns (a socket or an SSH channel)."""

    def sendall(self, data: bytes) -> Any: ...

    def recv(self, n: int) -> bytes: ...

    def settimeout(self, timeout: float | None) -> Any: ...

    def close(self) -> Any: ...


def error_from_oserror(exc: OSError, *, host: str, path: str | None = None) -> TargetError:
    """Map an OSError to a TargetError whose ``kind`` callers can branch on."""
    kinds = {
        errno.ENOENT: "not-found",
        errno.EACCES: "permission",
        errno.EPERM: "permission",
        errno.EROFS: "read-only",
        errno.ENOSPC: "no-space",
        errno.EDQUOT: "no-space",
        errno.EEXIST: "exists",
        errno.EAGAIN: "busy",
        errno.EISDIR: "other",
        errno.ENOTDIR: "not-found",
    }
    kind = kinds.get(exc.errno or 0, "other")
    text = {
        "not-found": "no such file or directory",
        "permission": "permission denied",
        "read-only": "read-only file system",
        "no-space": "no space left on device",
        "exists": "already exists",
    }.get(kind, exc.strerror or str(exc))
    return TargetError(text, kind=kind, host=host, path=path or exc.filename)
