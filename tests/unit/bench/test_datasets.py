"""``--prompt sharegpt:FILE | jsonl:FILE | trace:FILE`` against the labelled FAKE OpenAI
server (tests/support/fake_openai_server.py: a word tokenizer with a BOS, known output
lengths): token counts come from the server's ``/tokenize``, vLLM's ShareGPT order and
filter, a trace replayed at its timestamps, and every bad file refused with FILE:LINE."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliResult
from tests.support.fake_openai_server import spawn
from variantctl.bench import datasets
from variantctl.exitcodes import ExitCode

Run = Callable[..., CliResult]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with spawn("--ttft-ms", "2", "--itl-ms", "1") as u:
        yield u


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{k}" for k in range(n))


def write_sharegpt(path: Path) -> list[tuple[int, int] | None]:
    """Entries with known word counts; None where vLLM's filter drops the entry."""
    shapes = [(10, 8), (2, 8), (20, 30), (6, 1), (1500, 5), (12, 12), (7, 40)]
    entries: list[dict[str, object]] = [{"id": "single", "conversations": [
        {"from": "human", "value": "only one turn"}]}]
    for i, (p, c) in enumerate(shapes):
        entries.append({"id": str(i), "conversations": [
            {"from": "human", "value": words(p, f"p{i}x")},
            {"from": "gpt", "value": words(c, f"c{i}x")}]})
    path.write_text(json.dumps(entries, indent=1))
    expected: list[tuple[int, int] | None] = [None]
    for p, c in shapes:
        # the fake server counts words + 1 BOS, as vLLM's tokenizer(text).input_ids does
        plen, olen = p + 1, c + 1
        ok = plen >= 4 and olen >= 4 and plen <= 1024 and plen + olen <= 2048
        expected.append((plen, olen) if ok else None)
    return expected


def test_sharegpt_lengths_are_the_servers_in_vllms_order_and_filter(
        run_cli: Run, url: str, tmp_path: Path) -> None:
    f = tmp_path / "sg.json"
    shapes = write_sharegpt(f)
    # vLLM drops the one-turn entry, shuffles the rest, then filters by length
    kept = [s for s in [shapes[i] for i in _vllm_order(len(shapes) - 1)] if s is not None]
    res = run_cli(["bench", "--url", url, "--endpoint", "completions", "--prompt",
                   f"sharegpt:{f}", "--requests", str(len(kept)), "--warmup", "off",
                   "--ignore-eos", "--json"])
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    reqs = doc["levels"][0]["requests"]
    assert [(r["prompt_tokens"], r["output_tokens"]) for r in reqs] == kept
    assert doc["params"]["prompt"] == f"sharegpt:{f}"
    assert doc["params"]["output_len_set"] is False


def _vllm_order(n: int) -> list[int]:
    """Indices (1-based: 0 is the dropped one-turn entry) in vLLM's shuffled order
    (``random.seed(seed); random.shuffle(data)``)."""
    idx = list(range(1, n + 1))
    random.Random(0).shuffle(idx)
    return idx


def test_sharegpt_output_len_given_replaces_the_replies_lengths(
        run_cli: Run, url: str, tmp_path: Path) -> None:
    f = tmp_path / "sg.json"
    write_sharegpt(f)
    res = run_cli(["bench", "--url", url, "--endpoint", "completions", "--prompt",
                   f"sharegpt:{f}", "--requests", "3", "--output-len", "5",
                   "--warmup", "off", "--json"])
    assert res.code == 0, res.output
    reqs = json.loads(res.stdout)["levels"][0]["requests"]
    assert [r["output_tokens"] for r in reqs] == [5, 5, 5]


def test_jsonl_prompts_messages_and_output_len(run_cli: Run, url: str,
                                               tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    f.write_text(json.dumps({"prompt": "a b c", "output_len": 3}) + "\n\n"
                 + json.dumps({"messages": [{"role": "user", "content": "x y"}]}) + "\n")
    res = run_cli(["bench", "--url", url, "--prompt", f"jsonl:{f}", "--requests", "2",
                   "--warmup", "off", "--json"])
    assert res.code == 0, res.output
    reqs = json.loads(res.stdout)["levels"][0]["requests"]
    # chat: words + the fake template's 6 tokens; no output_len: the default 128
    assert [(r["prompt_tokens"], r["output_tokens"]) for r in reqs] == [(9, 3), (8, 128)]


def test_trace_is_replayed_at_its_timestamps_with_exact_lengths(
        run_cli: Run, url: str, tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    rows = [{"timestamp": 0, "input_length": 700, "output_length": 4, "hash_ids": [7, 8]},
            {"timestamp": 400, "input_length": 600, "output_length": 6, "hash_ids": [7]},
            {"timestamp": 1200, "input_length": 20, "output_length": 2}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = run_cli(["bench", "--url", url, "--endpoint", "completions", "--prompt",
                   f"trace:{f}", "--trace-speed", "2", "--concurrency", "4",
                   "--warmup", "off", "--json"])
    assert res.code == 0, res.output
    doc = json.loads(res.stdout)
    reqs = doc["levels"][0]["requests"]
    assert [(r["prompt_tokens"], r["output_tokens"]) for r in reqs] == [
        (700, 4), (600, 6), (20, 2)]
    # sent no earlier than the trace says (timestamps / speed), in its order
    starts = [r["start_s"] for r in reqs]
    assert starts[1] >= 0.2 and starts[2] >= 0.6
    assert doc["params"]["trace_speed"] == 2.0


def test_trace_blocks_share_prefixes_by_hash_id() -> None:
    pool = list(range(100, 400))
    a = datasets.Entry(line=1, timestamp_ms=0, input_len=1100, output_len=1, hash_ids=(3, 4, 5))
    b = datasets.Entry(line=2, timestamp_ms=0, input_len=800, output_len=1, hash_ids=(3, 9))
    c = datasets.Entry(line=3, timestamp_ms=0, input_len=800, output_len=1)
    ia, ib, ic = (datasets.trace_ids(e, pool, i) for i, e in enumerate((a, b, c)))
    assert (len(ia), len(ib), len(ic)) == (1100, 800, 800)
    assert ia[:512] == ib[:512]
    assert ia[512:800] != ib[512:800]
    assert ic[:512] != ia[:512]


@pytest.mark.parametrize(("kind", "content", "line", "what"), [
    ("jsonl", '{"prompt": "a"}\n{"prompt": "b", "temp": 1}\n', 2, "unknown field 'temp'"),
    ("jsonl", '{"prompt": "a"}\n\n{"prompt": \n', 3, "not JSON"),
    ("jsonl", '{"prompt": "a", "output_len": 0}\n', 1, "'output_len' should be"),
    ("jsonl", '{"prompt": "a", "messages": []}\n', 1, "one of them"),
    ("trace", '{"timestamp": 5, "input_length": 3, "output_length": 1}\n'
              '{"timestamp": 1, "input_length": 3, "output_length": 1}\n', 2, "before"),
    ("trace", '{"timestamp": 5, "input_length": 3}\n', 1, "missing 'output_length'"),
    ("trace", '{"timestamp": 5, "input_length": 3, "output_length": 1, "hash_ids": ["x"]}\n',
     1, "'hash_ids'"),
    ("sharegpt", '[\n {"conversations": [{"from": "human", "value": "a"}]},\n'
                 ' {"conversations": "no"}\n]\n', 3, "'conversations' should be"),
    ("sharegpt", '[\n {"conversations": []},\n {"conversations": [\n', 4, "not JSON"),
    ("sharegpt", '{"conversations": []}\n', 1, "expected a JSON list"),
])
def test_bad_dataset_is_one_error_naming_file_and_line(
        run_cli: Run, tmp_path: Path, kind: str, content: str, line: int, what: str) -> None:
    f = tmp_path / f"bad.{kind}"
    f.write_text(content)
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--prompt", f"{kind}:{f}"])
    assert res.code == ExitCode.USAGE, res.output
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and f"{f}:{line}: " in errors[0] and what in errors[0], res.stderr
    assert "Traceback" not in res.output


def test_missing_empty_and_oversized_datasets_are_refused(
        run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope.json"
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--prompt", f"sharegpt:{missing}"])
    assert res.code == ExitCode.USAGE and f"{missing}: no such dataset file" in res.stderr
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--prompt", "jsonl:"])
    assert res.code == ExitCode.USAGE and "expected jsonl:FILE" in res.stderr
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n\n")
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--prompt", f"jsonl:{empty}"])
    assert res.code == ExitCode.USAGE and "holds no usable jsonl entries" in res.stderr
    long_line = tmp_path / "l.jsonl"
    long_line.write_text('{"prompt": "ok"}\n' + json.dumps({"prompt": "w " * 200}) + "\n")
    monkeypatch.setattr(datasets, "MAX_LINE_BYTES", 100)
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--prompt", f"jsonl:{long_line}"])
    assert res.code == ExitCode.USAGE and f"{long_line}:2: line longer than 100" in res.stderr
    monkeypatch.setattr(datasets, "MAX_FILE_BYTES", 10)
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--prompt", f"jsonl:{long_line}"])
    assert res.code == ExitCode.USAGE and "more than the 10 read" in res.stderr


def test_trace_speed_needs_a_trace(run_cli: Run) -> None:
    res = run_cli(["bench", "--url", "http://127.0.0.1:9", "--trace-speed", "2"])
    assert res.code == ExitCode.USAGE and "--trace-speed needs --prompt trace:FILE" in (
        res.stderr)
