"""Effects behind ``variantctl classify``: reading logs, loading a variant's expectations,
and the exit code by verdict kind."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.logs.bounded import MAX_BYTES, MAX_LINE, ReadStats, bounded_lines
from variantctl.logs.expect import Mismatch
from variantctl.logs.model import Catalog, Signature
from variantctl.logs.result import Result
from variantctl.project.loaded import Project

#: exit code per verdict kind; with several logs the most severe (first in this order) wins
KIND_EXIT = {
    "failed": ExitCode.FAILED,
    "hang": ExitCode.HANG,
    "unknown": ExitCode.UNKNOWN,
    "warning": ExitCode.OK,
    "ok": ExitCode.OK,
}
_SEVERITY = ("failed", "hang", "unknown", "warning", "ok")
#: bytes per read() of a log
_CHUNK = 1 << 20


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


def exit_code(results: Sequence[tuple[str, Result, Sequence[Mismatch]]]) -> int:
    """The most severe verdict's exit code; expectation mismatches count as a failure."""
    if not results:
        return ExitCode.OK
    worst = min(results, key=lambda r: _SEVERITY.index(r[1].kind))[1].kind
    code = int(KIND_EXIT[worst])
    if code == ExitCode.OK and any(m for _, _, m in results):
        return int(ExitCode.FAILED)
    return code


def fixture_texts() -> list[tuple[str, str]]:
    """``(name, text)`` of the logs a suggested pattern must not match: the shipped
    signatures' own examples, and the repository's log fixtures when variantctl runs from
    a checkout (``tests/fixtures/logs``)."""
    from variantctl.config.catalog import default_catalog

    out = [(f"example of {s.id}", "\n".join(s.examples)) for s in default_catalog().signatures
           if s.examples]
    root = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "logs"
    if root.is_dir():
        for p in sorted(root.glob("*/*.log")):
            out.append((str(p.relative_to(root)), p.read_text("utf-8", errors="replace")))
    return out


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
    fixtures = fixture_texts()
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
        hits = [name for name, fixture in fixtures if _matches(sig, fixture)]
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


def _matches(sig: Signature, text: str) -> bool:
    from variantctl.logs.normalize import normalize

    low = text.lower()
    if not any(k in low for k in sig.keywords):
        return False
    for line in text.splitlines():
        if any(k in line.lower() for k in sig.keywords):
            norm = normalize(line)
            if any(rx.search(norm) for rx in sig.patterns):
                return True
    return False
