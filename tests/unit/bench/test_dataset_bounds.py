"""Bounded dataset, trace and arrival inputs (issue 32): nesting, field types and caps,
a linear ShareGPT loader, durations derived from rates, speeds and trace gaps, the
prefixes a run builds, and ``--max-level``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult
from variantctl.bench import arrival, datasets
from variantctl.benchparams import MAX_INPUT_LEN, MAX_OUTPUT_LEN, BenchParams
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsondepth import MAX_DEPTH, check_depth

Run = Callable[..., CliResult]
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(("kind", "content", "line", "what"), [
    ("jsonl", '{"prompt": "a"}\n{"prompt": "b", "output_len": ' + DEEP + "}\n", 2,
     f"nested deeper than {MAX_DEPTH} levels"),
    ("trace", '{"timestamp": 1, "input_length": 3, "output_length": 1}\n'
              '{"timestamp": 2, "hash_ids": ' + DEEP + "}\n", 2, "nested deeper"),
    ("sharegpt", '[\n {"conversations": []},\n\n {"conversations": ' + DEEP + "}\n]\n", 4,
     "nested deeper"),
    ("jsonl", '{"messages": [{"role": "user", "content": 5}]}\n', 1,
     "'content' should be text, got 5"),
    ("jsonl", '{"messages": [{"role": "user"}]}\n', 1, "has no 'content'"),
    ("jsonl", '{"messages": [{"role": 1, "content": "x"}]}\n', 1, "'role' should be"),
    ("jsonl", '{"messages": ["hi"]}\n', 1, "a message should be an object"),
    ("jsonl", f'{{"prompt": "a", "output_len": {MAX_OUTPUT_LEN + 1}}}\n', 1,
     "the cap of --output-len"),
    ("trace", '{"timestamp": 0, "input_length": 1000000000000, "output_length": 1}\n', 1,
     "the cap of --input-len"),
    ("trace", '{"timestamp": 0, "input_length": 3, "output_length": '
              f'{MAX_OUTPUT_LEN + 1}}}\n', 1, "the cap of --output-len"),
    ("sharegpt", '[{"conversations": [{"from": 1, "value": "a"}, {"from": "gpt", "value": '
                 '"b"}]}]', 1, "'conversations' should be"),
])
def test_hostile_fields_and_nesting_are_refused_naming_file_and_line(
        run_cli: Run, tmp_path: Path, kind: str, content: str, line: int, what: str) -> None:
    f = tmp_path / f"bad.{kind}"
    f.write_text(content)
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--prompt", f"{kind}:{f}"])
    assert res.code == ExitCode.USAGE, res.output
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and f"{f}:{line}: " in errors[0] and what in errors[0], res.stderr
    assert "Traceback" not in res.output and "internal error" not in res.output


def test_depth_check_skips_brackets_inside_strings() -> None:
    check_depth(json.dumps({"a": "[" * 1000 + "{" * 1000}))
    with pytest.raises(json.JSONDecodeError, match="nested deeper than 3"):
        check_depth('{"a": [[["x"]]]}', limit=3)
    check_depth('{"a": [["x"]]}', limit=3)


def test_sharegpt_loading_is_linear(tmp_path: Path) -> None:
    # 100,000 entries (the public file has ~94,000): the old loader counted lines from
    # the start of the file for every entry, ~an hour here; a linear one takes seconds
    entry = {"conversations": [{"from": "human", "value": "hello there " * 4},
                               {"from": "gpt", "value": "general kenobi " * 4}]}
    f = tmp_path / "big.json"
    f.write_text("[\n" + ",\n".join(json.dumps(entry) for _ in range(100_000)) + "\n]\n")
    start = time.monotonic()
    entries = datasets.load(datasets.Spec("sharegpt", f))
    elapsed = time.monotonic() - start
    assert len(entries) == 100_000 and entries[-1].line == 100_001
    assert elapsed < 30, f"{elapsed:.1f} s for 100,000 entries"


def test_a_trace_gap_beyond_the_time_cap_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "t.trace"
    f.write_text('{"timestamp": 0, "input_length": 3, "output_length": 1}\n'
                 '{"timestamp": 10, "input_length": 3, "output_length": 1}\n'
                 '{"timestamp": 2000000000, "input_length": 3, "output_length": 1}\n')
    entries = datasets.load(datasets.Spec("trace", f))
    assert datasets.trace_offsets(f, entries[:2], 1.0) == [0.0, 0.01]
    with pytest.raises(VariantctlError, match=f"{f}:3: .*more than 1,000,000 s") as exc:
        datasets.trace_offsets(f, entries, 1.0)
    assert exc.value.exit_code == ExitCode.USAGE
    # a tiny --trace-speed turns a gap of milliseconds into centuries
    with pytest.raises(VariantctlError, match=f"{f}:2: .*--trace-speed 1e-12"):
        datasets.trace_offsets(f, entries[:2], 1e-12)


@pytest.mark.parametrize("args", [
    ["--request-rate", "1e-9"],
    ["--request-rate", "1e-9,1"],
    ["--ramp-up", "linear", "--ramp-start", "1e-9", "--ramp-end", "1"],
])
def test_a_rate_slower_than_one_request_per_time_cap_is_refused(
        run_cli: Run, args: list[str]) -> None:
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--requests", "4", *args])
    assert res.code == ExitCode.USAGE, res.output
    assert "more than 1,000,000 s" in res.stderr


def test_derived_level_length_is_capped() -> None:
    with pytest.raises(VariantctlError, match="more than 1,000,000 s") as exc:
        arrival.offsets(arrival.Profile("rate", rate=0.01), 100_000, 1.0, 0)
    assert exc.value.exit_code == ExitCode.USAGE
    assert arrival.offsets(arrival.Profile("rate", rate=0.5), 4, 1.0, 0)[-1] == pytest.approx(8)
    import random
    assert arrival.next_gap(arrival.Profile("rate", rate=1e-6), 0, float("inf"),
                            random.Random(0)) == 1_000_000.0


@pytest.mark.parametrize(("search", "level"), [("concurrency", "1e9"), ("rate", "1e12")])
def test_max_level_is_capped_at_the_per_level_limit(
        run_cli: Run, search: str, level: str) -> None:
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--search", search, "--slo",
                   "ttft:100", "--max-level", level])
    assert res.code == ExitCode.USAGE, res.output
    assert "the per-level limit" in res.stderr


def test_the_prefixes_built_are_bounded_by_their_product() -> None:
    with pytest.raises(VariantctlError, match="tokens, more than"):
        BenchParams(prefix_len=MAX_INPUT_LEN, prefixes=2, requests=10)
    # two requests use two prefixes: only those count
    BenchParams(prefix_len=MAX_INPUT_LEN // 2, prefixes=10_000, requests=2)
