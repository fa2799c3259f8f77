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
from variantctl.runs.record import ServerRecord
from variantctl.targets.base import Target
from variantctl.targets.process import read_from


def latest_log(target: Target, host: Host, variant: str) -> tuple[str, ServerRecord | None]:
    """(log path, record or None): the running server's log (and its record), else the
    newest log of the variant."""
    layout = layout_for(target, host)
    rec = load_record(target, layout, variant)
    if rec is not None:
        return rec.log, rec
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


#: bytes read per request (printing) and per step back from the end (``--lines``)
BLOCK = 1 << 20


def _tail(target: Target, path: str, lines: int) -> tuple[int, bytes]:
    """(the file's size when read, its last ``lines`` lines), reading blocks backwards
    from the end until enough line ends are in hand."""
    st = target.stat(path)
    size = st.size if st is not None else 0
    if lines == 0:
        return size, b""
    pos, data = size, b""
    # one line end more than asked: the line before the first one kept must be whole
    while pos > 0 and data.count(b"\n", 0, max(0, len(data) - 1)) < lines:
        step = min(BLOCK, pos)
        pos -= step
        data = _read_exact(target, path, pos, step) + data
    parts = data.splitlines(keepends=True)
    return size, b"".join(parts[-lines:])


def _read_exact(target: Target, path: str, offset: int, n: int) -> bytes:
    """``n`` bytes from ``offset`` (fewer only at the end of the file): a read may
    return less than asked."""
    out = b""
    while len(out) < n:
        chunk = read_from(target, path, offset + len(out), n - len(out))
        if not chunk:
            break
        out += chunk
    return out


@dataclass(frozen=True)
class LogText:
    """Log text to print, control characters already made visible."""

    text: str


@dataclass(frozen=True)
class Reconnecting:
    """The connection dropped while following; reconnecting (said on stderr)."""

    message: str


@dataclass(frozen=True)
class Truncated:
    """The followed log shrank under us (copytruncate rotation): following goes on from
    its start (said on stderr)."""

    message: str


def log_stream(
    target: Target, host: Host, variant: str, *, follow: bool = False,
    lines: int | None = None, poll: float = 0.25,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[LogText | Reconnecting | Truncated]:
    """The variant's latest log as it is printed: the whole file (or its last ``lines``),
    then, with ``follow``, what the server appends until it is gone. The log is the
    server's text, so hostile: escape sequences and other control characters are made
    visible (``\\x1b``), and UTF-8 split across two reads is decoded whole."""
    from variantctl.launch.launcher import launcher_for

    path, record = latest_log(target, host, variant)
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
    if lines is not None:
        # the last lines only: read back from the end, a block at a time, never the
        # whole (possibly huge) log
        offset, data = _tail(target, path, lines)
        yield from text(data, final=not follow)
    else:
        # the whole log, a block at a time: printed as it is read, never held whole
        offset = 0
        while chunk := read_from(target, path, offset, BLOCK):
            offset += len(chunk)
            yield from text(chunk)
        if not follow:
            yield from text(b"", final=True)
    if not follow:
        return
    idle_checks = 0
    while True:
        try:
            chunk = read_from(target, path, offset)
            if chunk:
                offset += len(chunk)
                yield from text(chunk)
                continue
            idle_checks += 1
            st = target.stat(path)
            if st is not None and st.size < offset:
                # copytruncate: the file was copied away and cut to 0; what the server
                # writes now starts at 0 (an offset past the end would read nothing)
                yield from text(b"", final=True)
                decoder.reset()
                yield Truncated(f"{path} was truncated (log rotation?): following it "
                                f"from its start ({st.size} bytes now, {offset} read)")
                offset = 0
                continue
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
