"""The SSH executor: a host reached through Fabric (ssh_config aliases, users,
ports, keys, ProxyJump), files over SFTP, programs over exec channels.

Guarantees match :class:`~variantctl.targets.local.LocalTarget`:

- ``write_atomic`` writes a temp file *in the destination directory on the
  host*, fsyncs it (``fsync@openssh.com``), then renames it over the target with
  ``posix-rename@openssh.com``; on failure the temp file is removed, so the
  destination is either the old or the new content, never a partial file.
- ``lock`` is an ``flock`` held by a process on the host whose stdin is our
  channel: if we die or the connection drops, sshd closes the channel, the
  holder sees EOF and exits, and the kernel releases the lock.
- Host keys are checked against the ssh_config ``UserKnownHostsFile`` (and
  ``~/.ssh/known_hosts``); unknown or changed keys are refused (kind
  ``host-key``), never added silently.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import secrets
import socket
import stat as statmod
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from variantctl.errors import TargetError
from variantctl.hostmodel import Host
from variantctl.shellquote import build_command
from variantctl.targets.base import FileStat, RunResult, error_from_oserror
from variantctl.targets.guard import LinkRefused

if TYPE_CHECKING:
    import paramiko

#: seconds to wait for the TCP connection and the SSH handshake
DEFAULT_CONNECT_TIMEOUT = 10.0

# A lock holder for the host: flock when available, Python otherwise. It prints
# LOCKED once it holds the lock, then waits for EOF on stdin (our channel).
_LOCK_SCRIPT = r"""
lock=$1; wait=$2; py=$3
# never through a link: the pid would overwrite the link's target
if [ -L "$lock" ] || { [ -e "$lock" ] && [ ! -f "$lock" ]; }; then echo LINK; exit 1; fi
if command -v flock >/dev/null 2>&1; then
  exec 9>>"$lock" || exit 3
  if [ -L "$lock" ] || [ ! -f "$lock" ]; then echo LINK; exit 1; fi
  if flock -w "$wait" 9; then
    if [ -L "$lock" ]; then echo LINK; exit 1; fi
    : > "$lock"; echo "$$" >> "$lock"; echo LOCKED; cat >/dev/null; exit 0
  fi
  echo BUSY; exit 1
fi
exec "$py" -c '
import fcntl, os, stat, sys, time
try:
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
except OSError:
    print("LINK" if os.path.islink(sys.argv[1]) else "ERROR", flush=True); sys.exit(1)
if not stat.S_ISREG(os.fstat(fd).st_mode):
    print("LINK", flush=True); sys.exit(1)
deadline = time.monotonic() + float(sys.argv[2])
while True:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); break
    except BlockingIOError:
        if time.monotonic() >= deadline:
            print("BUSY", flush=True); sys.exit(1)
        time.sleep(0.05)
os.ftruncate(fd, 0); os.write(fd, b"%d\n" % os.getpid())
print("LOCKED", flush=True)
sys.stdin.read()
' "$lock" "$wait"
"""


class SshTarget:
    """:class:`~variantctl.targets.base.Target` for a host reached over SSH."""

    def __init__(self, host: Host, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        if host.ssh is None:
            raise ValueError(f"host {host.name} has no ssh settings")
        self.name = host.name
        self.host = host
        self.connect_timeout = connect_timeout
        self._conn: Any = None
        # one SFTP session per thread: paramiko's SFTPClient is not safe for concurrent
        # requests (two threads reading responses steal each other's packets and hang),
        # and a log watcher, a GPU sampler and a benchmark share this connection. Each
        # session is a channel sshd counts against MaxSessions (10 by default), so the
        # session of a thread that ended is closed before another opens: a sweep's
        # event loop per level starts new executor threads, and leaked sessions would
        # refuse every command after the tenth
        self._sftp_local = threading.local()
        self._sftp_all: list[tuple[threading.Thread, paramiko.SFTPClient]] = []
        self._sftp_guard = threading.Lock()
        self._reconnect_guard = threading.Lock()
        self._home: str | None = None
        #: number of SSH round trips made (exec channels and SFTP requests we issued)
        self.round_trips = 0

    # -- connection ----------------------------------------------------------

    def _make_connection(self) -> Any:
        import fabric

        spec = self.host.ssh
        assert spec is not None
        overrides: dict[str, Any] = {"load_ssh_configs": True}
        if spec.config_file:
            cfg_path = Path(spec.config_file).expanduser()
            if not cfg_path.is_file():
                # a typo in hosts.yaml is bad input (exit 2), not an unreachable host
                raise TargetError(
                    f"ssh config file {cfg_path} does not exist",
                    kind="config",
                    host=self.name,
                    hint=f"fix `ssh.config` of host {self.name} ({self.host.origin})",
                )
            config = fabric.Config(runtime_ssh_path=str(cfg_path), overrides=overrides)
        else:
            config = fabric.Config(overrides=overrides)
        connect_kwargs: dict[str, Any] = {"banner_timeout": self.connect_timeout,
                                          "auth_timeout": self.connect_timeout}
        if spec.key:
            connect_kwargs["key_filename"] = [str(self._key_file(spec.key))]
        target = spec.alias or spec.hostname
        assert target is not None
        conn = fabric.Connection(
            target,
            user=spec.user,
            port=spec.port,
            config=config,
            connect_timeout=int(self.connect_timeout),
            connect_kwargs=connect_kwargs,
        )
        # OpenSSH skips an ssh_config IdentityFile that does not exist; paramiko would
        # stop at it with "No such file", reported as an unreachable host (`ssh.key`
        # of hosts.yaml, checked above, is in the list and exists)
        files = conn.connect_kwargs.get("key_filename")
        if files:
            present = [f for f in files if Path(f).expanduser().is_file()]
            if present:
                conn.connect_kwargs["key_filename"] = present
            else:
                del conn.connect_kwargs["key_filename"]
        _reject_unknown_keys(conn)
        return conn

    def _key_file(self, key: str) -> Path:
        """The ``ssh.key`` file, checked here: paramiko would report a missing key as
        an unreachable host (exit 4) although it is a typo in hosts.yaml (exit 2)."""
        path = Path(key).expanduser()
        problem = None
        if not path.exists():
            problem = "does not exist"
        elif not path.is_file():
            problem = "is not a file"
        elif not os.access(path, os.R_OK):
            problem = "cannot be read (permission denied)"
        if problem:
            raise TargetError(
                f"ssh key file {path} {problem}",
                kind="config",
                host=self.name,
                hint=f"fix `ssh.key` of host {self.name} ({self.host.origin})",
            )
        return path

    def connect(self) -> SshTarget:
        """Open the connection (one per host per command); map failures to kinds."""
        import logging

        import paramiko

        # paramiko reports refused port forwards (a /health probe before the server
        # listens) through logging; without a handler Python would print them
        logger = logging.getLogger("paramiko")
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())

        conn = self._make_connection()
        where = f"{conn.user}@{conn.host}:{conn.port}"
        try:
            conn.open()
            transport = conn.client.get_transport()
            if transport is not None:
                transport.set_keepalive(5)
        except paramiko.BadHostKeyException as exc:
            conn.close()
            raise TargetError(
                f"host key of {_hop_name(exc.hostname, conn)} has CHANGED "
                f"(got {exc.key.get_name()} "
                f"{exc.key.get_fingerprint().hex()}); refusing to connect",
                kind="host-key",
                host=self.name,
                hint="if the host was reinstalled, remove its old entry from known_hosts "
                "(ssh-keygen -R); otherwise someone may be intercepting the connection",
            ) from None
        except paramiko.AuthenticationException as exc:
            conn.close()
            raise TargetError(
                f"authentication failed for {where}: {exc}",
                kind="auth",
                host=self.name,
                hint="check the user and IdentityFile in the ssh config "
                "(try `ssh " + (self.host.ssh.display if self.host.ssh else where) + "`)",
            ) from None
        except paramiko.SSHException as exc:
            conn.close()
            text = str(exc)
            if "not found in known_hosts" in text:
                # name the hop whose key is unknown (a ProxyJump host, or the target)
                m = re.search(r"Server '([^']+)'", text)
                hop = m.group(1) if m else where
                if m and hop.strip("[]").replace("]:", ":") != f"{conn.host}:{conn.port}":
                    hop = f"{hop} (jump host)"
                else:
                    hop = where
                raise TargetError(
                    f"host key of {hop} is unknown (not in known_hosts); refusing to connect",
                    kind="host-key",
                    host=self.name,
                    hint="verify the key and add it (ssh-keyscan -p PORT HOST >> known_hosts)",
                ) from None
            raise TargetError(
                f"cannot reach {where}: {text}", kind="unreachable", host=self.name
            ) from None
        except (OSError, EOFError) as exc:
            conn.close()
            reason = _socket_reason(exc)
            raise TargetError(
                f"cannot reach {where}: {reason}",
                kind="unreachable",
                host=self.name,
                hint="is the host up and sshd listening? (check HostName/Port in the ssh config)",
            ) from None
        self._conn = conn
        return self

    def close(self) -> None:
        with self._sftp_guard:
            clients = [c for _, c in self._sftp_all]
            self._sftp_all = []
            self._sftp_local = threading.local()
        for client in clients:
            with suppress(Exception):
                client.close()
        if self._conn is not None:
            with suppress(Exception):
                self._conn.close()
            self._conn = None

    def reconnect(self) -> None:
        """Drop the current connection and open a new one (one thread at a time: the
        points of a SLURM sweep share the connection and may all see it drop)."""
        with self._reconnect_guard:
            self.close()
            self.connect()

    @property
    def is_connected(self) -> bool:
        if self._conn is None:
            return False
        transport = self._conn.client.get_transport()
        return transport is not None and transport.is_active()

    def _transport(self) -> paramiko.Transport:
        if self._conn is None:
            self.connect()
        transport = self._conn.client.get_transport()
        if transport is None or not transport.is_active():
            raise TargetError("the SSH connection was lost", kind="unreachable", host=self.name)
        return transport  # type: ignore[no-any-return]

    def sftp(self) -> paramiko.SFTPClient:
        """This thread's SFTP session on the connection, opened on first use.

        Opened in two steps (what ``open_sftp_client`` does in one) so that a host
        whose sshd has no SFTP subsystem is named as such: the refused request (or a
        missing sftp-server that hangs up at once) closes only that channel, while a
        dropped connection takes the transport with it.
        """
        client: paramiko.SFTPClient | None = getattr(self._sftp_local, "client", None)
        if client is None:
            import paramiko

            self._close_sessions_of_ended_threads()

            try:
                channel = self._transport().open_session()
            except TargetError:
                raise
            except Exception as exc:
                raise self._lost(exc) from None
            try:
                channel.invoke_subsystem("sftp")
                client = paramiko.SFTPClient(channel)
            except Exception as exc:
                with suppress(Exception):
                    channel.close()
                if not self.is_connected:
                    raise self._lost(exc) from None
                raise TargetError(
                    f"SFTP is unavailable on {self.name}: its sshd offers no working sftp "
                    "subsystem, and variantctl reads and writes files on a host over SFTP",
                    kind="no-sftp",
                    host=self.name,
                    hint="enable it in the host's sshd_config (`Subsystem sftp "
                    "internal-sftp`, or the path of sftp-server) and reload sshd",
                ) from None
            self.round_trips += 1
            self._sftp_local.client = client
            with self._sftp_guard:
                self._sftp_all.append((threading.current_thread(), client))
        return client

    @property
    def sftp_sessions(self) -> int:
        """SFTP sessions open on the connection (one per live thread that used one)."""
        with self._sftp_guard:
            return len(self._sftp_all)

    def _close_sessions_of_ended_threads(self) -> None:
        with self._sftp_guard:
            ended = [c for t, c in self._sftp_all if not t.is_alive()]
            self._sftp_all = [(t, c) for t, c in self._sftp_all if t.is_alive()]
        for client in ended:  # nobody can use them: their threads are gone
            with suppress(Exception):
                client.close()

    def _lost(self, exc: BaseException) -> TargetError:
        import paramiko

        if isinstance(exc, paramiko.ChannelException) and self.is_connected:
            # the connection is fine: sshd refused one more channel on it
            return TargetError(
                f"sshd on {self.name} refused a new session on the connection "
                f"(ChannelException: {exc})",
                kind="unreachable",
                host=self.name,
                hint="sshd allows MaxSessions sessions per connection (10 by default); "
                "is another client multiplexing this connection, or MaxSessions set low?",
            )
        return TargetError(
            f"the SSH connection was lost ({type(exc).__name__}: {exc})",
            kind="unreachable",
            host=self.name,
            hint="the host may be rebooting or the network dropped; retry",
        )

    def home(self) -> str:
        if self._home is None:
            self._home = self.sftp().normalize(".")
            self.round_trips += 1
        return self._home

    def path(self, path: str) -> str:
        """``~`` expanded to the remote home (SFTP does not expand it)."""
        if path == "~":
            return self.home()
        if path.startswith("~/"):
            return posixpath.join(self.home(), path[2:])
        return path

    def _err(self, exc: Exception, path: str) -> TargetError:
        if isinstance(exc, TargetError):
            return exc
        if isinstance(exc, FileNotFoundError):
            return TargetError("no such file or directory", kind="not-found",
                               host=self.name, path=path)
        if isinstance(exc, PermissionError):
            return TargetError("permission denied", kind="permission", host=self.name, path=path)
        if isinstance(exc, OSError) and exc.errno is not None:
            return error_from_oserror(exc, host=self.name, path=path)
        if isinstance(exc, EOFError) or not self.is_connected:
            return self._lost(exc)
        import paramiko

        if isinstance(exc, paramiko.SSHException):  # e.g. "Server connection dropped"
            return self._lost(exc)
        return TargetError(str(exc) or type(exc).__name__, kind="other", host=self.name, path=path)

    # -- files ---------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        p = self.path(path)
        try:
            with self.sftp().open(p, "rb") as fh:
                fh.prefetch()
                data = fh.read()
            self.round_trips += 1
            return data
        except Exception as exc:
            raise self._err(exc, path) from None

    def read_from(self, path: str, offset: int, limit: int = 1 << 20) -> bytes:
        """Bytes of ``path`` from ``offset`` (at most ``limit``); b"" at EOF."""
        p = self.path(path)
        try:
            with self.sftp().open(p, "rb") as fh:
                fh.seek(offset)
                data = fh.read(limit)
            self.round_trips += 1
            return data
        except Exception as exc:
            raise self._err(exc, path) from None

    def _write_temp(self, path: str, data: bytes, mode: int | None) -> str:
        directory = posixpath.dirname(path) or "."
        tmp = posixpath.join(
            directory, f".{posixpath.basename(path)}.{secrets.token_hex(4)}.variantctl-tmp"
        )
        sftp = self.sftp()
        try:
            # not pipelined: paramiko drops the error status of pipelined writes, and a
            # full disk must fail the write, not produce a short file
            # "x": O_CREAT|O_EXCL on the host, so a link planted at the name is not followed
            with sftp.open(tmp, "wxb") as fh:
                fh.write(data)
                fh.flush()
                _sftp_fsync(sftp, fh)
            written = sftp.stat(tmp).st_size
            if written != len(data):
                raise OSError(f"short write: {written} of {len(data)} bytes")
            if mode is not None:
                sftp.chmod(tmp, mode)
            self.round_trips += 3 + len(data) // 32768
        except Exception as exc:
            with suppress(Exception):
                sftp.remove(tmp)
            raise self._write_error(exc, path, len(data)) from None
        return tmp

    def _write_error(self, exc: Exception, path: str, size: int) -> TargetError:
        err = self._err(exc, path)
        if err.kind != "other":
            return err
        # sftp-server reports ENOSPC as a generic "Failure"; ask the host.
        if self._free_bytes(posixpath.dirname(path) or ".") < max(size, 1):
            return TargetError("no space left on device", kind="no-space",
                               host=self.name, path=path)
        return err

    def _free_bytes(self, directory: str) -> int:
        try:
            res = self.run(["df", "-Pk", directory], timeout=10)
            line = res.stdout.strip().splitlines()[-1].split()
            return int(line[3]) * 1024
        except (TargetError, IndexError, ValueError):
            return 1 << 62

    def write_atomic(self, path: str, data: bytes) -> None:
        p = self.path(path)
        try:
            st = self.sftp().lstat(p)
        except FileNotFoundError:
            st = None
        except Exception as exc:
            raise self._err(exc, path) from None
        if st is not None and not statmod.S_ISREG(st.st_mode or 0):
            # posix-rename would swap a link (or a fifo, a device) for a regular file
            raise _not_regular(self.name, path, st.st_mode or 0)
        mode = statmod.S_IMODE(st.st_mode) if st is not None and st.st_mode is not None else None
        tmp = self._write_temp(p, data, mode)
        sftp = self.sftp()
        try:
            if st is not None and st.st_uid is not None and st.st_gid is not None:
                with suppress(OSError):  # chown needs root; keep going as the owner
                    sftp.chown(tmp, st.st_uid, st.st_gid)
            if st is not None:
                # checked again right before the rename: a link put there meanwhile
                # is refused, not replaced
                now = sftp.lstat(p).st_mode or 0
                if not statmod.S_ISREG(now):
                    raise _not_regular(self.name, path, now)
            sftp.posix_rename(tmp, p)
            self.round_trips += 3
        except Exception as exc:
            with suppress(Exception):
                sftp.remove(tmp)
            raise self._err(exc, path) from None

    def write_new(self, path: str, data: bytes, *, mode: int | None = None) -> None:
        p = self.path(path)
        if self.lstat(p) is not None:  # a dangling link is there too
            raise TargetError("already exists", kind="exists", host=self.name, path=path)
        tmp = self._write_temp(p, data, mode)
        sftp = self.sftp()
        try:
            # hardlink@openssh.com fails if the name appeared meanwhile: never clobbers
            _sftp_extended(sftp, "hardlink@openssh.com", tmp, p)
            self.round_trips += 1
        except Exception as exc:
            if self.lstat(p) is not None:
                raise TargetError("already exists", kind="exists",
                                  host=self.name, path=path) from None
            raise self._err(exc, path) from None
        finally:
            with suppress(Exception):
                sftp.remove(tmp)

    def rename(self, src: str, dst: str) -> None:
        try:
            self.sftp().posix_rename(self.path(src), self.path(dst))
            self.round_trips += 1
        except Exception as exc:
            raise self._err(exc, src) from None

    def remove(self, path: str) -> None:
        try:
            self.sftp().remove(self.path(path))
            self.round_trips += 1
        except FileNotFoundError:
            return
        except Exception as exc:
            raise self._err(exc, path) from None

    def stat(self, path: str) -> FileStat | None:
        return self._stat(path, follow=True)

    def lstat(self, path: str) -> FileStat | None:
        return self._stat(path, follow=False)

    def _stat(self, path: str, *, follow: bool) -> FileStat | None:
        try:
            sftp = self.sftp()
            st = sftp.stat(self.path(path)) if follow else sftp.lstat(self.path(path))
            self.round_trips += 1
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._err(exc, path) from None
        return FileStat(
            st.st_size or 0,
            st.st_mode or 0,
            st.st_uid or 0,
            st.st_gid or 0,
            int(st.st_mtime or 0) * 1_000_000_000,
        )

    def listdir(self, path: str) -> list[str]:
        try:
            names = self.sftp().listdir(self.path(path))
            self.round_trips += 1
            return sorted(names)
        except Exception as exc:
            raise self._err(exc, path) from None

    def makedirs(self, path: str) -> None:
        p = self.path(path)
        sftp = self.sftp()
        missing: list[str] = []
        cur = p
        while cur not in ("", "/", "."):
            try:
                st = sftp.stat(cur)
                self.round_trips += 1
            except FileNotFoundError:
                missing.append(cur)
                cur = posixpath.dirname(cur)
                continue
            except Exception as exc:
                raise self._err(exc, path) from None
            if st.st_mode is not None and not statmod.S_ISDIR(st.st_mode):
                raise TargetError("not a directory", kind="exists", host=self.name, path=cur)
            break
        for d in reversed(missing):
            try:
                sftp.mkdir(d)
                self.round_trips += 1
            except Exception as exc:
                with suppress(Exception):
                    if statmod.S_ISDIR(sftp.stat(d).st_mode or 0):
                        continue  # created meanwhile
                raise self._err(exc, d) from None

    def lock(self, path: str, *, timeout: float = 0.0) -> AbstractContextManager[None]:
        return self._lock(path, timeout)

    @contextmanager
    def _lock(self, path: str, timeout: float) -> Iterator[None]:
        p = self.path(path)
        cmd = build_command(["sh", "-c", _LOCK_SCRIPT, "lock", p, f"{timeout:g}", self.host.python])
        try:
            chan = self._transport().open_session()
            chan.exec_command(cmd)
            self.round_trips += 1
            reply = _read_line(chan, timeout + self.connect_timeout + 5)
        except TargetError:
            raise
        except Exception as exc:
            raise self._lost(exc) from None
        if reply != "LOCKED":
            chan.close()
            if reply == "LINK":
                raise LinkRefused(path, host=self.name)
            if reply == "BUSY":
                raise TargetError(
                    "locked by another variantctl process",
                    kind="busy",
                    host=self.name,
                    path=path,
                    hint="wait for the other apply/rollback to finish",
                )
            raise TargetError(f"cannot take the lock (got {reply!r})", kind="permission",
                              host=self.name, path=path)
        try:
            yield
        finally:
            with suppress(Exception):
                chan.shutdown_write()  # EOF on the holder's stdin: it exits, flock released
                deadline = time.monotonic() + 5
                while not chan.exit_status_ready() and time.monotonic() < deadline:
                    time.sleep(0.005)
            chan.close()

    # -- processes -----------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        input: bytes | None = None,
    ) -> RunResult:
        cmd = build_command(argv, env, cwd)
        try:
            chan = self._transport().open_session()
        except TargetError:
            raise
        except Exception as exc:
            raise self._lost(exc) from None
        self.round_trips += 1
        try:
            chan.exec_command(cmd)
            if input:
                chan.sendall(input)
            chan.shutdown_write()
            out, err, code = _collect(chan, timeout)
        except TimeoutError:
            chan.close()
            raise TargetError(
                f"{argv[0]} did not finish within {timeout} s", kind="other", host=self.name
            ) from None
        except Exception as exc:
            chan.close()
            raise self._lost(exc) from None
        chan.close()
        if code == 127 and b"not found" in err:
            raise TargetError(f"program not found: {argv[0]}", kind="not-found", host=self.name)
        return RunResult(tuple(argv), code, out.decode("utf-8", "replace"),
                         err.decode("utf-8", "replace"))

    def open_tcp(self, port: int, address: str = "127.0.0.1", timeout: float = 3.0) -> Any:
        """A socket-like channel to ``address:port`` as seen *from the host*
        (an SSH ``direct-tcpip`` channel), e.g. to probe ``/health``."""
        try:
            chan = self._transport().open_channel(
                "direct-tcpip", (address, port), ("127.0.0.1", 0), timeout=timeout
            )
        except TargetError:
            raise
        except Exception as exc:
            if self.is_connected:
                raise ConnectionRefusedError(errno.ECONNREFUSED, str(exc)) from None
            raise self._lost(exc) from None
        self.round_trips += 1
        chan.settimeout(timeout)
        return chan

    def forward(self, port: int, address: str = "127.0.0.1"
                ) -> AbstractContextManager[tuple[str, int]]:
        """A local listener relaying each connection over its own direct-tcpip channel."""
        from variantctl.targets.forward import SelectableChannel, relay

        def open_channel() -> SelectableChannel:
            chan = self._transport().open_channel(
                "direct-tcpip", (address, port), ("127.0.0.1", 0), timeout=10.0
            )
            self.round_trips += 1
            return SelectableChannel(chan)

        self._transport()  # fail now (unreachable), not at the first client connection
        return relay(open_channel)

    def expand_user(self, path: str) -> str:
        return self.path(path)


def _not_regular(host: str, path: str, mode: int) -> TargetError:
    if statmod.S_ISLNK(mode):
        return LinkRefused(path, host=host)
    return LinkRefused(path, host=host, what="is not a regular file")


def _collect(chan: paramiko.Channel, timeout: float | None) -> tuple[bytes, bytes, int]:
    """Drain stdout and stderr (both, so neither window fills) until exit."""
    deadline = None if timeout is None else time.monotonic() + timeout
    out: list[bytes] = []
    err: list[bytes] = []
    chan.settimeout(0.0)
    while True:
        got = False
        while chan.recv_ready():
            out.append(chan.recv(65536))
            got = True
        while chan.recv_stderr_ready():
            err.append(chan.recv_stderr(65536))
            got = True
        # sshd may send exit-status before the last of the output (it is still in the
        # channel's buffers): only EOF (or close) says that everything was received
        drained = (chan.eof_received or chan.closed) and not got
        if drained and chan.exit_status_ready() and not chan.recv_ready() \
                and not chan.recv_stderr_ready():
            break
        if chan.closed and not got and not chan.exit_status_ready():
            raise EOFError("channel closed before the exit status arrived")
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError
        if not got:
            time.sleep(0.002)
    return b"".join(out), b"".join(err), chan.recv_exit_status()


def _read_line(chan: paramiko.Channel, timeout: float) -> str:
    buf = b""
    deadline = time.monotonic() + timeout
    chan.settimeout(0.0)
    while b"\n" not in buf:
        if chan.recv_ready():
            piece = chan.recv(1024)
            if not piece:
                break
            buf += piece
            continue
        if (chan.eof_received or chan.closed) and not chan.recv_ready():
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.002)
    return buf.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def _sftp_extended(sftp: paramiko.SFTPClient, name: str, *args: Any) -> None:
    from paramiko.sftp import CMD_EXTENDED

    request = getattr(sftp, "_request")  # noqa: B009 - the public API lacks fsync/hardlink
    request(CMD_EXTENDED, name, *args)


def _sftp_fsync(sftp: paramiko.SFTPClient, fh: paramiko.SFTPFile) -> None:
    with suppress(OSError):  # servers without fsync@openssh.com: rename is still atomic
        _sftp_extended(sftp, "fsync@openssh.com", fh.handle)


def _reject_unknown_keys(conn: Any) -> None:
    """Replace Fabric's AutoAddPolicy: load the configured known_hosts files and
    refuse unknown keys, for this hop and every ProxyJump hop."""
    import paramiko

    hop = conn
    while hop is not None and not isinstance(hop, (str, bool)):
        client = hop.client
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        files = hop.ssh_config.get("userknownhostsfile")
        paths = files.split() if isinstance(files, str) else list(files or [])
        paths.append("~/.ssh/known_hosts")
        keys = client.get_host_keys()
        for f in paths:
            fp = Path(f).expanduser()
            if fp.is_file():
                with suppress(OSError, paramiko.SSHException):
                    keys.load(str(fp))
        hop = getattr(hop, "gateway", None)


def _hop_name(hostname: str, conn: Any) -> str:
    """``user@host:port`` of the target, or paramiko's name of a jump host."""
    if hostname.strip("[]").replace("]:", ":") in (conn.host, f"{conn.host}:{conn.port}"):
        return f"{conn.user}@{conn.host}:{conn.port}"
    return f"{hostname} (jump host)"


def _socket_reason(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "connection timed out"
    errors = getattr(exc, "errors", None)  # paramiko NoValidConnectionsError
    if isinstance(errors, dict) and errors:
        first = next(iter(errors.values()))
        return _socket_reason(first)
    if isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED:
        return "connection refused"
    if isinstance(exc, socket.gaierror):
        return f"unknown host name ({exc.strerror})"
    if isinstance(exc, EOFError):
        return "the server closed the connection during the handshake"
    return str(exc) or type(exc).__name__
