"""``hosts check``: can we reach the host, which Python runs there, is a GPU monitor present."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from variantctl.errors import TargetError
from variantctl.hostmodel import Host
from variantctl.jsontypes import JsonObject
from variantctl.targets.base import Target

_PROBE = "import sys; print(sys.version.split()[0]); print(sys.executable)"


@dataclass(frozen=True, kw_only=True)
class HostCheck:
    host: str
    reachable: bool
    seconds: float
    python: str | None = None
    python_version: str | None = None
    gpu_monitor: str | None = None
    gpu_monitor_found: bool | None = None
    workdir_ok: bool | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.reachable and not self.problems

    def to_json(self) -> JsonObject:
        return {"host": self.host, "ok": self.ok, "reachable": self.reachable,
                "seconds": round(self.seconds, 3), "python": self.python,
                "python_version": self.python_version, "gpu_monitor": self.gpu_monitor,
                "gpu_monitor_found": self.gpu_monitor_found, "workdir_ok": self.workdir_ok,
                "problems": list(self.problems)}


def check_host(target: Target, host: Host, *, connected_in: float = 0.0) -> HostCheck:
    t0 = time.monotonic()
    problems: list[str] = []
    version = executable = None
    res = target.run([host.python, "-c", _PROBE], env=dict(host.env), timeout=30) \
        if _exists(target, host.python) else None
    if res is not None and res.ok:
        lines = res.stdout.split()
        version = lines[0] if lines else None
        executable = lines[1] if len(lines) > 1 else None
    else:
        why = res.stderr.strip().splitlines()[-1] if res is not None and res.stderr.strip() \
            else "not found"
        problems.append(f"python {host.python}: {why}")
    found = None
    if host.gpu_monitor:
        found = _exists(target, host.gpu_monitor.split()[0])
        if not found:
            problems.append(f"GPU monitor {host.gpu_monitor} not found")
    wd_ok = None
    try:
        # files travel over SFTP on an SSH host: an sshd without it is unusable
        target.stat("/")
    except TargetError as exc:
        if exc.kind != "no-sftp":
            raise
        problems.append(exc.message)
    else:
        wd = target.run(["sh", "-c", 'mkdir -p "$1" && test -w "$1"', "sh",
                         _expand(target, host)], timeout=15)
        wd_ok = wd.ok
        if not wd.ok:
            problems.append(f"work directory {host.workdir} is not writable")
    return HostCheck(host=host.name, reachable=True,
                     seconds=connected_in + time.monotonic() - t0, python=executable,
                     python_version=version, gpu_monitor=host.gpu_monitor,
                     gpu_monitor_found=found, workdir_ok=wd_ok, problems=tuple(problems))


def _expand(target: Target, host: Host) -> str:
    return target.expand_user(host.workdir)


def _exists(target: Target, program: str) -> bool:
    from variantctl.shellquote import quote_path

    try:
        res = target.run(["sh", "-c", f"command -v {quote_path(program)} >/dev/null"],
                         timeout=15)
    except TargetError:
        return False
    return res.ok


def unreachable(host: Host, error: TargetError, seconds: float) -> HostCheck:
    return HostCheck(host=host.name, reachable=False, seconds=seconds,
                     problems=(error.message,))
