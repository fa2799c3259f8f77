"""Server processes on any Target (local or SSH): start detached, inspect, stop.

Everything here is written against the Target interface plus POSIX ``sh`` and
Linux ``/proc`` on the host, so it behaves the same on this machine and over SSH:

- :func:`spawn_detached` starts a script in its own session (``setsid``), stdin
  from /dev/null and stdout+stderr to a log file, so it survives the SSH
  connection; the session leader writes its own pid (= process group id) to a
  pid file before ``exec``-ing the script.
- :func:`stop_group` sends TERM to the whole process group (vLLM forks an
  engine core and workers), waits a grace period, sends KILL, then verifies no
  process of the group or session remains.
- :func:`listening_ports` reads ``/proc/net/tcp{,6}``; no ``ss``/``netstat`` needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass

from variantctl.errors import TargetError
from variantctl.shellquote import quote as _sq
from variantctl.shellquote import quote_path
from variantctl.targets.base import Target

#: /proc/net/tcp state code of a listening socket
_TCP_LISTEN = "0A"
#: processes that hold a port for a server in a container (a variant's ``command:`` may
#: be ``docker run -p …``): the listener is theirs, not the launched process group's,
#: and whose server answers behind them cannot be told from the host
PORT_PROXIES = frozenset({"docker-proxy", "rootlesskit", "slirp4netns", "pasta",
                          "conmon", "podman"})


@dataclass(frozen=True)
class ProcInfo:
    """One process on the host, from ``/proc/<pid>/stat``."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    comm: str
    #: start time in clock ticks after boot (``/proc/PID/stat`` field 22); with the
    #: host's boot id it tells this process from a later one given the same pid
    start: int | None = None

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


@dataclass(frozen=True)
class ProcIdentity:
    """What tells a server process from any later process given the same pid: the
    host's boot id and the process's start time (``start`` None: it had already ended
    when it was recorded, so no live process at that pid is it)."""

    boot_id: str
    start: int | None

    def token(self) -> str:
        """``BOOT:START`` (``BOOT:-``): how the on-host stop program is told."""
        return f"{self.boot_id}:{'-' if self.start is None else self.start}"


@dataclass(frozen=True)
class Occupant:
    """A live process at a recorded pid that is not (or cannot be shown to be) the
    recorded server."""

    pid: int
    comm: str
    cmdline: str
    #: True: its identity differs from the record's; False: the record has no identity
    #: to compare (written by a variantctl before 19.1), so it cannot be verified
    foreign: bool

    def describe(self) -> str:
        what = self.cmdline or self.comm
        return f"pid {self.pid} now belongs to {_printable(what)[:120]!r}"

    def describe_listener(self) -> str:
        what = self.cmdline or self.comm
        return f"pid {self.pid} ({_printable(what)[:120]!r})"


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text)


@dataclass(frozen=True, kw_only=True)
class StopResult:
    """What :func:`stop_group` did and saw."""

    pgid: int
    #: processes of the group when we started (0 means it was already gone)
    found: int
    #: True when TERM was not enough and KILL was sent
    killed: bool
    #: pids still alive at the end (empty on success)
    remaining: tuple[int, ...]
    seconds: float
    #: the pid is held by a process that is not the server (or cannot be verified to
    #: be): nothing was signalled
    occupant: Occupant | None = None

    @property
    def ok(self) -> bool:
        """Nothing of the server remains. A pid that now belongs to another process
        means the server is gone (ok); one that cannot be verified is not ok."""
        return not self.remaining and (self.occupant is None or self.occupant.foreign)


def parse_proc_stat(text: str) -> list[ProcInfo]:
    """Parse concatenated ``/proc/*/stat`` lines (comm may hold spaces and parens)."""
    out: list[ProcInfo] = []
    for line in text.splitlines():
        if "(" not in line or ")" not in line:
            continue
        head, _, rest = line.partition(" (")
        comm, _, tail = rest.rpartition(") ")
        fields = tail.split()
        if len(fields) < 4 or not head.strip().isdigit():
            continue
        try:
            start = int(fields[19]) if len(fields) > 19 else None
            out.append(ProcInfo(int(head), int(fields[1]), int(fields[2]), int(fields[3]),
                                fields[0], comm, start))
        except ValueError:
            continue
    return out


def process_table(target: Target) -> list[ProcInfo]:
    """Every process on the host."""
    res = target.run(["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null; true"], timeout=30)
    return parse_proc_stat(res.stdout)


def group_members(target: Target, pgid: int) -> list[int]:
    """Live pids whose process group or session is ``pgid``."""
    return sorted(
        p.pid for p in process_table(target) if p.alive and pgid in (p.pgid, p.sid)
    )


def is_alive(target: Target, pid: int) -> bool:
    """True when ``pid`` runs and is not a zombie (one file read, no process spawned)."""
    text = _read_proc(target, f"/proc/{int(pid)}/stat")
    infos = parse_proc_stat(text or "")
    return bool(infos) and infos[0].alive


def boot_id(target: Target) -> str:
    """The host's boot id (a new one after every reboot)."""
    text = _read_proc(target, "/proc/sys/kernel/random/boot_id", 64)
    return (text or "").strip()


def identify(target: Target, pid: int) -> ProcIdentity:
    """The identity of ``pid`` as it is now (start None when it has ended)."""
    infos = parse_proc_stat(_read_proc(target, f"/proc/{int(pid)}/stat") or "")
    start = infos[0].start if infos and infos[0].alive else None
    return ProcIdentity(boot_id(target), start)


def occupant_of(info: ProcInfo | None, identity: ProcIdentity | None, boot: str | None
                ) -> bool | None:
    """Whether the live process ``info`` at a recorded pid is someone else's: True (its
    identity differs), False (it is the recorded process), None (the record carries no
    identity, so it cannot be told). A missing or dead ``info`` is no occupant (False)."""
    if info is None or not info.alive:
        return False
    if identity is None:
        return None
    return (identity.start is None or identity.boot_id != boot
            or info.start != identity.start)


def verify_pid(target: Target, pid: int, identity: ProcIdentity | None) -> Occupant | None:
    """The process now at ``pid`` when it is not the one ``identity`` names (or, with no
    identity, any live process there: it cannot be verified); None when ``pid`` is the
    recorded process or nothing lives there."""
    infos = parse_proc_stat(_read_proc(target, f"/proc/{int(pid)}/stat") or "")
    info = infos[0] if infos else None
    other = occupant_of(info, identity, boot_id(target) if identity is not None else None)
    if other is False or info is None:
        return None
    raw = _read_proc(target, f"/proc/{int(pid)}/cmdline", 4096) or ""
    return Occupant(pid, info.comm, " ".join(raw.split("\0")).strip(), foreign=bool(other))


def _read_proc(target: Target, path: str, limit: int = 1 << 22) -> str | None:
    """A /proc file's text, None if it does not exist. Read as a file (SFTP over SSH),
    which is much cheaper than starting a remote process."""
    try:
        return read_from(target, path, 0, limit).decode("utf-8", "replace")
    except TargetError as exc:
        if exc.kind in ("not-found", "permission"):
            return None
        raise


def parse_listeners(text: str) -> list[tuple[int, int | None]]:
    """``(port, socket inode)`` of each socket in LISTEN state in ``/proc/net/tcp`` /
    ``tcp6`` contents (inode None where the line is cut short or unreadable)."""
    out: list[tuple[int, int | None]] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[0] == "sl" or parts[3] != _TCP_LISTEN:
            continue
        _, _, port_hex = parts[1].rpartition(":")
        try:
            port = int(port_hex, 16)
        except ValueError:
            continue
        inode = int(parts[9]) if len(parts) > 9 and parts[9].isdigit() else None
        out.append((port, inode or None))
    return out


def parse_listening_ports(text: str) -> set[int]:
    """Ports in LISTEN state from ``/proc/net/tcp`` / ``tcp6`` contents."""
    return {port for port, _ in parse_listeners(text)}


def listening_ports(target: Target) -> set[int]:
    """Every TCP port something listens on (IPv4 and IPv6) on the host."""
    text = "".join(_read_proc(target, p) or "" for p in ("/proc/net/tcp", "/proc/net/tcp6"))
    return parse_listening_ports(text)


def port_in_use(target: Target, port: int) -> bool:
    return port in listening_ports(target)


def parse_fd_owners(text: str) -> set[int]:
    """Pids from ``find /proc/*/fd`` output lines (``/proc/PID/fd/N``)."""
    pids: set[int] = set()
    for line in text.splitlines():
        parts = line.strip().split("/")
        if len(parts) >= 4 and parts[1] == "proc" and parts[2].isdigit() and parts[3] == "fd":
            pids.add(int(parts[2]))
    return pids


def listener_pids(target: Target, port: int) -> set[int]:
    """The processes holding a socket that listens on ``port``; empty when nothing
    listens or the holders' descriptors cannot be read (another user's process)."""
    text = "".join(_read_proc(target, p) or "" for p in ("/proc/net/tcp", "/proc/net/tcp6"))
    inodes = {i for p, i in parse_listeners(text) if p == port and i is not None}
    if not inodes:
        return set()
    # one process on the host: find reads every descriptor link itself (a shell loop
    # would start a readlink per descriptor)
    names = " -o ".join(f"-lname 'socket:\\[{i}\\]'" for i in sorted(inodes))
    res = target.run(["sh", "-c", f"find /proc/[0-9]*/fd \\( {names} \\) 2>/dev/null; true"],
                     timeout=30)
    return parse_fd_owners(res.stdout)


def foreign_listener(target: Target, leader: int, port: int) -> Occupant | None:
    """The process listening on ``port`` when it is not one of the server's (the
    process group or session ``leader`` started): a server that failed to bind, while
    another process answers /health there, is not ready. None when a server process
    listens there, or the listener's owner cannot be told."""
    owners = listener_pids(target, port)
    if not owners:
        return None
    if owners & set(group_members(target, leader)):
        return None
    pid = min(owners)
    info = parse_proc_stat(_read_proc(target, f"/proc/{pid}/stat") or "")
    comm = info[0].comm if info else "?"
    if comm in PORT_PROXIES:
        return None  # a container's port: the proxy holds it for the server inside
    raw = _read_proc(target, f"/proc/{pid}/cmdline", 4096) or ""
    return Occupant(pid, comm, " ".join(raw.split("\0")).strip(), foreign=True)


def spawn_detached(
    target: Target,
    script: str,
    *,
    log_path: str,
    pid_path: str,
    cwd: str | None = None,
    wait: float = 5.0,
) -> int:
    """Run ``sh SCRIPT`` in a new session with output to ``log_path``; return its pid.

    The pid is also the process group and session id, so :func:`stop_group`
    reaches every child. The environment belongs *inside* the script (sshd
    drops variables sent over the connection).
    """
    pid_q, log_q, script_q = quote_path(pid_path), quote_path(log_path), quote_path(script)
    cd = f"cd {quote_path(cwd)} && " if cwd else ""
    inner = f'echo $$ > {pid_q}.tmp && mv {pid_q}.tmp {pid_q} && exec sh {script_q}'
    ticks = max(1, int(wait / 0.02))
    cmd = (
        f"{cd}rm -f {pid_q}; "
        f"setsid sh -c {_sq(inner)} > {log_q} 2>&1 < /dev/null & "
        f"i=0; while [ ! -s {pid_q} ] && [ $i -lt {ticks} ]; do sleep 0.02; i=$((i+1)); done; "
        f"cat {pid_q}"
    )
    res = target.run(["sh", "-c", cmd], timeout=wait + 15)
    text = res.stdout.strip()
    if not res.ok or not text.isdigit():
        raise TargetError(
            f"could not start {script}: {res.stderr.strip() or 'no pid file written'}",
            kind="other",
            host=target.name,
        )
    return int(text)


_STOP_SCRIPT = r"""
import json, os, signal, sys, time
pg, grace, poll = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
def members():
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if f[0] not in ("Z", "X") and pg in (int(f[2]), int(f[3])):
            out.append(int(d))
    return sorted(out)
def send(sig, pids):
    try:
        os.killpg(pg, sig)
    except OSError:
        pass
    for p in pids:
        try:
            os.kill(p, sig)
        except OSError:
            pass
# the recorded identity (BOOT:START, BOOT:- or "absent" for a record without one):
# checked here, just before any signal, so a pid that now belongs to another process
# (the server ended, the pid was reused) is never signalled
expect = sys.argv[4] if len(sys.argv) > 4 else ""
if expect:
    try:
        with open("/proc/%d/stat" % pg) as fh:
            f = fh.read().rsplit(")", 1)
        comm = f[0].split("(", 1)[1]
        f = f[1].split()
        leader = (f[0], int(f[19]))
    except (OSError, IndexError, ValueError):
        leader = None
    verdict = None
    if leader is not None and leader[0] not in ("Z", "X"):
        if expect == "absent":
            verdict = "unverified"
        else:
            boot, _, start = expect.rpartition(":")
            with open("/proc/sys/kernel/random/boot_id") as fh:
                now_boot = fh.read().strip()
            if boot != now_boot or start == "-" or int(start) != leader[1]:
                verdict = "foreign"
    if verdict is not None:
        try:
            with open("/proc/%d/cmdline" % pg, "rb") as fh:
                cmd = fh.read(4096).replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            cmd = ""
        print(json.dumps({"found": 0, "killed": False, "remaining": [], "seconds": 0.0,
                          "occupant": {"verdict": verdict, "comm": comm, "cmdline": cmd}}))
        sys.exit(0)
t0 = time.monotonic()
m = members()
found, killed = len(m), False
if m:
    send(signal.SIGTERM, m)
    while m and time.monotonic() - t0 < grace:
        time.sleep(poll)
        m = members()
    if m:
        killed = True
        send(signal.SIGKILL, m)
        end = time.monotonic() + 5
        while m and time.monotonic() < end:
            time.sleep(poll)
            m = members()
print(json.dumps({"found": found, "killed": killed, "remaining": m,
                  "seconds": time.monotonic() - t0}))
"""


#: ``stop_group(verify=...)`` for a record that carries no identity
UNVERIFIABLE = "absent"


def stop_group(
    target: Target, pgid: int, *, grace: float = 10.0, poll: float = 0.05,
    clock: Callable[[], float] | None = None,
    python: str = "python3", verify: ProcIdentity | str | None = None,
) -> StopResult:
    """TERM the process group, KILL what is left after ``grace`` seconds, verify.

    Also catches processes that left the group but stayed in the session. Runs as
    one small Python program on the host (one SSH round trip instead of one per
    poll); without a usable Python there, falls back to polling from here.

    ``verify``: the identity the leader ``pgid`` must have (:data:`UNVERIFIABLE`: a
    record without one, so a live leader is refused). Checked on the host just before
    the first signal; a live leader that is another process is not signalled, and the
    result names it (:attr:`StopResult.occupant`). A leader that has ended leaves its
    group's survivors to stop: its pid cannot be reused while they hold the group id.
    """
    import json

    now = clock or time.monotonic
    t0 = now()
    expect = verify.token() if isinstance(verify, ProcIdentity) else (verify or "")
    try:
        res = target.run([python, "-c", _STOP_SCRIPT, str(int(pgid)), f"{grace:g}", f"{poll:g}",
                          *([expect] if expect else [])], timeout=grace + 30)
        if res.ok:
            data = json.loads(res.stdout.strip().splitlines()[-1])
            occ = data.get("occupant")
            occupant = None if occ is None else Occupant(
                int(pgid), str(occ["comm"]), str(occ["cmdline"]),
                foreign=occ["verdict"] == "foreign")
            return StopResult(pgid=pgid, found=int(data["found"]),
                              killed=bool(data["killed"]),
                              remaining=tuple(int(p) for p in data["remaining"]),
                              seconds=now() - t0, occupant=occupant)
    except (TargetError, ValueError, IndexError, KeyError):
        pass
    if expect:
        occupant = verify_pid(target, pgid, verify if isinstance(verify, ProcIdentity) else None)
        if occupant is not None:
            return StopResult(pgid=pgid, found=0, killed=False, remaining=(),
                              seconds=now() - t0, occupant=occupant)
    return _stop_group_polling(target, pgid, grace=grace, poll=max(poll, 0.1), now=now)


def _stop_group_polling(
    target: Target, pgid: int, *, grace: float, poll: float, now: Callable[[], float]
) -> StopResult:
    t0 = now()
    members = group_members(target, pgid)
    if not members:
        return StopResult(pgid=pgid, found=0, killed=False, remaining=(), seconds=now() - t0)
    found = len(members)
    _signal_pids(target, pgid, members, "TERM")
    deadline = t0 + grace
    while members and now() < deadline:
        time.sleep(poll)
        members = group_members(target, pgid)
    killed = False
    if members:
        killed = True
        _signal_pids(target, pgid, members, "KILL")
        kill_deadline = now() + 5.0
        while members and now() < kill_deadline:
            time.sleep(poll)
            members = group_members(target, pgid)
    return StopResult(pgid=pgid, found=found, killed=killed, remaining=tuple(members),
                      seconds=now() - t0)


def _signal_pids(target: Target, pgid: int, pids: Iterable[int], sig: str) -> None:
    listed = " ".join(str(int(p)) for p in pids)
    target.run(
        ["sh", "-c", f"kill -{sig} -- -{int(pgid)} 2>/dev/null; kill -{sig} {listed} 2>/dev/null;"
         " true"],
        timeout=15,
    )


def read_from(target: Target, path: str, offset: int, limit: int = 1 << 20) -> bytes:
    """Bytes of a (growing) file from ``offset``; b"" when nothing new."""
    return target.read_from(path, offset, limit)


def http_status(
    target: Target, port: int, path: str = "/health", *, timeout: float = 2.0,
    address: str = "127.0.0.1",
) -> int | None:
    """HTTP status of ``GET path`` on ``address:port`` *as seen from the host*,
    or None when nothing answers. Over SSH this is a direct-tcpip channel, so
    the server's port need not be reachable from here."""
    try:
        sock = target.open_tcp(port, address, timeout)
    except (OSError, EOFError):
        return None
    try:
        request = f"GET {path} HTTP/1.0\r\nHost: {address}:{port}\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode())
        buf = b""
        deadline = time.monotonic() + timeout
        while b"\r\n" not in buf and len(buf) < 4096 and time.monotonic() < deadline:
            piece = sock.recv(4096)
            if not piece:
                break
            buf += piece
        parts = buf.split(b" ", 2)
        if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit():
            return int(parts[1])
        return None
    except (OSError, EOFError):
        return None
    finally:
        with suppress(Exception):  # closing a dead channel must not mask the result
            sock.close()
