"""The local executor: this machine's filesystem and processes."""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress

from variantctl.errors import TargetError
from variantctl.targets.base import FileStat, RunResult, error_from_oserror


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

    def _write_temp(self, path: str, data: bytes) -> str:
        directory = os.path.dirname(path) or "."
        base = os.path.basename(path)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".variantctl-tmp", dir=directory)
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            _unlink_quietly(tmp)
            raise error_from_oserror(exc, host=self.name, path=path) from None
        return tmp

    def write_atomic(self, path: str, data: bytes) -> None:
        try:
            st: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None
        tmp = self._write_temp(path, data)
        try:
            if st is not None:
                os.chmod(tmp, st.st_mode & 0o7777)
                if os.geteuid() == 0 and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    os.chown(tmp, st.st_uid, st.st_gid)
            os.replace(tmp, path)
            _fsync_dir(os.path.dirname(path) or ".")
        except OSError as exc:
            _unlink_quietly(tmp)
            raise error_from_oserror(exc, host=self.name, path=path) from None

    def write_new(self, path: str, data: bytes, *, mode: int | None = None) -> None:
        if os.path.lexists(path):
            raise TargetError("already exists", kind="exists", host=self.name, path=path)
        tmp = self._write_temp(path, data)
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
        try:
            st = os.stat(path)
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
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise error_from_oserror(exc, host=self.name, path=path) from None
        try:
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


def _unlink_quietly(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)


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
