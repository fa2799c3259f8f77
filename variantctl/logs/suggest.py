"""A new user's signature in one step: turn the decisive line of an ``unknown`` or
generic-failure log into a signature (``variantctl classify LOG --suggest``).

Pure: the caller passes the log text and the result; the CLI loads the suggestion back
through the catalog loader and checks it against the log and the shipped fixtures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

from variantctl.logs.normalize import normalize, split_header
from variantctl.logs.result import Result

#: verdicts a suggestion is offered for: nothing recognised, or only a generic wrapper
GENERIC = ("startup-error", "engine-startup-failed")
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?P<cls>[A-Za-z_]\w*(?:Error|Exception))\b:?")
_ERRORISH = re.compile(r"error|exception|failed|fatal|cannot|unable|not supported|invalid", re.I)
# variable parts of a message, most specific first; each becomes a generic regex
_VARIABLE = re.compile(
    r"""(?P<quoted>'[^'\n]*'|"[^"\n]*"|`[^`\n]*`)
      | (?P<path>(?:[A-Za-z]:)?(?:/|\\)[^\s,;:'"()]+)
      | (?P<url>https?://\S+)
      | (?P<hex>\b0x[0-9a-fA-F]+\b)
      | (?P<number>(?<![\w.])-?\d+(?:\.\d+)*(?:[eE][-+]?\d+)?(?![\w.]))
    """,
    re.VERBOSE,
)
_GENERAL = {
    "quoted": r"\S+",
    "path": r"\S+",
    "url": r"\S+",
    "hex": r"0x[0-9a-f]+",
    "number": r"-?[\d.]+",
}


class SignatureEntry(TypedDict):
    """A proposed ``signatures:`` entry, as it is written to YAML."""

    id: str
    title: str
    kind: str
    priority: int
    keywords: list[str]
    patterns: list[str]
    message: str
    remediation: str
    examples: list[str]


@dataclass(frozen=True)
class Suggestion:
    """A signature proposal (the dict is the YAML entry), the line it came from and the
    startup phase the log was in."""

    entry: SignatureEntry
    line: int
    text: str
    phase: str


def wants_suggestion(result: Result) -> bool:
    """True for an ``unknown`` verdict or a generic failure (nothing specific recognised)."""
    return result.kind == "unknown" or result.signature in GENERIC


def decisive_line(text: str, result: Result) -> tuple[int, str] | None:
    """The line a signature should match: the exception line of an unrecognised error, else
    the last line that reads like an error (an exception class, ``failed``, ``cannot`` …)."""
    lines = text.splitlines()
    if result.signature == "startup-error" and result.evidence:
        ev = result.evidence[-1]
        return ev.line, lines[ev.line - 1] if ev.line <= len(lines) else ev.text
    generic_lines = {e.line for e in result.evidence} if result.signature else set()
    for i in range(len(lines) - 1, -1, -1):
        msg = _message(lines[i])
        if not msg or (i + 1) in generic_lines:
            continue
        if _EXCEPTION_LINE.match(msg) and not _is_wrapper(msg):
            return i + 1, lines[i]
    for i in range(len(lines) - 1, -1, -1):
        msg = _message(lines[i])
        if msg and _ERRORISH.search(msg) and not _is_wrapper(msg) and (i + 1) not in generic_lines:
            return i + 1, lines[i]
    return None


def _message(raw: str) -> str:
    norm = normalize(raw)
    msg = split_header(norm)[2]
    if msg[:1].isspace():
        return ""  # an indented traceback line: source code or a frame, not a message
    return msg.strip()


def _is_wrapper(msg: str) -> bool:
    low = msg.lower()
    return any(w in low for w in ("see root cause above", "enginedeaderror", "see stack trace",
                                  "failed core proc", "engine core initialization failed"))


def generalise(message: str, *, quoted: bool = True) -> tuple[str, list[str]]:
    """``(pattern, literal runs)``: the message as a regex whose variable parts (paths,
    URLs, numbers and, with ``quoted``, quoted names) are generic, and the literal text
    between them."""
    out: list[str] = []
    literals: list[str] = []
    pos = 0
    for m in _VARIABLE.finditer(message):
        if m.lastgroup == "quoted" and not quoted:
            continue
        lit = message[pos:m.start()]
        out.append(re.escape(lit).replace("\\ ", " "))
        literals.append(lit)
        out.append(_GENERAL[m.lastgroup or "quoted"])
        pos = m.end()
    tail = message[pos:]
    out.append(re.escape(tail).replace("\\ ", " "))
    literals.append(tail)
    pattern = "".join(out).strip()
    return pattern, [lit.strip(" ,.:;()[]") for lit in literals if lit.strip(" ,.:;()[]")]


def keyword_of(literals: list[str]) -> str:
    """The most telling literal run, lowercased: the longest of at least two words (or the
    longest at all), trimmed to 60 characters at a word boundary."""
    runs = sorted(literals, key=lambda s: (len(s.split()) >= 2, len(s)), reverse=True)
    best = runs[0].lower() if runs else ""
    if len(best) > 60:
        best = best[:60].rsplit(" ", 1)[0]
    return best.strip()


def suggest(text: str, result: Result, *, quoted: bool = True) -> Suggestion | None:
    """A signature entry for the decisive line of ``text`` (None: no line to build it on);
    ``quoted=False`` keeps quoted names literal (a narrower pattern)."""
    found = decisive_line(text, result)
    if found is None:
        return None
    lineno, raw = found
    message = _message(raw)
    # the exception class is kept literally: it is the most stable part of the line
    pattern, literals = generalise(message, quoted=quoted)
    keyword = keyword_of(literals)
    if not keyword:
        return None
    cls = _EXCEPTION_LINE.match(message)
    words = re.findall(r"[a-z0-9]+", keyword)[:4]
    head = [cls.group("cls").lower()] if cls else []
    sig_id = "-".join([*head, *[w for w in words if w not in head]])[:48].strip("-") or "custom"
    entry: SignatureEntry = {
        "id": sig_id,
        "title": message[:80],
        "kind": "failed",
        "priority": 60,
        "keywords": [keyword],
        "patterns": [pattern],
        "message": message[:200],
        "remediation": "TODO: what to change when this happens (flag, package, hardware).",
        "examples": [message],
    }
    return Suggestion(entry=entry, line=lineno, text=raw, phase=result.phase)
