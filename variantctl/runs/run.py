"""The archived run: a typed ``run.json`` and the content key that identifies it.

Pure: no file access (``runs/store.py`` reads and writes). A run's id is
``<key>-<seq>``: ``key`` is a short hash of everything that decides how the run
ends — the resolved variant's launch view, the host, the patch state of every
root (file sha256s included) and, for measured runs, the benchmark parameters —
so "has this exact configuration run before, and how did it end?" is one lookup;
``seq`` counts the runs of that key.

``from_json`` validates what it reads: a damaged ``run.json`` is a
:class:`RunFileError` naming the file and the field, never a KeyError later.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from variantctl.errors import VariantctlError

#: schema of run.json; 2 added the content key, typed verdict/expect and benchmarks
RUN_SCHEMA = 2
KEY_LENGTH = 10
#: ``<key>-<seq>``
RUN_ID = re.compile(r"(?P<key>[0-9a-f]{10})-(?P<seq>[1-9][0-9]*)")


class RunFileError(VariantctlError):
    """A run.json that cannot be read as a run record (exit 2, the file named)."""


def run_key(
    variant_view: Mapping[str, Any],
    host: Mapping[str, Any],
    patches: Mapping[str, Any],
    bench: Mapping[str, Any] | None = None,
) -> str:
    """The content key of a run: sha256 of the canonical JSON of what decides it. Where
    the host was defined (``origin``, a file:line) is recorded but decides nothing."""
    host = {k: v for k, v in host.items() if k != "origin"}
    content = {"variant": variant_view, "host": host, "patches": patches, "bench": bench}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """JSON-ready copy of a frozen value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class Evidence:
    line: int
    text: str


@dataclass(frozen=True)
class RunVerdict:
    """How the start ended (``started`` while nobody watched it)."""

    kind: str = "started"
    signature: str | None = None
    title: str = ""
    message: str = ""
    remediation: str = ""
    phase: str | None = None
    evidence: tuple[Evidence, ...] = ()
    decisive_line: int | None = None
    last_lines: tuple[str, ...] = ()
    lines: int = 0
    health: int | None = None
    #: the classifier's whole result (``variantctl.classify/1``), when there was one
    classifier: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.kind,
            "signature": self.signature,
            "title": self.title,
            "message": self.message,
            "remediation": self.remediation,
            "phase": self.phase,
            "evidence": [{"line": e.line, "text": e.text} for e in self.evidence],
            "decisive_line": self.decisive_line,
            "last_lines": list(self.last_lines),
            "lines": self.lines,
            "health": self.health,
            **({"classifier": thaw(self.classifier)} if self.classifier is not None else {}),
        }


@dataclass(frozen=True)
class RunRecord:
    """Everything ``runs/<date>-<variant>-<id>/run.json`` holds."""

    run_id: str
    key: str
    variant_name: str
    #: the resolved variant (``ResolvedVariant.to_dict``), origins of derived values included
    variant: Mapping[str, Any]
    host: Mapping[str, Any]
    script: str
    server: Mapping[str, Any] | None
    #: patchset -> {"roots": {root: state}, "files": [...]}
    patches: Mapping[str, Any]
    verdict: RunVerdict
    facts: Mapping[str, Any]
    #: expectation mismatches (``logs.expect.Mismatch.to_json``); empty when all held
    expect: tuple[Mapping[str, Any], ...] = ()
    expect_ok: bool = True
    timings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    preflight: tuple[Mapping[str, Any], ...] = ()
    stopped: Mapping[str, Any] | None = None
    log_file: str | None = None
    #: benchmark result files in the run directory (``bench-<stamp>.json``)
    benchmarks: tuple[str, ...] = ()
    created_at: str = ""
    schema: int = RUN_SCHEMA

    @property
    def seq(self) -> int:
        m = RUN_ID.fullmatch(self.run_id)
        return int(m.group("seq")) if m else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "run_id": self.run_id,
            "key": self.key,
            "variant_name": self.variant_name,
            "created_at": self.created_at,
            "variant": thaw(self.variant),
            "host": thaw(self.host),
            "script": self.script,
            "server": thaw(self.server),
            "patches": thaw(self.patches),
            "preflight": thaw(self.preflight),
            "verdict": self.verdict.to_json(),
            "facts": thaw(self.facts),
            "expect": thaw(self.expect),
            "expect_ok": self.expect_ok,
            "timings": thaw(self.timings),
            "stopped": thaw(self.stopped),
            "log_file": self.log_file,
            "benchmarks": list(self.benchmarks),
        }

    @classmethod
    def from_json(cls, data: Any, *, source: str) -> RunRecord:
        """Validate and build; :class:`RunFileError` names ``source`` and the bad field."""
        r = _Reader(data, source)
        schema = r.integer("schema")
        if schema != RUN_SCHEMA:
            raise RunFileError(
                f"{source}: run.json schema {schema} is not {RUN_SCHEMA}",
                hint="it was written by another variantctl version",
            )
        run_id = r.text("run_id")
        if RUN_ID.fullmatch(run_id) is None:
            raise RunFileError(f"{source}: run_id {run_id!r} is not <key>-<seq>")
        v = _Reader(r.mapping("verdict"), f"{source}: verdict")
        verdict = RunVerdict(
            kind=v.text("verdict"),
            signature=v.opt_text("signature"),
            title=v.text("title", ""),
            message=v.text("message", ""),
            remediation=v.text("remediation", ""),
            phase=v.opt_text("phase"),
            evidence=tuple(
                Evidence(_Reader(e, f"{source}: verdict.evidence").integer("line"),
                         _Reader(e, f"{source}: verdict.evidence").text("text"))
                for e in v.list_of_mappings("evidence")
            ),
            decisive_line=v.opt_integer("decisive_line"),
            last_lines=tuple(str(x) for x in v.items("last_lines")),
            lines=v.integer("lines", 0),
            health=v.opt_integer("health"),
            classifier=_freeze(v.opt_mapping("classifier")),
        )
        return cls(
            run_id=run_id,
            key=r.text("key"),
            variant_name=r.text("variant_name"),
            created_at=r.text("created_at", ""),
            variant=_freeze(r.mapping("variant")),
            host=_freeze(r.mapping("host")),
            script=r.text("script", ""),
            server=_freeze(r.opt_mapping("server")),
            patches=_freeze(r.mapping("patches")),
            preflight=tuple(_freeze(p) for p in r.list_of_mappings("preflight")),
            verdict=verdict,
            facts=_freeze(r.mapping("facts")),
            expect=tuple(_freeze(m) for m in r.list_of_mappings("expect")),
            expect_ok=r.flag("expect_ok"),
            timings=_freeze(r.mapping("timings")),
            stopped=_freeze(r.opt_mapping("stopped")),
            log_file=r.opt_text("log_file"),
            benchmarks=tuple(str(b) for b in r.items("benchmarks")),
            schema=schema,
        )


_MISSING = object()


class _Reader:
    """Typed field access with errors that name the file and the field."""

    def __init__(self, data: Any, source: str):
        if not isinstance(data, Mapping):
            raise RunFileError(f"{source}: expected a JSON object, got {type(data).__name__}")
        self.data = data
        self.source = source

    def _get(self, key: str, default: Any) -> Any:
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise RunFileError(f"{self.source}: missing field {key!r}")
            return default
        return value

    def _bad(self, key: str, what: str, value: Any) -> RunFileError:
        return RunFileError(f"{self.source}: field {key!r} should be {what}, "
                            f"got {type(value).__name__}")

    def text(self, key: str, default: Any = _MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "a string", value)
        return value

    def opt_text(self, key: str) -> str | None:
        value = self._get(key, None)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, "a string or null", value)
        return value

    def integer(self, key: str, default: Any = _MISSING) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer", value)
        return value

    def opt_integer(self, key: str) -> int | None:
        value = self._get(key, None)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer or null", value)
        return value

    def flag(self, key: str) -> bool:
        value = self._get(key, _MISSING)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false", value)
        return value

    def mapping(self, key: str) -> Mapping[str, Any]:
        value = self._get(key, _MISSING)
        if not isinstance(value, Mapping):
            raise self._bad(key, "an object", value)
        return value

    def opt_mapping(self, key: str) -> Mapping[str, Any] | None:
        value = self._get(key, None)
        if value is not None and not isinstance(value, Mapping):
            raise self._bad(key, "an object or null", value)
        return value

    def items(self, key: str) -> Sequence[Any]:
        value = self._get(key, [])
        if not isinstance(value, list):
            raise self._bad(key, "a list", value)
        return value

    def list_of_mappings(self, key: str) -> Sequence[Mapping[str, Any]]:
        items = self.items(key)
        for item in items:
            if not isinstance(item, Mapping):
                raise self._bad(key, "a list of objects", item)
        return items
