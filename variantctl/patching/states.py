"""Result values of state detection and planning (no libcst needed to use them).

State of one operation in one file: ``pristine`` (its ``from`` is there),
``applied`` (its ``to`` is there) or ``drifted`` (neither, or not the expected
number of matches). State of a file: ``pristine``/``applied`` when every
operation agrees, ``partial`` for a mix of the two, ``drifted`` when any
operation drifted, ``error`` when the file cannot be analysed (not UTF-8,
syntax error) and ``missing`` when a root does not hold the module.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from variantctl.jsontypes import JsonMapping, JsonObject

PRISTINE = "pristine"
APPLIED = "applied"
PARTIAL = "partial"
DRIFTED = "drifted"
MISSING = "missing"
ERROR = "error"


@dataclass(frozen=True)
class Found:
    """An expression found where an operation looks (its code and 1-based line)."""

    code: str
    line: int | None = None
    #: ``from``, ``to`` or ``other``
    kind: str = "other"

    def to_json(self) -> JsonObject:
        return {"code": self.code, "line": self.line, "kind": self.kind}


@dataclass(frozen=True)
class OpState:
    """The state of one operation in one file."""

    op_id: str
    kind: str
    description: str
    state: str
    from_: str | None
    to: str | None
    found: tuple[Found, ...] = ()
    #: why the state is drifted (empty otherwise)
    reason: str = ""

    @property
    def shown(self) -> str:
        """What a person should see: ``from`` when pristine, ``to`` when applied."""
        if self.kind == "instrument" and self.state in (PRISTINE, APPLIED):
            # the profile points this file has, with their lines
            return ", ".join(f"{f.code}:{f.line}" if f.line else f.code for f in self.found)
        if self.kind == "replace-function" and self.state == APPLIED:
            # the new function's first line, not its whole text
            return (self.to or "").strip().splitlines()[0] if self.to else ""
        if self.state == PRISTINE:
            return self.from_ or ""
        if self.state == APPLIED:
            return self.to or ""
        return self.reason

    @property
    def line(self) -> int | None:
        return self.found[0].line if self.found else None

    def to_json(self) -> JsonObject:
        return {
            "id": self.op_id,
            "op": self.kind,
            "description": self.description,
            "state": self.state,
            "from": self.from_,
            "to": self.to,
            "found": [f.to_json() for f in self.found],
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: JsonMapping) -> OpState:
        """The state a cache entry stored (``targets/statecache.py``); ``KeyError`` or
        ``TypeError`` for an entry of another shape (the cache then parses the file again)."""
        found = data["found"]
        if not isinstance(found, list) or not all(isinstance(f, dict) for f in found):
            raise TypeError("found: expected a list of objects")
        return cls(
            op_id=_text(data, "id"),
            kind=_text(data, "op"),
            description=_text(data, "description"),
            state=_text(data, "state"),
            from_=_text_or_none(data, "from"),
            to=_text_or_none(data, "to"),
            found=tuple(Found(_text(f, "code"), _int_or_none(f, "line"), _text(f, "kind"))
                        for f in found),
            reason=_text(data, "reason"),
        )


def _text(data: JsonMapping, key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise TypeError(f"{key}: expected a string")
    return value


def _text_or_none(data: JsonMapping, key: str) -> str | None:
    value = data[key]
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{key}: expected a string or null")
    return value


def _int_or_none(data: JsonMapping, key: str) -> int | None:
    value = data[key]
    if value is not None and type(value) is not int:
        raise TypeError(f"{key}: expected an integer or null")
    return value


def combine(states: Iterable[str]) -> str:
    """The file state from its operations' states."""
    seen = set(states)
    if not seen:
        return PRISTINE
    if DRIFTED in seen or ERROR in seen:
        return DRIFTED if DRIFTED in seen else ERROR
    if seen == {PRISTINE}:
        return PRISTINE
    if seen == {APPLIED}:
        return APPLIED
    return PARTIAL


@dataclass(frozen=True)
class FileAnalysis:
    """What one file's content looks like to a patchset, and what a transform would write."""

    sha256: str
    state: str
    ops: tuple[OpState, ...] = ()
    #: the transformed bytes (None when nothing would change or on error)
    new_data: bytes | None = None
    new_sha256: str | None = None
    #: ids of the operations the transform changed
    changed: tuple[str, ...] = ()
    #: a one-line reason when state is ``error``
    error: str | None = None
    #: line of the error, when known
    error_line: int | None = None

    def op(self, op_id: str) -> OpState:
        for s in self.ops:
            if s.op_id == op_id:
                return s
        raise KeyError(op_id)
