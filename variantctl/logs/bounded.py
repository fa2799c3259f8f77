"""Logs are untrusted input: read them in bounded pieces, with a cap on line length.

A log can be endless (``/dev/zero``, a FIFO), one line can be gigabytes (a binary file,
a tensor dump), and a line can hold terminal escape sequences. This module bounds what
the classifier ever holds and matches against; :func:`visible` makes log text safe to
print on a terminal. Pure: the caller reads the bytes and hands them over in chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

#: characters of one line kept for matching; the rest of a longer line is dropped and
#: replaced by a marker (the longest real vLLM line, the engine config line, is ~10 kB)
MAX_LINE = 64 * 1024
#: bytes of a log read at most; the rest is not read (a startup log's decisive lines are
#: at its start: a server that ran for days appends request lines, not startup lines)
MAX_BYTES = 256 * 1024 * 1024
CUT_MARKER = " …[{n} bytes of this line cut]"


@dataclass
class ReadStats:
    """What the bounds removed (reported to the user)."""

    lines_cut: int = 0
    bytes_dropped: int = 0
    truncated: bool = False
    first_cut_line: int | None = None
    _lineno: int = field(default=1, repr=False)


def bounded_lines(chunks: Iterable[bytes], stats: ReadStats, *, max_line: int = MAX_LINE,
                  max_bytes: int = MAX_BYTES) -> Iterator[bytes]:
    """The bytes of ``chunks`` with every line longer than ``max_line`` cut to ``max_line``
    bytes plus a marker, stopping after ``max_bytes`` bytes of input (``stats.truncated``).
    Memory stays bounded by one chunk plus ``max_line``."""
    carry = b""  # the start of a line that continues in the next chunk (at most max_line)
    carry_dropped = 0  # bytes of that line already dropped
    total = 0
    for chunk in chunks:
        if total >= max_bytes:
            stats.truncated = True
            break
        if total + len(chunk) > max_bytes:
            chunk = chunk[: max_bytes - total]
            stats.truncated = True
        total += len(chunk)
        nl = chunk.rfind(b"\n")
        if nl < 0:
            # no line end in this chunk: it all belongs to the open line
            room = max_line - len(carry)
            if room > 0:
                carry += chunk[:room]
            carry_dropped += max(0, len(chunk) - max(room, 0))
            continue
        head, tail = chunk[: nl + 1], chunk[nl + 1 :]
        parts = head.split(b"\n")
        parts[0] = carry + parts[0]
        lengths = [len(p) for p in parts]
        if carry_dropped or max(lengths) > max_line:
            out = []
            for i, p in enumerate(parts[:-1]):
                dropped = carry_dropped if i == 0 else 0
                if len(p) > max_line or dropped:
                    dropped += max(0, len(p) - max_line)
                    p = p[:max_line] + CUT_MARKER.format(n=dropped).encode()
                    _note_cut(stats, dropped, i)
                out.append(p)
            yield b"\n".join(out) + b"\n"
        else:
            yield b"\n".join(parts)
        stats._lineno += len(parts) - 1
        carry = tail[:max_line]
        carry_dropped = max(0, len(tail) - max_line)
        if stats.truncated:
            break
    if carry or carry_dropped:
        if carry_dropped:
            carry += CUT_MARKER.format(n=carry_dropped).encode()
            _note_cut(stats, carry_dropped, 0)
        yield carry


def _note_cut(stats: ReadStats, dropped: int, offset: int) -> None:
    stats.lines_cut += 1
    stats.bytes_dropped += dropped
    if stats.first_cut_line is None:
        stats.first_cut_line = stats._lineno + offset


_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F,
                                        *range(0x80, 0xA0))}
_CONTROL[0x0A] = "\\n"


def visible(text: str) -> str:
    """``text`` with every control character (ESC, BEL, CR, C1 codes …, not tab) shown as
    ``\\xNN``, so log text printed to a terminal cannot move the cursor, clear the
    screen or set the window title."""
    if text.isprintable():
        return text
    return text.translate(_CONTROL)


#: the same, keeping line ends: for printing a log as lines (``variantctl logs``)
_CONTROL_KEEP_LINES = {c: v for c, v in _CONTROL.items() if c != 0x0A}


def visible_lines(text: str) -> str:
    """:func:`visible`, but newlines stay newlines (a whole log, printed line by line)."""
    if text.isprintable():
        return text
    return text.translate(_CONTROL_KEEP_LINES)


#: the most characters of one piece of untrusted text (a log line, a server's error
#: body, a name or description from a file) one terminal line shows; the full text is
#: in ``--json`` or the file it came from
MAX_SHOWN = 2000
#: what replaces the rest of a clipped text
CLIP_MARKER = " …[{n} characters cut]"


def clipped(text: str, limit: int = MAX_SHOWN) -> str:
    """:func:`visible`, cut to ``limit`` characters of the original with a marker saying
    how many were cut: the one form untrusted text takes on a terminal line (bounded, so
    a 1 MB line is a short one; escaped, so ESC, CR and C1 codes cannot act). Linear in
    ``limit``, not in ``text``."""
    if len(text) <= limit:
        return visible(text)
    return visible(text[:limit]) + CLIP_MARKER.format(n=len(text) - limit)


def clipped_lines(text: str, limit: int = MAX_SHOWN) -> str:
    """:func:`clipped` line by line (newlines kept): a multi-line message."""
    return "\n".join(clipped(line, limit) for line in text.split("\n"))
