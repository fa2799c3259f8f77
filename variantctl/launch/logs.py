"""A server log on a host, whole or followed (``variantctl logs``): values the CLI
prints (this module prints nothing)."""

from __future__ import annotations

import codecs
import posixpath
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from variantctl.errors import NotFoundError, TargetError
from variantctl.hostmodel import Host
from variantctl.launch.servers import layout_for, load_record
from variantctl.launch.watch import RECONNECT_FOR, reconnect
from variantctl.logs.bounded import visible_lines
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


@dataclass(frozen=True)
class LogText:
    """Log text to print, control characters already made visible."""

    text: str


@dataclass(frozen=True)
class Reconnecting:
    """The connection dropped while following; reconnecting (said on stderr)."""

    message: str


def log_stream(
    target: Target, host: Host, variant: str, *, follow: bool = False,
    lines: int | None = None, poll: float = 0.25,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[LogText | Reconnecting]:
    """The variant's latest log as it is printed: the whole file (or its last ``lines``),
    then, with ``follow``, what the server appends until it is gone. The log is the
    server's text, so hostile: escape sequences and other control characters are made
    visible (``\\x1b``), and UTF-8 split across two reads is decoded whole."""
    from variantctl.launch.launcher import launcher_for

    path, pid = latest_log(target, host, variant)
    record = load_record(target, layout_for(target, host), variant) if pid is not None else None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def text(data: bytes, *, final: bool = False) -> Iterator[LogText]:
        out = visible_lines(decoder.decode(data, final))
        if out:
            yield LogText(out)

    def gone() -> bool:
        # the server (the session leader, or the SLURM job) is gone: stragglers of its
        # group do not count
        return record is None or not launcher_for(host).probe(target, record,
                                                             health=False).alive
    data = target.read_bytes(path)
    offset = len(data)
    if lines is not None:
        parts = data.splitlines(keepends=True)
        data = b"".join(parts[-lines:]) if lines else b""
    if not follow:
        yield from text(data, final=True)
        return
    yield from text(data)
    idle_checks = 0
    while True:
        try:
            chunk = read_from(target, path, offset)
            if chunk:
                offset += len(chunk)
                yield from text(chunk)
                continue
            idle_checks += 1
            if idle_checks % 4 == 0 and gone():
                # what it wrote while dying
                yield from text(read_from(target, path, offset), final=True)
                return
        except TargetError as exc:
            # a dropped SSH connection: the server keeps running; re-open and go on
            # from the same offset, as `watch` does
            if exc.kind != "unreachable":
                raise
            yield Reconnecting(f"connection lost ({exc.message}); reconnecting")
            reconnect(target, exc, time.monotonic, sleep, RECONNECT_FOR, None,
                      time.monotonic())
            continue
        sleep(poll)
