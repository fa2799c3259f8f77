"""JSON from untrusted files, read with a nesting limit.

The stdlib decoder recurses once per ``[`` or ``{``: ``[[[[…`` nested some thousands deep
ends in ``RecursionError`` (an internal error, exit 70) instead of the one-line refusal
every bad input gets. :func:`check_depth` finds the first bracket past :data:`MAX_DEPTH`
in one linear pass (strings skipped by one regular expression, so a bracket inside a
string does not count) and raises the decoder's own :class:`json.JSONDecodeError`, so a
caller that already turns a decode error into ``FILE:LINE: not JSON: …`` (exit 2) reports
this one the same way, at the right line.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: the deepest nesting read (a ShareGPT entry is 3 levels, a chat message 3, a trace line 2)
MAX_DEPTH = 64

# a JSON string (the unrolled loop: no backtracking), or one bracket
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def check_depth(text: str, start: int = 0, end: int | None = None,
                limit: int = MAX_DEPTH) -> None:
    """Raise :class:`json.JSONDecodeError` at the first bracket nested deeper than
    ``limit`` in ``text[start:end]``."""
    stop = len(text) if end is None else end
    opened = text.count("[", start, stop) + text.count("{", start, stop)
    if opened <= limit:  # cannot be deeper than the brackets it holds
        return
    depth = 0
    for m in _TOKEN.finditer(text, start, stop):
        ch = text[m.start()]
        if ch in "[{":
            depth += 1
            if depth > limit:
                raise json.JSONDecodeError(f"nested deeper than {limit} levels", text,
                                           m.start())
        elif ch in "]}":
            depth = max(depth - 1, 0)


def loads(text: str, limit: int = MAX_DEPTH) -> Any:
    """``json.loads`` of untrusted text, refusing nesting deeper than ``limit``."""
    check_depth(text, limit=limit)
    return json.loads(text)
