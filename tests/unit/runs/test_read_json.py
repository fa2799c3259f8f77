"""The run store's one JSON reader (runs/store.read_json): orjson first, the stdlib for
what orjson refuses — the values read and the errors named are the stdlib's either way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from variantctl.runs.store import StoredFileError, read_json


def _write(tmp_path: Path, data: bytes) -> Path:
    (tmp_path / "f.json").write_bytes(data)
    return tmp_path


def test_a_bench_shaped_document_reads_as_the_stdlib_reads_it(tmp_path: Path) -> None:
    doc = {"levels": [{"concurrency": 4, "requests": [
        {"ttft": 0.0123456789012345, "itl": [1e-3, 2.5e-3], "ok": True, "err": None,
         "text": "é\u2028\\\"x", "chunks": list(range(50))} for _ in range(20)]}],
        "neg": -0.0, "big": 2**62, "exp": 1.5e300, "tiny": 5e-324}
    text = json.dumps(doc).encode()
    got = read_json(_write(tmp_path, text), "f.json", 1 << 20)
    assert got == json.loads(text)
    assert math.copysign(1.0, got["neg"]) == -1.0  # -0.0 kept as the stdlib keeps it


@pytest.mark.parametrize("text", [
    b'{"a": NaN, "b": Infinity, "c": -Infinity}',  # the stdlib's json.dumps writes these
    b'{"s": "\\ud800"}',  # a lone surrogate escape
    b'{"a": 1, "a": 2}',  # a repeated key: the last one, as the stdlib takes it
])
def test_what_orjson_refuses_or_reads_differently_is_read_as_the_stdlib_reads_it(
        tmp_path: Path, text: bytes) -> None:
    got = read_json(_write(tmp_path, text), "f.json", 1 << 20)
    want = json.loads(text)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def test_an_integer_past_64_bits_is_read_as_the_nearest_float(tmp_path: Path) -> None:
    """The one value orjson reads differently from the stdlib, not refused: no writer of
    a run file makes such a number (counts, token ids and nanosecond clocks are < 2**63);
    read as a float, a field checked as an integer refuses it instead of taking it."""
    got = read_json(_write(tmp_path, b'{"n": 123456789012345678901234567890}'), "f.json",
                    1 << 20)
    assert got == {"n": 1.2345678901234568e29} and isinstance(got["n"], float)
    assert read_json(_write(tmp_path, b'{"n": 18446744073709551615}'), "f.json",
                     1 << 20) == {"n": 2**64 - 1}  # up to 64 bits: the exact integer


def test_bad_json_and_bad_utf8_are_named_as_before(tmp_path: Path) -> None:
    with pytest.raises(StoredFileError, match=r"f\.json: not valid JSON \(Expecting"):
        read_json(_write(tmp_path, b'{"a": }'), "f.json", 1 << 20)
    with pytest.raises(StoredFileError, match=r"f\.json: not UTF-8 \(invalid start byte"):
        read_json(_write(tmp_path, b'{"a": "\xff"}'), "f.json", 1 << 20)
    with pytest.raises(StoredFileError, match=r"nested too deeply"):
        read_json(_write(tmp_path, b"[" * 100_000), "f.json", 1 << 20)
