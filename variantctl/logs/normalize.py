"""Turn one raw log line into the text signatures match against.

Real logs carry ANSI colours (real escapes or the literal text ``^[[0;36m``),
carriage-return progress bars, docker compose / CI timestamp prefixes and vLLM's
process prefixes (``(VllmWorker rank=1 pid=…)``, ``[rank0]:``). All of that is
removed; the logger header (``INFO 10-20 04:12:31 file.py:237]``) is kept, and
:func:`split_header` separates it when the message alone is needed.

Lines without any of the markers take a fast path (one ``str`` scan per marker).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]|(?:\x1b|\^\[)\][^\x07]*\x07|\x1b[()][A-Z0-9]")
# a colour code whose ESC byte was lost in a copy-paste: a bare ``[36m`` / ``[0;0m``
_BARE_SGR = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m")
# ANSI colours rendered to HTML by a terminal's copy tool: ``<font color="#2AA1B3"><b>``
_HTML_TAG = re.compile(r"</?(?:font|b|span|i|u|strong|em)\b[^<>]*>", re.I)
# Ray's log de-duplication suffix, on any line (code lines and carets too)
_RAY_REPEAT = re.compile(r"\s*\[repeated \d+x across cluster\]")
# a rich console's fixed-width record: level column, then right-aligned ``file.py:123``
# (the time column, or its blank continuation, then the level padded to 9 columns; the
# text after it keeps its own indentation, which tells a traceback's code lines apart)
_RICH = re.compile(
    r"^(?:\[\d{2}/\d{2}/\d{2,4} \d{2}:\d{2}:\d{2}\] | {18,24})"
    r"(?:DEBUG {4}|INFO {5}|WARNING {2}|ERROR {4}|CRITICAL )"
)
_RICH_SOURCE = re.compile(r"\s{3,}[\w.\-]+\.py:\d+\s*$")
# Leading prefixes, stripped repeatedly because they nest
# (``svc-1  | 2024-05-01T10:00:00Z (VllmWorker rank=1 pid=7) INFO …``).
_PREFIX = re.compile(
    r"""^(?:
        \d{4}-\d{2}-\d{2}[T\ ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\ ?   # CI
      | \[\d{4}-\d{2}-\d{2}[T\ ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]\ ?
      | [A-Za-z0-9][\w.\-]*\s+\|\ ?                                                      # compose
      | \((?:[A-Za-z_][\w\-]*)(?:\ (?:rank=)?[\w=]+)?\ pid=\d+(?:,\ ip=[\w.:\-]+)?\)\ ?   # vLLM/ray
      | \[rank\d+\]:\ ?                                                                  # torchrun
      | [A-Z][a-z]{2}\ [\ \d]\d\ \d{2}:\d{2}:\d{2}\ \S+\ [\w.\-/]+(?:\[\d+\])?:\ ?  # journald
      | \[pod/[^\]\s]+\]\ ?                                                              # kubectl
      | \|?\ ?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\ \|\ (?:stdout|stderr)\ \|\ ?  # FastChat
      | \d{1,2}:\d{2}(?:AM|PM)\ [A-Z]{3}\ [\w.\-]+\([^)\s]*\):\ (?:stdout|stderr)\ ?  # LocalAI
      | [>`]\ ?                                                                        # markdown
    )""",
    re.VERBOSE,
)
# Old-era and bracketed logger headers; group ``ts`` is ``MM-DD HH:MM:SS``.
_HEADER = re.compile(
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?P<ts>\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d+)?\s+"
    r"(?:\[[\w.\-]+:\d+\]|[\w.\-]+:\d+\])\s?"
)
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})")
_MARKERS = ("\x1b", "^[", "\r", "|", "(", "[", "\t", "<", ">", "`", "  ")


def normalize(raw: str) -> str:
    """The matchable text of ``raw`` (one physical line, without its newline)."""
    line = raw
    if not any(m in line for m in _MARKERS) and not line[:1].isdigit():
        return line.rstrip()
    if "\x1b" in line or "^[" in line:
        line = _ANSI.sub("", line)
    if "[" in line:
        if "m" in line:
            line = _BARE_SGR.sub("", line)
        if "repeated" in line:
            line = _RAY_REPEAT.sub("", line)
    if "<" in line and ">" in line:
        line = _HTML_TAG.sub("", line)
    if "  " in line:
        m = _RICH.match(line)
        if m is not None:
            line = line[m.end():]
            line = _RICH_SOURCE.sub("", line)
    if "\r" in line:
        # a progress bar redrawn with CR: keep every distinct non-empty state, in order
        parts: list[str] = []
        for seg in line.split("\r"):
            seg = seg.rstrip()
            if seg.strip() and (not parts or parts[-1] != seg):
                parts.append(seg)
        line = " ".join(parts)
    while True:
        m = _PREFIX.match(line)
        if m is None or m.end() == 0:
            break
        line = line[m.end():]
    # leading whitespace is kept: it tells a traceback's code lines from its last line
    return line.replace("\t", "    ").rstrip()


def split_header(line: str) -> tuple[str | None, str | None, str]:
    """``(level, "MM-DD HH:MM:SS", message)`` of a normalised line; the header may be
    anywhere in the line (a tqdm bar fused in front of it)."""
    m = _HEADER.search(line)
    if m is None:
        return None, None, line
    return m.group("level"), m.group("ts"), line[m.end():]


def has_header(line: str) -> bool:
    """True when the line carries a vLLM logger header (a new record, not a continuation)."""
    return _HEADER.search(line) is not None


def timestamp_of(raw: str) -> tuple[str, float] | None:
    """``(clock, seconds)`` of the line's logger timestamp (clock ``"logger"``) or, failing
    that, a leading CI/ISO timestamp (clock ``"iso"``); None when there is neither.

    Logger timestamps have no year; a fixed leap year is assumed, so differences
    within one start are right (across New Year they are not). Only values of the
    same clock may be subtracted.
    """
    m = _HEADER.search(raw)
    if m is not None:
        try:
            dt = datetime.strptime("2000-" + m.group("ts"), "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
        return "logger", dt.replace(tzinfo=timezone.utc).timestamp()
    iso = _ISO.search(raw[:48])
    if iso is not None:
        try:
            y, mo, d, h, mi, s = (int(g) for g in iso.groups())
            dt = datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc)
        except ValueError:
            return None
        return "iso", dt.timestamp()
    return None
