"""The archived run: a typed ``run.json`` and the content key that identifies it.

Pure: no file access (``runs/store.py`` reads and writes). A run's id is
``<key>-<seq>``: ``key`` is the launch key (``runs/identity.py``: a short hash of
everything that decides how the run ends — the resolved variant's launch view, the
host, the patch state of every root and, for measured runs, the benchmark
parameters), so "has this exact configuration run before, and how did it end?" is
one lookup; ``seq`` counts the runs of that key.

``from_json`` validates what it reads: a damaged ``run.json`` is a
:class:`RunFileError` naming the file and the field, never a KeyError later.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeAlias, cast, overload

from variantctl.jsonfields import Fields, StoredFileError, kind_of
from variantctl.jsontypes import Json, JsonMapping, JsonObject
from variantctl.logs.expect import Mismatch
from variantctl.logs.result import Evidence, Result
from variantctl.logs.verdict import VerdictKind
from variantctl.variants.rules import Finding

#: schema of run.json; 2 added the content key, typed verdict/expect and benchmarks;
#: 3 lists the profile files too (``profiles``). Schema 2 records still read: the
#: store lists their profile files once (:meth:`RunStore.read`).
RUN_SCHEMA = 3
#: the schemas :meth:`RunRecord.from_json` reads
READABLE_SCHEMAS = (2, 3)
#: ``<key>-<seq>``
RUN_ID = re.compile(r"(?P<key>[0-9a-f]{10})-(?P<seq>[1-9][0-9]*)")
#: what a file a record lists may be called: one plain name in the run directory
ARTIFACT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}")

#: a run.json that cannot be read as a run record (exit 2, the file and field named);
#: one class for every stored file
RunFileError = StoredFileError

#: a run's timings: ISO times (``started_at``), seconds and counts, None when not reached
Timing: TypeAlias = str | float | int | None
#: one patchset of a run: ``{"roots": {root: state}, "files": [...], "required": ...,
#: "error": ..., "fingerprint": ...}`` (``PatchState.to_json``; older records lack keys)
PatchEntry: TypeAlias = JsonMapping


#: what json.loads makes of a JSON scalar: kept as it is
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _freeze(value: object) -> Json:
    """An immutable copy of a JSON value (objects become read-only mappings, lists
    tuples); anything else becomes the string the store would write for it
    (``json.dumps(default=str)``)."""
    if type(value) in _SCALARS:  # most values: before the (slower) Mapping ABC check
        return cast(Json, value)
    if isinstance(value, Mapping):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def freeze_object(value: Mapping[str, object]) -> JsonMapping:
    """An immutable copy of a JSON object."""
    return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})


def _freeze_opt(value: Mapping[str, object] | None) -> JsonMapping | None:
    return None if value is None else freeze_object(value)


@overload
def thaw(value: JsonMapping) -> JsonObject: ...
@overload
def thaw(value: Json) -> Json: ...
def thaw(value: Json) -> Json:
    """JSON-ready copy of a frozen value (an object thaws to a ``dict``)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def as_object(value: Json) -> JsonMapping:
    """``value`` when it is a JSON object, else an empty one: a reader's view of an
    optional object field (``facts["config"]``, ``variant["origins"]``)."""
    return value if isinstance(value, Mapping) else MappingProxyType({})


def _thaw_opt(value: JsonMapping | None) -> JsonObject | None:
    return None if value is None else thaw(value)


@dataclass(frozen=True)
class RunVerdict:
    """How the start ended (``started`` while nobody watched it): the launch's one verdict
    value, built once (:meth:`of`) from the classifier's :class:`~variantctl.logs.result.Result`
    and carried to ``run.json``, the printed verdict, ``--json`` and the exit code."""

    kind: VerdictKind = VerdictKind.STARTED
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
    classifier: JsonMapping | None = None

    def __post_init__(self) -> None:
        # a plain string ("ready") is accepted and becomes the member; anything else is
        # not a verdict (ValueError; a stored file's is checked where it is read)
        object.__setattr__(self, "kind", VerdictKind(self.kind))

    @classmethod
    def of(cls, kind: VerdictKind, result: Result | None, *, waiting: str | None = None,
           decisive_line: int | None = None, last_lines: tuple[str, ...] = (),
           lines: int = 0, health: int | None = None) -> RunVerdict:
        """The verdict of a watched start: ``result`` (None: nothing explains it) gives the
        signature, texts, phase, evidence and the stored classifier result; ``waiting``
        (a queued job's reason) is the phase when the server had not begun to run."""
        return cls(
            kind=kind,
            signature=result.signature if result else None,
            title=result.title if result else "",
            message=result.message if result else "",
            remediation=result.remediation if result else "",
            phase=waiting if waiting is not None else (result.phase if result else None),
            evidence=result.evidence if result else (),
            decisive_line=decisive_line,
            last_lines=last_lines,
            lines=lines,
            health=health,
            classifier=freeze_object(result.to_json()) if result else None,
        )

    @property
    def ended_badly(self) -> bool:
        return self.kind.ended_badly

    def to_json(self) -> JsonObject:
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
    variant: JsonMapping
    #: the host as it decides a run (``identity.host_identity``): name, ssh, python, ...
    host: JsonMapping
    script: str
    #: the server's record on the host (``ServerRecord.to_dict``), as it was then
    server: JsonMapping | None
    #: patchset -> its state (:data:`PatchEntry`)
    patches: Mapping[str, PatchEntry]
    verdict: RunVerdict
    #: what the log told (``Facts.to_json``) and what the launcher knows beside it
    facts: JsonMapping
    #: what the log contradicts of the variant's expectations; empty when all held
    expect: tuple[Mismatch, ...] = ()
    expect_ok: bool = True
    timings: Mapping[str, Timing] = field(default_factory=lambda: MappingProxyType({}))
    #: what the pre-flight rules said of the variant on its host
    preflight: tuple[Finding, ...] = ()
    stopped: JsonMapping | None = None
    log_file: str | None = None
    #: benchmark result files in the run directory (``bench-<stamp>.json``)
    benchmarks: tuple[str, ...] = ()
    #: profile files in the run directory (``profile-<stamp>.json``, ``bench --profile``)
    profiles: tuple[str, ...] = ()
    created_at: str = ""
    schema: int = RUN_SCHEMA

    @property
    def seq(self) -> int:
        m = RUN_ID.fullmatch(self.run_id)
        return int(m.group("seq")) if m else 0

    def to_json(self) -> JsonObject:
        return {
            "schema": self.schema,
            "run_id": self.run_id,
            "key": self.key,
            "variant_name": self.variant_name,
            "created_at": self.created_at,
            "variant": thaw(self.variant),
            "host": thaw(self.host),
            "script": self.script,
            "server": _thaw_opt(self.server),
            "patches": {k: thaw(v) for k, v in self.patches.items()},
            "preflight": [f.to_dict() for f in self.preflight],
            "verdict": self.verdict.to_json(),
            "facts": thaw(self.facts),
            "expect": [thaw(_freeze(m.to_json())) for m in self.expect],
            "expect_ok": self.expect_ok,
            "timings": dict(self.timings),
            "stopped": _thaw_opt(self.stopped),
            "log_file": self.log_file,
            "benchmarks": list(self.benchmarks),
            "profiles": list(self.profiles),
        }

    @classmethod
    def from_json(cls, data: object, *, source: str) -> RunRecord:
        """Validate and build; :class:`RunFileError` names ``source`` and the bad field.
        A schema 2 record has no ``profiles`` (the store lists them)."""
        r = Fields(data, source)
        schema = r.integer("schema")
        if schema not in READABLE_SCHEMAS:
            raise RunFileError(
                f"{source}: run.json schema {schema} is not {RUN_SCHEMA}",
                hint="it was written by another variantctl version",
            )
        run_id = r.text("run_id")
        if RUN_ID.fullmatch(run_id) is None:
            raise RunFileError(f"{source}: run_id {run_id!r} is not <key>-<seq>")
        v = r.obj("verdict")
        verdict = RunVerdict(
            kind=_verdict_kind(v),
            signature=v.opt_text("signature"),
            title=v.text("title", ""),
            message=v.text("message", ""),
            remediation=v.text("remediation", ""),
            phase=v.opt_text("phase"),
            evidence=tuple(Evidence(e.integer("line"), e.text("text"))
                           for e in v.objs("evidence")),
            decisive_line=v.opt_integer("decisive_line"),
            last_lines=v.texts("last_lines"),
            lines=v.integer("lines", 0),
            health=v.opt_integer("health"),
            classifier=_freeze_opt(v.opt_mapping("classifier")),
        )
        return cls(
            run_id=run_id,
            key=r.text("key"),
            variant_name=r.text("variant_name"),
            created_at=r.text("created_at", ""),
            variant=freeze_object(_settings(r.obj("variant"), ("args", "env", "expect"))),
            host=freeze_object(_settings(r.obj("host"), ("env",))),
            script=r.text("script", ""),
            server=_freeze_opt(r.opt_mapping("server")),
            patches=_patches(r),
            preflight=tuple(_finding(f) for f in r.objs("preflight")),
            verdict=verdict,
            facts=freeze_object(r.mapping("facts")),
            expect=tuple(_mismatch(m) for m in r.objs("expect")),
            expect_ok=r.flag("expect_ok"),
            timings=_timings(r),
            stopped=_freeze_opt(r.opt_mapping("stopped")),
            log_file=r.opt_text("log_file"),
            benchmarks=artifact_names(r, "benchmarks"),
            profiles=artifact_names(r, "profiles") if schema >= 3 else (),
            schema=schema,
        )


def _verdict_kind(v: Fields) -> VerdictKind:
    """``verdict.verdict``: one of the launch verdicts (an error naming the field if not)."""
    text = v.text("verdict")
    try:
        return VerdictKind(text)
    except ValueError:
        raise v.error("verdict", f"{text!r} is not a verdict (one of "
                      f"{', '.join(k.value for k in VerdictKind)})") from None
def _settings(section: Fields, keyed: tuple[str, ...]) -> Mapping[str, Any]:
    """The variant's (or host's) sections that compare, bisect, trend and report read as
    settings, checked here once: each an object of name -> a scalar or a list of scalars
    (``variant.args`` named when it is a list, not a TypeError later)."""
    for key in keyed:
        values = section.opt_mapping(key) or {}
        for name, value in values.items():
            items = value if isinstance(value, list) else [value]
            if not all(v is None or isinstance(v, (str, int, float, bool)) for v in items):
                raise section.error(f"{key}.{name}", "should be a scalar or a list of "
                                    "scalars")
    return section.data


def _patches(r: Fields) -> Mapping[str, PatchEntry]:
    """Each patchset's state: an object (``patches.<name>`` named when it is not)."""
    p = r.obj("patches")
    return MappingProxyType({str(name): freeze_object(p.mapping(name)) for name in p.data})


def _timings(r: Fields) -> Mapping[str, Timing]:
    """The timings: each a string, a number or null (``timings.<key>`` named when not)."""
    out: dict[str, Timing] = {}
    for k, v in r.mapping("timings").items():
        if v is not None and not isinstance(v, (str, int, float)):
            raise r.error(f"timings.{k}", f"should be a time, a number or null, "
                          f"got {kind_of(v)}")
        out[str(k)] = v
    return MappingProxyType(out)


def _mismatch(m: Fields) -> Mismatch:
    """A stored mismatch; its values frozen (a list reads as a tuple) as every stored
    JSON value of a record is."""
    return Mismatch(key=m.text("key", ""), expected=_freeze(m.data.get("expected")),
                    actual=_freeze(m.data.get("actual")), source=m.text("source", ""),
                    reason=m.text("reason", "differs"))


def _finding(f: Fields) -> Finding:
    return Finding(severity=f.text("severity", ""), rule=f.text("rule", ""),
                   variant=f.text("variant", ""), signature=f.opt_text("signature"),
                   message=f.text("message", ""))


def artifact_names(r: Fields, key: str) -> tuple[str, ...]:
    """File names a record lists: each one plain name in the run directory (an absolute
    path, ``../x`` or ``a/b`` is an error naming the field, never a file read)."""
    names = r.texts(key)
    for i, name in enumerate(names):
        if ARTIFACT_NAME.fullmatch(name) is None or name in (".", ".."):
            raise r.error(f"{key}[{i}]", f"{name!r} is not a file name in the run directory")
    return names
