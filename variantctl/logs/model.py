"""The signature catalog as frozen data: signatures, phases and the compiled matchers.

Built by :mod:`variantctl.config.signatures` from YAML (shipped in
``variantctl/logs/signatures/`` plus user directories); nothing here reads files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

KINDS = ("failed", "hang", "warning", "ok")

#: verdict kinds a Result can have (``unknown`` is never a signature's kind)
VERDICT_KINDS = ("ok", "failed", "hang", "warning", "unknown")


def compile_pattern(source: str) -> re.Pattern[str]:
    """Compile a catalog regex: case-insensitive, and a literal space matches any run of
    whitespace so a sentence re-joined from a hard wrap (or with doubled spaces) still matches.
    """
    return re.compile(_spaces(source), re.IGNORECASE)


def _spaces(source: str) -> str:
    # Replace unescaped literal spaces outside character classes by \s+ (cheap scanner).
    out: list[str] = []
    in_class = False
    escaped = False
    for ch in source:
        if escaped:
            out.append(ch)
            escaped = False
            continue
        if ch == "\\":
            out.append(ch)
            escaped = True
            continue
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        if ch == " " and not in_class:
            if out and out[-1] == r"\s*":
                continue
            out.append(r"\s*")
            continue
        out.append(ch)
    return "".join(out)


@dataclass(frozen=True)
class Context:
    """Multi-line condition: within ``window`` lines up to and including the match,
    every ``all`` pattern occurs and no ``none`` pattern does."""

    window: int
    all: tuple[re.Pattern[str], ...] = ()
    none: tuple[re.Pattern[str], ...] = ()


@dataclass(frozen=True)
class Signature:
    """One known way a vLLM start ends (or a warning worth showing)."""

    id: str
    title: str
    kind: str
    keywords: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    message: str
    remediation: str
    priority: int = 50
    #: version range it was written for, e.g. ``>=0.6.2,<0.10`` (informational; vendor
    #: builds mix eras, so a version outside the range never hides a match)
    versions: str = "*"
    context: Context | None = None
    #: a generic wrapper (``EngineDeadError``…): never wins over a specific cause and
    #: is not decided on sight while streaming (the cause may still be printed)
    generic: bool = False
    #: a failure that can only happen after ``Application startup complete.`` and ends the
    #: server (uvicorn binds its socket after the application's startup): it wins over ready
    ends_server: bool = False
    #: functions that raise only this signature's error: a traceback cut off inside one of
    #: them (its exception line missing) is this failure
    frames: tuple[str, ...] = ()
    #: for hang signatures: the phase a stall in which is named by this signature
    phase: str | None = None
    source: str = "<builtin>"
    #: real lines the patterns were checked against when the catalog loaded
    examples: tuple[str, ...] = ()
    #: the remediation on a host without GPUs (hints name only what the host has: no
    #: NCCL advice for a CPU server); empty: :attr:`remediation` serves every host
    remediation_no_gpu: str = ""


@dataclass(frozen=True)
class Phase:
    """A startup phase; seeing one of ``start`` enters it, one of ``end`` leaves it for
    the next phase in catalog order."""

    id: str
    title: str
    keywords: tuple[str, ...]
    start: tuple[re.Pattern[str], ...]
    end: tuple[re.Pattern[str], ...] = ()
    end_keywords: tuple[str, ...] = ()
    #: lines by which the phase's own progress says its work finished (the last graph
    #: capture bar at 100 %, the KV cache sized) while the next phase's marker may not be
    #: in an excerpt: a file that ends after one is incomplete, not a hang
    done: tuple[re.Pattern[str], ...] = ()
    done_keywords: tuple[str, ...] = ()
    #: signature id of the hang verdict for a stall in this phase
    hang: str | None = None
    #: seeing this phase is positive evidence that the API server is up (the route list,
    #: ``Uvicorn running on``, serving statistics, HTTP access lines): a log that stops
    #: here is ``startup-ok`` even when the readiness line itself is not in the excerpt
    serving: bool = False
    #: reaching this phase means the engine finished its start-up (the model is loaded, the
    #: KV cache allocated, graphs captured): an *excerpt* that ends here with no error is
    #: weak evidence of a good start, not a hang (see docs/classify.md)
    engine_ready: bool = False
    #: function names whose traceback frames place a failure in this phase (a worker's
    #: traceback pasted without the lines that marked the phase)
    frames: tuple[str, ...] = ()


@dataclass(frozen=True)
class Catalog:
    """Signatures and phases, with the keyword index used to skip uninteresting lines."""

    version: str
    signatures: tuple[Signature, ...]
    phases: tuple[Phase, ...]
    sources: tuple[str, ...] = ()
    _by_id: dict[str, Signature] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_id.update({s.id: s for s in self.signatures})

    def get(self, sig_id: str) -> Signature | None:
        """The signature called ``sig_id``, or None."""
        return self._by_id.get(sig_id)

    def all_keywords(self) -> Sequence[str]:
        """Every lowercase keyword a line must contain to be worth a closer look."""
        words: set[str] = set()
        for s in self.signatures:
            words.update(s.keywords)
        for p in self.phases:
            words.update(p.keywords)
            words.update(p.end_keywords)
            words.update(p.done_keywords)
        return sorted(words)
