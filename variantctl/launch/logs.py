"""Print or follow a server log on a host (``variantctl logs``)."""

from __future__ import annotations

import posixpath
import time

from variantctl.env import Environment
from variantctl.errors import NotFoundError, TargetError
from variantctl.hostmodel import Host
from variantctl.launch.servers import layout_for, load_record
from variantctl.launch.watch import RECONNECT_FOR, reconnect
from variantctl.targets.base import Target
from variantctl.targets.process import read_from


def latest_log(target: Target, host: Host, variant: str) -> tuple[str, int | None]:
    """(log path, pid or None): the running server's log, else the newest log of the variant."""
    layout = layout_for(target, host)
    rec = load_record(target, layout, variant)
    if rec is not None:
        return rec.log, rec.pid
    try:
        names = [n for n in target.listdir(layout.logs) if layout.is_log_of(variant, n)]
    except TargetError as exc:
        if exc.kind != "not-found":
            raise
        names = []
    if not names:
        raise NotFoundError(
            f"no log of variant {variant!r} on host {host.name}",
            hint=f"nothing was launched there yet (looked in {layout.logs})",
        )
    return posixpath.join(layout.logs, sorted(names)[-1]), None


def show_log(
    env: Environment, target: Target, host: Host, variant: str, *, follow: bool = False,
    lines: int | None = None, poll: float = 0.25,
) -> None:
    from variantctl.launch.launcher import launcher_for

    path, pid = latest_log(target, host, variant)
    record = load_record(target, layout_for(target, host), variant) if pid is not None else None

    def gone() -> bool:
        # the server (the session leader, or the SLURM job) is gone: stragglers of its
        # group do not count
        return record is None or not launcher_for(host).probe(target, record,
                                                             health=False).alive
    out = env.stdout.file
    data = target.read_bytes(path)
    offset = len(data)
    if lines is not None:
        parts = data.splitlines(keepends=True)
        data = b"".join(parts[-lines:]) if lines else b""
    _write(out, data)
    if not follow:
        return
    idle_checks = 0
    while True:
        try:
            chunk = read_from(target, path, offset)
            if chunk:
                offset += len(chunk)
                _write(out, chunk)
                continue
            idle_checks += 1
            if idle_checks % 4 == 0 and gone():
                tail = read_from(target, path, offset)  # what it wrote while dying
                _write(out, tail)
                return
        except TargetError as exc:
            # a dropped SSH connection: the server keeps running; re-open and go on
            # from the same offset, as `watch` does
            if exc.kind != "unreachable":
                raise
            env.stderr.print(f"connection lost ({exc.message}); reconnecting",
                             markup=False, highlight=False)
            reconnect(target, exc, time.monotonic, time.sleep, RECONNECT_FOR, None,
                      time.monotonic())
            continue
        time.sleep(poll)


def _write(out: object, data: bytes) -> None:
    if not data:
        return
    text = data.decode("utf-8", "replace")
    out.write(text)  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]
