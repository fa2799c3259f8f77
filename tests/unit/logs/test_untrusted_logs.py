"""Logs are untrusted input (issue 8, family 4): bounded reading, a cap on line length,
control characters made visible, no catastrophic user regex."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from variantctl.config.regexsafety import backtracking_risk
from variantctl.logs.bounded import CUT_MARKER, ReadStats, bounded_lines, visible


def _read(chunks: list[bytes], **kw: int) -> tuple[bytes, ReadStats]:
    stats = ReadStats()
    return b"".join(bounded_lines(iter(chunks), stats, **kw)), stats


def test_long_lines_are_cut_and_counted_across_chunks() -> None:
    data, stats = _read([b"ok\n" + b"x" * 30, b"x" * 30, b"x" * 30 + b"\nnext\n"], max_line=50)
    lines = data.split(b"\n")
    assert lines[0] == b"ok"
    assert lines[1] == b"x" * 50 + CUT_MARKER.format(n=40).encode()
    assert lines[2] == b"next"
    assert (stats.lines_cut, stats.bytes_dropped, stats.first_cut_line) == (1, 40, 2)


def test_endless_input_stops_at_the_byte_cap() -> None:
    def zeros():  # like /dev/zero: no newline, never ends
        while True:
            yield b"\0" * 4096

    stats = ReadStats()
    out = b"".join(bounded_lines(zeros(), stats, max_line=100, max_bytes=1 << 20))
    assert stats.truncated and len(out) < 200


def test_cli_reads_dev_zero_in_bounded_time(run_cli) -> None:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    res = run_cli(["classify", "/dev/zero"])
    assert time.monotonic() - start < 30
    assert res.code == 7
    assert "only the first" in res.stderr


def test_a_huge_line_inside_a_traceback_is_fast(  # type: ignore[no-untyped-def]
        tmp_path: Path, run_cli) -> None:
    log = tmp_path / "big.log"
    log.write_text("INFO 10-20 04:12:31 llm_engine.py:237] Initializing an LLM engine (v0.6.3) "
                   "with "
                   "config: model='m', enforce_eager=False\n"
                   "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    "
                   + "A(" * 2_000_000 + "\nValueError: boom\n")
    start = time.monotonic()
    res = run_cli(["classify", str(log)])
    assert time.monotonic() - start < 20
    assert res.code == 1 and "startup-error" in res.stdout
    assert "longer than" in res.stderr
    assert len(res.stdout) < 20_000  # the line is clipped on the terminal too


def test_escape_sequences_never_reach_the_terminal(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "esc.log"
    log.write_text("OSError: [Errno 98] Address already in use \x1b]0;pwned\x07\x1b[2J\x9b31m\n")
    res = run_cli(["classify", str(log)])
    assert res.code == 1
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout and "\x9b" not in res.stdout
    assert "\\x1b]0;pwned\\x07" in res.stdout


def test_visible_keeps_tabs_and_text() -> None:
    assert visible("a\tb é") == "a\tb é"
    assert visible("a\rb\x00") == "a\\x0db\\x00"


def test_catastrophic_user_regex_is_refused_at_load(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    sigs = tmp_path / "sigs"
    sigs.mkdir()
    (sigs / "bad.yaml").write_text(
        "signatures:\n"
        "  - id: evil\n"
        "    title: t\n"
        "    kind: failed\n"
        "    keywords: [aaaa]\n"
        "    patterns: ['(a+)+$']\n"
        "    message: m\n")
    log = tmp_path / "x.log"
    log.write_text("a" * 40 + "!\n")
    start = time.monotonic()
    res = run_cli(["classify", "--signatures", str(sigs), str(log)])
    assert time.monotonic() - start < 10
    assert res.code == 2
    assert "bad.yaml:6" in res.stderr and "nested repetition" in res.stderr


@pytest.mark.parametrize(("pattern", "family"), [
    (r"(\d|\d\d)+$", "nested repetition"),
    ("(a{1,30}){1,30}$", "counted repetition"),
    ("(.*a){20}$", "counted repetition"),
    (r"(\w+\s?){1,60}$", "counted repetition"),
    ("(a|a)+$", "overlapping alternation"),
    (r"(x|xy|\w)*z", "overlapping alternation"),
])
def test_every_backtracking_family_is_refused_at_load(  # type: ignore[no-untyped-def]
        tmp_path: Path, run_cli, pattern: str, family: str) -> None:
    sigs = tmp_path / "sigs"
    sigs.mkdir()
    (sigs / "bad.yaml").write_text(
        "signatures:\n"
        "  - id: evil\n"
        "    title: t\n"
        "    kind: failed\n"
        "    keywords: [aaaa]\n"
        f"    patterns: ['{pattern}']\n"
        "    message: m\n")
    log = tmp_path / "x.log"
    log.write_text("a" * 40 + "!\n")
    res = run_cli(["classify", "--signatures", str(sigs), str(log)])
    assert res.code == 2
    assert "bad.yaml:6" in res.stderr and family in res.stderr


@pytest.mark.parametrize("pattern", [r"(?:[^,]+,){0,3}end", r"(\d{1,3}\.){3}\d+",
                                     "(foo|foobar)*x", "(a|ab)*c", "(?>a+)+b", r"(\w|\d)+"])
def test_unambiguous_repetition_still_loads(pattern: str) -> None:
    assert backtracking_risk(pattern) is None
