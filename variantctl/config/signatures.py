"""Load the startup-log signature catalog from YAML (shipped files plus user directories).

A catalog file::

    catalog_version: "2026.11.1"      # shipped file only
    phases: [...]                      # shipped file only
    signatures:
      - id: port-in-use
        title: The API server port is already in use
        kind: failed                   # failed | hang | warning | ok
        priority: 70                   # higher wins when several failures match
        versions: "*"                  # informational range, e.g. ">=0.6.2,<0.10"
        keywords: [address already in use, errno 98]
        patterns: ['\\[Errno 98\\][^\\n]*address already in use']
        context: {window: 5, all: [...], none: [...]}   # optional
        message: "..."                 # {name} = a named group of a pattern
        remediation: "..."
        remediation_no_gpu: "..."       # optional: the hint on a host without GPUs
        examples: ["a real line that must match"]

Every problem is reported as ``file:line:column: key.path: message``; examples
are matched at load time, so a catalog whose patterns drifted from their own
examples does not load.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import TypedDict

from variantctl.config.regexsafety import backtracking_risk
from variantctl.config.schema import Bool, Check, Field, Int, ListOf, Str, Struct
from variantctl.config.yamlload import Document, KeyPath, load_yaml_file, load_yaml_text
from variantctl.errors import ConfigError
from variantctl.logs.model import KINDS, Catalog, Context, Phase, Signature, compile_pattern

_ID = r"[a-z0-9][a-z0-9-]*"
_FN = r"[A-Za-z_][A-Za-z0-9_]*"


def _regex_problem(value: str) -> str | None:
    try:
        rx = compile_pattern(value)
    except re.error as exc:
        return f"invalid regular expression: {exc}"
    family = backtracking_risk(rx.pattern)
    if family:
        return (f"regular expression can backtrack catastrophically ({family} in "
                f"{_describe(rx.pattern)}): on a line that almost matches it tries "
                "exponentially many ways and would hang classify; repeat a single item, "
                "close a variable part with a delimiter it cannot match (e.g. "
                "'(?:[^,]+,)+' not '(?:a+b?)+'), or keep alternatives apart")
    return None


def nested_repeat(pattern: str) -> str | None:
    """The pattern (shortened) when it can backtrack catastrophically
    (:func:`variantctl.config.regexsafety.backtracking_risk`); None when it cannot."""
    return _describe(pattern) if backtracking_risk(pattern) else None


def _describe(pattern: str) -> str:
    return pattern if len(pattern) <= 60 else pattern[:57] + "..."


def _keyword_problem(value: str) -> str | None:
    if value != value.lower():
        return f"keyword {value!r} must be lowercase (matching is case-insensitive)"
    if value != value.strip():
        return f"keyword {value!r} must not start or end with whitespace"
    return None


_REGEX = Check(Str(), _regex_problem)
_KEYWORD = Check(Str(), _keyword_problem)

class ContextData(TypedDict):
    """A checked ``context:`` mapping."""

    window: int
    all: tuple[str, ...]
    none: tuple[str, ...]


class _SignatureOptional(TypedDict, total=False):
    context: ContextData
    phase: str


class SignatureData(_SignatureOptional):
    """A checked signature (keys with a default are always there)."""

    id: str
    title: str
    kind: str
    priority: int
    versions: str
    keywords: tuple[str, ...]
    patterns: tuple[str, ...]
    message: str
    remediation: str
    remediation_no_gpu: str
    generic: bool
    ends_server: bool
    frames: tuple[str, ...]
    examples: tuple[str, ...]


class _PhaseOptional(TypedDict, total=False):
    hang: str


class PhaseData(_PhaseOptional):
    """A checked phase (keys with a default are always there)."""

    id: str
    title: str
    keywords: tuple[str, ...]
    start: tuple[str, ...]
    end_keywords: tuple[str, ...]
    end: tuple[str, ...]
    done_keywords: tuple[str, ...]
    done: tuple[str, ...]
    serving: bool
    engine_ready: bool
    frames: tuple[str, ...]


class BuiltinFileData(TypedDict):
    """A checked catalog file shipped in the package."""

    catalog_version: str
    phases: tuple[PhaseData, ...]
    signatures: tuple[SignatureData, ...]


class UserFileData(TypedDict):
    """A checked user signature file."""

    signatures: tuple[SignatureData, ...]


CONTEXT = Struct(
    "context",
    {
        "window": Field(Int(min=1, max=200), required=True),
        "all": Field(ListOf(_REGEX, single=True), default=()),
        "none": Field(ListOf(_REGEX, single=True), default=()),
    },
    shape=ContextData,
)

SIGNATURE = Struct(
    "signature",
    {
        "id": Field(Str(pattern=_ID, what="an id of lowercase letters, digits and -"), True),
        "title": Field(Str(), required=True),
        "kind": Field(Check(Str(), lambda v: None if v in KINDS else
                            f"expected one of {', '.join(KINDS)}, got {v!r}"), required=True),
        "priority": Field(Int(min=0, max=1000), default=50),
        "versions": Field(Str(), default="*"),
        "keywords": Field(ListOf(_KEYWORD, single=True), default=()),
        "patterns": Field(ListOf(_REGEX, single=True), default=()),
        "context": Field(CONTEXT),
        "message": Field(Str(), required=True),
        "remediation": Field(Str(allow_empty=True), default=""),
        "remediation_no_gpu": Field(Str(allow_empty=True), default=""),
        "generic": Field(Bool(), default=False),
        "ends_server": Field(Bool(), default=False),
        "frames": Field(ListOf(Str(pattern=_FN, what="a Python function name"), single=True),
                        default=()),
        "phase": Field(Str(pattern=_ID, what="a phase id")),
        "examples": Field(ListOf(Str(), single=True), default=()),
    },
    shape=SignatureData,
)

PHASE = Struct(
    "phase",
    {
        "id": Field(Str(pattern=_ID, what="an id of lowercase letters, digits and -"), True),
        "title": Field(Str(), required=True),
        "keywords": Field(ListOf(_KEYWORD, single=True, min_len=1), required=True),
        "start": Field(ListOf(_REGEX, single=True, min_len=1), required=True),
        "end_keywords": Field(ListOf(_KEYWORD, single=True), default=()),
        "end": Field(ListOf(_REGEX, single=True), default=()),
        "done_keywords": Field(ListOf(_KEYWORD, single=True), default=()),
        "done": Field(ListOf(_REGEX, single=True), default=()),
        "hang": Field(Str(pattern=_ID, what="a signature id")),
        "serving": Field(Bool(), default=False),
        "engine_ready": Field(Bool(), default=False),
        "frames": Field(ListOf(Str(pattern=_FN, what="a Python function name"), single=True),
                        default=()),
    },
    shape=PhaseData,
)

BUILTIN_FILE = Struct(
    "signature catalog",
    {
        "catalog_version": Field(Str(), required=True),
        "phases": Field(ListOf(PHASE, min_len=1), required=True),
        "signatures": Field(ListOf(SIGNATURE), required=True),
    },
    shape=BuiltinFileData,
)

USER_FILE = Struct(
    "signature file",
    {
        "signatures": Field(ListOf(SIGNATURE), required=True),
    },
    shape=UserFileData,
)


def builtin_files() -> list[tuple[str, str]]:
    """``(display name, text)`` of every catalog file shipped in the package."""
    root = resources.files("variantctl.logs").joinpath("signatures")
    out = []
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            out.append((f"<variantctl>/logs/signatures/{entry.name}", entry.read_text("utf-8")))
    return out


def user_files(dirs: Sequence[Path]) -> list[Path]:
    """The ``*.yaml`` files of user signature directories (a missing directory is an error)."""
    files: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            raise ConfigError("signature directory not found", source=str(d))
        files.extend(sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml")))
    return files


def load_catalog(extra_dirs: Sequence[Path] = ()) -> Catalog:
    """The shipped catalog plus every signature file in ``extra_dirs`` (a user signature
    with the id of a shipped one replaces it)."""
    shipped = builtin_files()
    if not shipped:
        raise ConfigError("no signature catalog shipped with variantctl (broken install?)")
    version = ""
    phases: list[Phase] = []
    sigs: dict[str, Signature] = {}
    for name, text in shipped:
        doc = load_yaml_text(text, name)
        data = BUILTIN_FILE.check(doc.data, (), doc)
        version = data["catalog_version"]
        phases.extend(_phase(p, (("phases", i)), doc) for i, p in enumerate(data["phases"]))
        _add(sigs, data["signatures"], doc, {p.id for p in phases}, replace=False)
    sources = [name for name, _ in shipped]
    phase_ids = {p.id for p in phases}
    for path in user_files(extra_dirs):
        doc = load_yaml_file(path)
        user = USER_FILE.check(doc.data, (), doc)
        _add(sigs, user["signatures"], doc, phase_ids, replace=True)
        sources.append(str(path))
    for p in phases:
        if p.hang and p.hang not in sigs:
            raise ConfigError(f"phase {p.id!r} names unknown hang signature {p.hang!r}",
                              source=shipped[0][0])
    return Catalog(version=version, signatures=tuple(sigs.values()), phases=tuple(phases),
                   sources=tuple(sources))


def signatures_from_text(text: str, source: str, catalog: Catalog) -> Catalog:
    """``catalog`` plus the signatures of one user signature file given as text (the same
    checks as a file in a signature directory: a problem raises ConfigError)."""
    doc = load_yaml_text(text, source)
    data = USER_FILE.check(doc.data, (), doc)
    sigs = {s.id: s for s in catalog.signatures}
    _add(sigs, data["signatures"], doc, {p.id for p in catalog.phases}, replace=True)
    return Catalog(version=catalog.version, signatures=tuple(sigs.values()),
                   phases=catalog.phases, sources=(*catalog.sources, source))


def _phase(data: PhaseData, path: KeyPath, doc: Document) -> Phase:
    return Phase(
        id=data["id"],
        title=data["title"],
        keywords=tuple(data["keywords"]),
        start=tuple(compile_pattern(p) for p in data["start"]),
        end=tuple(compile_pattern(p) for p in data["end"]),
        end_keywords=tuple(data["end_keywords"]),
        done=tuple(compile_pattern(p) for p in data["done"]),
        done_keywords=tuple(data["done_keywords"]),
        hang=data.get("hang"),
        serving=data["serving"],
        engine_ready=data["engine_ready"],
        frames=tuple(data["frames"]),
    )


def _add(
    sigs: dict[str, Signature],
    items: Iterable[SignatureData],
    doc: Document,
    phase_ids: set[str],
    *,
    replace: bool,
) -> None:
    seen: set[str] = set()
    for i, data in enumerate(items):
        path = ("signatures", i)
        sig_id = data["id"]
        if sig_id in seen or (sig_id in sigs and not replace):
            raise doc.error((*path, "id"), f"duplicate signature id {sig_id!r}")
        seen.add(sig_id)
        sig = _signature(data, path, doc, phase_ids)
        sigs[sig_id] = sig


def _signature(
    data: SignatureData, path: KeyPath, doc: Document, phase_ids: set[str]
) -> Signature:
    patterns = tuple(compile_pattern(p) for p in data["patterns"])
    if not patterns and data["kind"] != "hang" and not data["generic"]:
        raise doc.error(path, f"signature {data['id']!r} needs at least one pattern")
    if patterns and not data["keywords"]:
        raise doc.error(path, f"signature {data['id']!r} has patterns but no keywords",
                        hint="keywords are the lowercase literals a line must contain "
                        "before its patterns are tried")
    phase = data.get("phase")
    if phase is not None and phase not in phase_ids:
        raise doc.error((*path, "phase"), f"unknown phase {phase!r}",
                        hint="known phases: " + ", ".join(sorted(phase_ids)))
    groups: set[str] = {"phase"} if data["kind"] == "hang" else set()
    for rx in patterns:
        groups.update(rx.groupindex)
    if groups & {"arg", "flag", "args"}:
        # filled by the classifier from the removed-argument table (variantctl/removed_args.py)
        groups |= {"removed_in", "last_with"}
    for key in ("message", "remediation", "remediation_no_gpu"):
        for name in re.findall(r"\{(\w+)\}", data[key]):
            if data["generic"] and not patterns:
                break
            if name not in groups:
                raise doc.error((*path, key), f"{{{name}}} is not a named group of any pattern")
    ctx = data.get("context")
    context = None
    if ctx is not None:
        context = Context(
            window=ctx["window"],
            all=tuple(compile_pattern(p) for p in ctx["all"]),
            none=tuple(compile_pattern(p) for p in ctx["none"]),
        )
    keywords = tuple(data["keywords"])
    for j, example in enumerate(data["examples"]):
        low = example.lower()
        if not any(k in low for k in keywords):
            raise doc.error((*path, "examples", j), "example contains none of the keywords")
        if patterns and not any(rx.search(example) for rx in patterns):
            raise doc.error((*path, "examples", j), "example is not matched by any pattern")
    return Signature(
        id=data["id"],
        title=data["title"],
        kind=data["kind"],
        keywords=keywords,
        patterns=patterns,
        message=data["message"],
        remediation=data["remediation"],
        remediation_no_gpu=data["remediation_no_gpu"],
        priority=data["priority"],
        versions=data["versions"],
        context=context,
        generic=data["generic"],
        ends_server=data["ends_server"],
        frames=tuple(data["frames"]),
        phase=phase,
        source=doc.source,
        examples=tuple(data["examples"]),
    )
