"""Whole-file classification: one keyword scan over the text, the engine on the hits.

Only lines holding a catalog keyword (plus the lines an open traceback or a
wrapped sentence needs) are normalised and matched; everything else is skipped
at regex-engine speed, which is what keeps this above 50 MB/s.
"""

from __future__ import annotations

from variantctl.logs.engine import Engine, scan_regex
from variantctl.logs.model import Catalog
from variantctl.logs.normalize import normalize
from variantctl.logs.result import Evidence, Result

_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(65, 91)})
#: characters per scan chunk (cut at a line end)
_CHUNK = 1 << 20
#: how far into a log the first timestamp is looked for
_FIRST_STAMP_LINES = 200


def classify_text(text: str, catalog: Catalog, *, exited: bool | None = None) -> Result:
    """Classify a complete startup log.

    ``exited`` says whether the server process is known to have exited (True),
    known to still run (False), or unknown (None, a file from elsewhere): a log
    that stops inside a phase is a hang unless the process exited.
    """
    rx = scan_regex(catalog)
    n = len(text)
    cursor = {"start": 0, "lineno": 1}

    def history(count: int) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        end = cursor["start"] - 1
        lineno = cursor["lineno"]
        while count > 0 and end >= 0:
            start = text.rfind("\n", 0, end) + 1
            lineno -= 1
            out.append((lineno, text[start:end]))
            end = start - 1
            count -= 1
        out.reverse()
        return out

    engine = Engine(catalog, history)
    _first_timestamp(engine, text)
    line_start = 0
    lineno = 1
    base = 0
    while base < n:
        # Line-aligned chunks: a slice without non-ASCII characters is a compact ASCII
        # string, so lowercasing and scanning it run at full speed even when a banner
        # elsewhere in the log made the whole text a wide string.
        cend = text.find("\n", base + _CHUNK)
        cend = n if cend < 0 else cend + 1
        chunk = text[base:cend]
        low = chunk.lower()
        if len(low) != len(chunk):  # non-ASCII case folding changed lengths
            low = chunk.translate(_ASCII_LOWER)
        pos = 0
        next_base = cend
        while True:
            m = rx.search(low, pos)
            if m is None:
                break
            hit = base + m.start()
            start = text.rfind("\n", 0, hit) + 1
            lineno += text.count("\n", line_start, start)
            line_start = start
            end = text.find("\n", hit)
            if end < 0:
                end = n
            cursor["start"], cursor["lineno"] = start, lineno
            engine.process(lineno, text[start:end])
            rx = engine.scan_pattern  # narrower once the server is seen serving
            while engine.wants_next and end < n:
                start = end + 1
                end = text.find("\n", start)
                if end < 0:
                    end = n
                lineno += 1
                line_start = start
                cursor["start"], cursor["lineno"] = start, lineno
                engine.process(lineno, text[start:end])
            if end + 1 >= cend:
                next_base = max(cend, end + 1)
                break
            pos = end + 1 - base
        base = next_base
    total = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    engine.lines = total
    engine.last_line = _last_line(text, total)
    return engine.result(end={True: "exited", False: "running", None: "eof"}[exited])


def _first_timestamp(engine: Engine, text: str) -> None:
    start = 0
    for _ in range(_FIRST_STAMP_LINES):
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if engine.note_first_timestamp(normalize(line)):
            return
        if end < 0:
            return
        start = end + 1


def _last_line(text: str, total: int) -> Evidence | None:
    """The last non-blank line (without copying the text)."""
    end = len(text) - 1 if text.endswith("\n") else len(text)
    lineno = total
    while end >= 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        if line.strip():
            return Evidence(lineno, line)
        if start == 0:
            return None
        end = start - 1
        lineno -= 1
    return None
