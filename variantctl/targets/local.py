"""The local executor: this machine's filesystem and processes."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from typing import TYPE_CHECKING

from variantctl.errors import TargetError
from variantctl.targets.base import FileStat, RunResult, error_from_oserror
from variantctl.targets.guard import LinkRefused

if TYPE_CHECKING:
    import socket


class LocalTarget:
    """:class:`~variantctl.targets.base.Target` for this machine."""

    def __init__(self, name: str = "local"):
        self.name = name

    # -- files -------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None

    def _write_temp(self, path: str, chunks: Iterable[bytes]) -> str:
        directory = os.path.dirname(path) or "."
        base = os.path.basename(path)
        try:
            fd, tmp = _create_temp(directory, f".{base}.", ".variantctl-tmp")
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            _unlink_quietly(tmp)
            raise error_from_oserror(exc, host=self.name, path=path) from None
        except BaseException:
            _unlink_quietly(tmp)  # what made the chunks failed: no half file left behind
            raise
        return tmp

    def write_atomic(self, path: str, data: bytes) -> None:
        self.write_atomic_from(path, (data,))

    def write_atomic_from(self, path: str, chunks: Iterable[bytes]) -> None:
        """:meth:`write_atomic` of the bytes ``chunks`` make, written as they come (a
        file too large to hold whole: a run store's listing index)."""
        try:
            st: os.stat_result | None = os.lstat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None
        if st is not None and not stat.S_ISREG(st.st_mode):
            # os.replace would swap a link (or a fifo, a device) for a regular file
            raise _not_regular(self.name, path, st)
        tmp = self._write_temp(path, chunks)
        try:
            if st is not None:
                os.chmod(tmp, st.st_mode & 0o7777)
                if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    os.chown(tmp, st.st_uid, st.st_gid)
            if st is not None:
                # a link put there since the check above is refused, not replaced
                now = os.lstat(path)
                if not stat.S_ISREG(now.st_mode):
                    raise _not_regular(self.name, path, now)
            os.replace(tmp, path)
            _fsync_dir(os.path.dirname(path) or ".")
        except OSError as exc:
            _unlink_quietly(tmp)
            raise error_from_oserror(exc, host=self.name, path=path) from None
        except TargetError:
            _unlink_quietly(tmp)
            raise

    def write_new(self, path: str, data: bytes, *, mode: int | None = None) -> None:
        if os.path.lexists(path):
            raise TargetError("already exists", kind="exists", host=self.name, path=path)
        tmp = self._write_temp(path, (data,))
        try:
            if mode is not None:
                os.chmod(tmp, mode)
            # link() fails if path appeared meanwhile: never clobbers a backup
            os.link(tmp, path)
            _fsync_dir(os.path.dirname(path) or ".")
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None
        finally:
            _unlink_quietly(tmp)

    def rename(self, src: str, dst: str) -> None:
        try:
            os.replace(src, dst)
            _fsync_dir(os.path.dirname(dst) or ".")
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=src) from None

    def remove(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None

    def stat(self, path: str) -> FileStat | None:
        return self._stat(path, follow=True)

    def lstat(self, path: str) -> FileStat | None:
        return self._stat(path, follow=False)

    def _stat(self, path: str, *, follow: bool) -> FileStat | None:
        try:
            st = os.stat(path) if follow else os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None
        return FileStat(st.st_size, st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns)

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None

    def makedirs(self, path: str) -> None:
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None

    def lock(self, path: str, *, timeout: float = 0.0) -> AbstractContextManager[None]:
        return self._lock(path, timeout)

    @contextmanager
    def _lock(self, path: str, timeout: float) -> Iterator[None]:
        # flock is released by the kernel when the holder dies, so a killed
        # apply never leaves a stale lock behind.
        # O_NOFOLLOW: a link planted as the lock file must not get its target
        # truncated and overwritten with our pid
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _not_regular(self.name, path, None) from None
            raise error_from_oserror(exc, host=self.name, path=path) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _not_regular(self.name, path, st)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise TargetError(
                            "locked by another variantctl process",
                            kind="busy",
                            host=self.name,
                            path=path,
                            hint="wait for the other apply/rollback to finish",
                        ) from None
                    time.sleep(0.05)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield
        finally:
            os.close(fd)

    # -- processes ---------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        input: bytes | None = None,
    ) -> RunResult:
        import subprocess  # only for commands that run programs (a few ms of start-up)

        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        try:
            proc = subprocess.run(
                list(argv),
                env=full_env,
                cwd=cwd,
                timeout=timeout,
                input=input,
                capture_output=True,
                check=False,
            )
        except FileNotFoundError:
            raise TargetError(
                f"program not found: {argv[0]}", kind="not-found", host=self.name
            ) from None
        except subprocess.TimeoutExpired:
            raise TargetError(
                f"{argv[0]} did not finish within {timeout} s", kind="other", host=self.name
            ) from None
        return RunResult(
            tuple(argv),
            proc.returncode,
            proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
        )

    # -- the loop's extras (see Target) ------------------------------------

    def read_from(self, path: str, offset: int, limit: int = 1 << 20) -> bytes:
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                return fh.read(limit)
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None

    def expand_user(self, path: str) -> str:
        return os.path.expanduser(path)

    def open_tcp(self, port: int, address: str = "127.0.0.1", timeout: float = 3.0
                 ) -> socket.socket:
        import socket  # only for commands that talk to a server (patching never does)

        return socket.create_connection((address, port), timeout=timeout)

    def forward(self, port: int, address: str = "127.0.0.1"
                ) -> AbstractContextManager[tuple[str, int]]:
        return nullcontext((address, port))

    def reconnect(self) -> None:
        return None


def _not_regular(host: str, path: str, st: os.stat_result | None) -> TargetError:
    if st is None or stat.S_ISLNK(st.st_mode):
        return LinkRefused(path, host=host)
    return LinkRefused(path, host=host, what="is not a regular file")


def _unlink_quietly(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)


#: what tempfile.mkstemp opens with (with mode 0600): a new file only, never an existing
#: one or a link's target (O_CLOEXEC is what os.open gives every descriptor anyway)
_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _create_temp(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """``tempfile.mkstemp(suffix, prefix, directory)`` without importing tempfile (with
    shutil and the compression modules it pulls in, a few ms of every apply's start-up).
    The random part is hex, so guard.temp_pattern still recognises a left-over file."""
    directory = os.path.abspath(directory)  # as mkstemp returns it
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, _TEMP_FLAGS, 0o600), path
        except FileExistsError:
            continue  # 48 random bits taken: try another name
    raise FileExistsError(errno.EEXIST, "no unused temporary name found", directory)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
