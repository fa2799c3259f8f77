"""A real OpenSSH server on 127.0.0.1 for the SSH tier.

Each :class:`SshServer` generates its own host key, starts ``/usr/sbin/sshd -D``
on a free port and writes an ``ssh_config`` with a ``Host`` alias that reaches
it (user root, a generated client key, a known_hosts file holding the server's
host key). Two servers stand for two hosts. Everything lives in a temp dir and
the daemon is stopped (its whole process group) at teardown.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def free_port() -> int:
    """A TCP port nothing listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path, kind: str = "ed25519") -> Path:
    """A fresh key pair at ``path`` / ``path.pub`` (no passphrase)."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "variantctl-test", "-f", str(path)],
        check=True,
    )
    return path


@dataclass
class SshServer:
    """One sshd on 127.0.0.1:``port`` reachable as ssh alias ``alias``."""

    alias: str
    directory: Path
    client_key: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    #: False: an sshd with no ``Subsystem sftp`` line (a host variantctl cannot use)
    sftp: bool = True
    host_key: Path = field(init=False)
    known_hosts: Path = field(init=False)
    sshd_config: Path = field(init=False)
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.host_key = keygen(self.directory / "host_key")
        self.known_hosts = self.directory / "known_hosts"
        self.sshd_config = self.directory / "sshd_config"
        self.log = self.directory / "sshd.log"
        self.trust_host_key(self.host_key)

    def trust_host_key(self, key: Path) -> None:
        """Write known_hosts so the client trusts ``key`` for this server."""
        pub = (key.parent / (key.name + ".pub")).read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n")

    def start(self) -> None:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        self.trust_host_key(self.host_key)
        authorized = self.directory / "authorized_keys"
        pub = self.client_key.parent / (self.client_key.name + ".pub")
        authorized.write_text(pub.read_text())
        self.sshd_config.write_text(
            "\n".join(
                [
                    "ListenAddress 127.0.0.1",
                    f"Port {self.port}",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {authorized}",
                    f"PidFile {self.directory / 'sshd.pid'}",
                    "UsePAM no",
                    "StrictModes no",
                    "PermitRootLogin yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    *(["Subsystem sftp internal-sftp"] if self.sftp else []),
                    # sshd's default, as on a real host: a connection holding more
                    # than ten sessions (leaked SFTP sessions, say) is refused here too
                    "MaxSessions 10",
                    "MaxStartups 50",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.sshd_config)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "ab"),  # noqa: SIM115 - owned by the child
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on {self.port}: {self.log.read_text()}")

    def stop(self) -> None:
        """Stop the daemon and every session it forked (its process group)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)
        self.proc = None

    def kill_sessions(self) -> int:
        """Kill the per-connection sshd children (drops every open connection),
        keep the listener. Returns how many were killed."""
        assert self.proc is not None
        killed = 0
        for child in _children(self.proc.pid):
            try:
                os.kill(child, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        return killed

    def ssh_config_entry(self, alias: str | None = None, key: Path | None = None) -> str:
        return "\n".join(
            [
                f"Host {alias or self.alias}",
                "    HostName 127.0.0.1",
                f"    Port {self.port}",
                "    User root",
                f"    IdentityFile {key or self.client_key}",
                f"    UserKnownHostsFile {self.known_hosts}",
                "    StrictHostKeyChecking yes",
                "    ConnectTimeout 5",
                "",
            ]
        )


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the test process dies (even if it is killed),
    so an interrupted test run leaves no sshd behind."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (sshd forks one per connection)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


@dataclass
class SshLab:
    """Several sshd 'hosts' and one ssh_config naming them."""

    directory: Path
    servers: dict[str, SshServer] = field(default_factory=dict)
    client_key: Path = field(init=False)
    ssh_config: Path = field(init=False)

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.client_key = keygen(self.directory / "client_key")
        self.ssh_config = self.directory / "ssh_config"

    def add(self, alias: str) -> SshServer:
        server = SshServer(alias, self.directory / alias, self.client_key)
        server.start()
        self.servers[alias] = server
        self.write_config()
        return server

    def write_config(self, extra: str = "") -> None:
        entries = [s.ssh_config_entry() for s in self.servers.values()]
        self.ssh_config.write_text("\n".join(entries) + extra)

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
