"""``classify``: read each log bounded, classify it with the project's catalog, check
it against a variant's expectations; ``--suggest``: a signature built from a log's
decisive line, checked against the log and the shipped signatures' examples."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from variantctl.errors import VariantctlError
from variantctl.logs.bounded import MAX_BYTES, MAX_LINE, ReadStats, bounded_lines
from variantctl.logs.expect import Mismatch
from variantctl.logs.model import Catalog, Signature
from variantctl.logs.result import Result
from variantctl.project.loaded import Project

#: bytes per read() of a log
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ClassifyRequest:
    """``classify LOG…``'s options."""

    logs: tuple[Path, ...]
    expect: str | None = None
    suggest: bool = False
    exited: bool | None = None


@dataclass(frozen=True)
class Classified:
    """One log: its verdict, the expectation mismatches, and with ``--suggest`` the
    suggested signature file."""

    display: str
    result: Result
    mismatches: tuple[Mismatch, ...] = ()
    suggestion: str | None = None


def classify_logs(project: Project, req: ClassifyRequest, cwd: Path,
                  warn: Callable[[str], None]) -> tuple[Classified, ...]:
    """Every log classified in order; what the bounds on reading removed goes to
    ``warn``."""
    from variantctl.logs.classify import classify_text
    from variantctl.logs.expect import check_log

    catalog = project.signatures
    wanted = load_expectations(project, req.expect) if req.expect else None
    out = []
    for path in req.logs:
        text, stats = read_log(cwd / path, str(path))
        for warning in read_warnings(str(path), stats):
            warn(warning)
        result = classify_text(text, catalog, exited=req.exited)
        mismatches = check_log(result, *wanted) if wanted else []
        suggestion = suggestion_yaml(str(path), text, result, catalog) if req.suggest else None
        out.append(Classified(str(path), result, tuple(mismatches), suggestion))
    return tuple(out)


def read_log(path: Path, display: str) -> tuple[str, ReadStats]:
    """The log's text (undecodable bytes replaced), read in bounded chunks: lines longer
    than ``MAX_LINE`` are cut and at most ``MAX_BYTES`` are read (see
    :mod:`variantctl.logs.bounded`); a clear error for a missing or unreadable file."""
    stats = ReadStats()
    try:
        with path.open("rb", buffering=0) as fh:
            chunks = iter(lambda: fh.read(_CHUNK), b"")
            data = b"".join(bounded_lines(chunks, stats))
    except FileNotFoundError:
        raise VariantctlError(f"{display}: log file not found") from None
    except IsADirectoryError:
        raise VariantctlError(f"{display}: is a directory, expected a log file") from None
    except PermissionError:
        raise VariantctlError(f"{display}: permission denied") from None
    except OSError as exc:
        raise VariantctlError(f"{display}: cannot read: {exc.strerror}") from None
    return data.decode("utf-8", errors="replace"), stats


def read_warnings(display: str, stats: ReadStats) -> list[str]:
    """What the bounds on reading removed from ``display``, one sentence each."""
    out = []
    if stats.lines_cut:
        out.append(f"{display}: {stats.lines_cut} line(s) longer than {MAX_LINE // 1024} KiB "
                   f"were cut to that length (first at line {stats.first_cut_line}; "
                   f"{stats.bytes_dropped} bytes not matched)")
    if stats.truncated:
        out.append(f"{display}: only the first {MAX_BYTES // (1024 * 1024)} MiB were read; "
                   "the rest of the log was not classified")
    return out


def load_expectations(
    project: Project, name: str
) -> tuple[Mapping[str, object], Mapping[str, object]]:
    """``(expect block, flags)`` of the resolved variant ``name``."""
    variant = project.resolve(name)
    return dict(variant.expect), dict(variant.args)


def suggestion_yaml(display: str, text: str, result: Result, catalog: Catalog) -> str:
    """The ``--suggest`` output for one log: a signature file (YAML) with the checks that
    were run written as comments, or one comment line saying why there is none."""
    import yaml

    from variantctl.config.signatures import signatures_from_text
    from variantctl.logs.classify import classify_text
    from variantctl.logs.suggest import suggest, wants_suggestion

    if not wants_suggestion(result):
        return (f"# {display}: already classified as {result.signature} ({result.kind}); "
                "--suggest is for unknown or generic failures\n")
    examples = example_texts()
    for quoted in (True, False):  # generic first; narrower when that matches a fixture
        s = suggest(text, result, quoted=quoted)
        if s is None:
            return f"# {display}: no error-like line to build a signature on\n"
        body = yaml.safe_dump({"signatures": [s.entry]}, sort_keys=False, allow_unicode=True,
                              width=1 << 20)
        sig_id = s.entry["id"]
        extended = signatures_from_text(body, f"<suggestion for {display}>", catalog)
        again = classify_text(text, extended)
        matches_log = again.signature == sig_id
        sig = extended.get(sig_id)
        assert sig is not None
        hits = [name for name, example in examples if matches(sig, example, catalog)]
        if matches_log and not hits:
            break
    assert s is not None
    lines = [
        f"# Suggested signature for {display} (line {s.line}); save it as",
        f"# signatures/{sig_id}.yaml in the project, review the pattern, fill in the remediation.",
        f"# phase when it was printed: {s.phase}",
        f"# check: matches this log -> {'yes' if matches_log else 'NO'} "
        f"(verdict {again.signature} {again.kind})",
        "# check: matches a shipped fixture or example -> "
        + ("no" if not hits else "YES: " + ", ".join(hits[:5])),
    ]
    return "\n".join(lines) + "\n" + body


def example_texts() -> list[tuple[str, str]]:
    """``(name, text)`` of the logs a suggested pattern must not match: the shipped
    signatures' own examples."""
    from variantctl.config.catalog import default_catalog

    return [(f"example of {s.id}", "\n".join(s.examples))
            for s in default_catalog().signatures if s.examples]


def matches(sig: Signature, text: str, catalog: Catalog) -> bool:
    """Whether ``sig`` matches in ``text``, judged by the one classifier
    (:func:`variantctl.logs.classify.classify_text`) with ``sig`` as its only signature."""
    from variantctl.logs.classify import classify_text

    result = classify_text(text, Catalog(catalog.version, (sig,), catalog.phases))
    return sig.id in {result.signature, *(m.signature for m in (*result.warnings, *result.also))}
