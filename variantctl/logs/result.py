"""Verdicts as values, and their documented JSON shape (schema ``variantctl.classify/1``).

See docs/classify.md for the schema; keys are only ever added, never renamed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonObject
from variantctl.logs.facts import Facts

SCHEMA = "variantctl.classify/1"


@dataclass(frozen=True)
class Evidence:
    """One log line: its 1-based number and original text (without the newline)."""

    line: int
    text: str

    def to_json(self) -> JsonObject:
        return {"line": self.line, "text": self.text}


@dataclass(frozen=True)
class Match:
    """A signature that matched, with its filled-in message and the lines that show it."""

    signature: str
    title: str
    kind: str
    message: str
    remediation: str
    evidence: tuple[Evidence, ...]
    captures: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    priority: int = 50
    generic: bool = False
    #: the phase the startup was in when it matched
    phase: str = "not-started"
    #: logger level of the matched line (None: printed by a raise, not logged)
    level: str | None = None

    @property
    def line(self) -> int:
        return self.evidence[0].line if self.evidence else 0

    def to_json(self) -> JsonObject:
        return {
            "signature": self.signature,
            "title": self.title,
            "kind": self.kind,
            "message": self.message,
            "remediation": self.remediation,
            "phase": self.phase,
            "captures": dict(self.captures),
            "evidence": [e.to_json() for e in self.evidence],
        }


@dataclass(frozen=True)
class Result:
    """The outcome of a startup log (whole file, or a stream so far)."""

    kind: str
    signature: str | None
    title: str
    message: str
    remediation: str
    evidence: tuple[Evidence, ...]
    phase: str
    facts: Facts
    warnings: tuple[Match, ...] = ()
    #: other failures seen (a second cause, a generic wrapper, an error recovered from)
    also: tuple[Match, ...] = ()
    captures: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    lines: int = 0
    catalog_version: str = ""
    #: how the verdict was reached when it rests on indirect evidence (readiness not seen,
    #: an error after ready, a cut traceback, a possible hang in an excerpt); "" otherwise
    note: str = ""

    @property
    def decided(self) -> bool:
        return self.kind != "unknown"

    def to_json(self) -> JsonObject:
        """The documented, stable JSON object for one log."""
        return {
            "schema": SCHEMA,
            "kind": self.kind,
            "signature": self.signature,
            "title": self.title,
            "message": self.message,
            "remediation": self.remediation,
            "phase": self.phase,
            "captures": dict(self.captures),
            "evidence": [e.to_json() for e in self.evidence],
            "warnings": [w.to_json() for w in self.warnings],
            "also": [a.to_json() for a in self.also],
            "facts": self.facts.to_json(),
            "lines": self.lines,
            "catalog_version": self.catalog_version,
            "note": self.note,
        }


#: a verdict returned while streaming has the same shape as a final result
Verdict = Result


#: exit code per verdict kind; with several logs the most severe (first in this order) wins
KIND_EXIT = {
    "failed": ExitCode.FAILED,
    "hang": ExitCode.HANG,
    "unknown": ExitCode.UNKNOWN,
    "warning": ExitCode.OK,
    "ok": ExitCode.OK,
}
_SEVERITY = ("failed", "hang", "unknown", "warning", "ok")


def classify_exit_code(results: Sequence[tuple[Result, bool]]) -> int:
    """``classify``'s exit code over ``(result, expectations mismatched)`` per log: the
    most severe verdict's; expectation mismatches count as a failure."""
    if not results:
        return ExitCode.OK
    worst = min(results, key=lambda r: _SEVERITY.index(r[0].kind))[0].kind
    code = int(KIND_EXIT[worst])
    if code == ExitCode.OK and any(mismatched for _, mismatched in results):
        return int(ExitCode.FAILED)
    return code
