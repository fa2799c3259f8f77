"""Datasets from files: ``--prompt sharegpt:FILE``, ``jsonl:FILE`` and ``trace:FILE``.

Reading is PURE and bounded (:func:`load`: the file's size, each line's length, the
number of entries), and every bad entry is one :class:`VariantctlError` (exit 2) naming
``FILE:LINE``. Turning entries into prompts costs the server's tokenizer
(:func:`sharegpt_prompts`, :func:`trace_prompts`), so token counts are the server's own
— the same per-request lengths ``vllm bench serve --dataset-name sharegpt`` measures
with the model's tokenizer.

- **sharegpt** — vLLM's ``ShareGPTDataset``: a JSON list of ``{"conversations":
  [{"from", "value"}, ...]}``; entries with fewer than two turns are dropped, the rest
  shuffled with ``random.seed(seed)`` (vLLM's ``--seed``, default 0, is ours too), the
  first turn is the prompt, the second turn's token count (special tokens included,
  as vLLM's ``tokenizer(completion).input_ids``) the output length unless
  ``--output-len`` is given; vLLM's ``is_valid_sequence`` filter (prompt and output
  ≥ 4 tokens, prompt ≤ 1024, both ≤ 2048) applies.
- **jsonl** — one object a line: ``prompt`` (text) or ``messages`` (chat), optional
  ``output_len``; any other field is refused.
- **trace** — the Mooncake trace layout, one request a line: ``timestamp`` (ms),
  ``input_length``, ``output_length``, optional ``hash_ids`` (one 512-token block
  each: requests naming the same ids share that prefix). Requests are replayed at
  their timestamps (divided by ``--trace-speed``).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from variantctl.bench.prompts import Prompt, Tokenizer, corpus_pool
from variantctl.benchparams import (
    DATASET_KINDS,
    MAX_INPUT_LEN,
    MAX_OUTPUT_LEN,
    MAX_SECONDS,
    dataset_spec,
)
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsondepth import MAX_DEPTH, check_depth
from variantctl.jsontypes import JsonMapping

KINDS = DATASET_KINDS
#: a file larger than this is refused (the ShareGPT V3 file is about 0.65 GiB)
MAX_FILE_BYTES = 1 << 30
#: one line of a jsonl or trace file
MAX_LINE_BYTES = 4 << 20
#: entries read from one file
MAX_ENTRIES = 1_000_000
#: tokens per ``hash_ids`` block (Mooncake's block size)
TRACE_BLOCK = 512
#: vLLM's ``is_valid_sequence`` defaults
MIN_LEN, MAX_PROMPT_LEN, MAX_TOTAL_LEN = 4, 1024, 2048

_JSONL_FIELDS = ("prompt", "messages", "output_len")
_TRACE_FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")


@dataclass(frozen=True)
class Spec:
    kind: str
    path: Path


@dataclass(frozen=True)
class Entry:
    """One entry of a dataset file, as read (no tokens counted yet)."""

    line: int
    prompt: str | None = None  # sharegpt / jsonl text
    messages: tuple[JsonMapping, ...] | None = None  # jsonl chat
    completion: str | None = None  # sharegpt: the reply (its length is the output length)
    output_len: int | None = None  # jsonl / trace
    timestamp_ms: float | None = None  # trace
    input_len: int | None = None  # trace
    hash_ids: tuple[int, ...] = ()  # trace


def parse_spec(prompt: str) -> Spec | None:
    """``sharegpt:FILE`` → ``Spec``; any other ``--prompt`` → None. An empty FILE is refused."""
    spec = dataset_spec(prompt)
    return None if spec is None else Spec(spec[0], Path(spec[1]))


def _usage(message: str) -> VariantctlError:
    return VariantctlError(message, exit_code=ExitCode.USAGE)


def _err(path: Path, line: int | None, message: str) -> VariantctlError:
    return _usage(f"{path}:{line}: {message}" if line is not None else f"{path}: {message}")


def _read(path: Path) -> str:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise _err(path, None, "no such dataset file") from None
    except OSError as exc:
        raise _err(path, None, f"cannot read the dataset file: {exc.strerror}") from None
    if not path.is_file():
        raise _err(path, None, "not a regular file")
    if size > MAX_FILE_BYTES:
        raise _err(path, None, f"the dataset file is {size} bytes, more than the "
                   f"{MAX_FILE_BYTES} read")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise _err(path, line, "not UTF-8 text") from None
    except OSError as exc:
        raise _err(path, None, f"cannot read the dataset file: {exc.strerror}") from None


def load(spec: Spec) -> tuple[Entry, ...]:
    """Every entry of the file (validated); an error names FILE:LINE."""
    text = _read(spec.path)
    if spec.kind == "sharegpt":
        entries = _sharegpt(spec.path, text)
    else:
        entries = _lines(spec.path, text, spec.kind)
    if not entries:
        raise _err(spec.path, None, f"holds no usable {spec.kind} entries")
    return entries


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


class _Lines:
    """Line numbers of increasing offsets, counted from the last one asked (linear in the
    file, where counting from the start each time made a ShareGPT file quadratic)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def at(self, index: int) -> int:
        if index < self.pos:
            return _line_at(self.text, index)
        self.line += self.text.count("\n", self.pos, index)
        self.pos = index
        return self.line


def _sharegpt(path: Path, text: str) -> tuple[Entry, ...]:
    """The top-level JSON list, element by element (so an error knows its line)."""
    decoder = json.JSONDecoder()
    try:
        check_depth(text, limit=MAX_DEPTH + 1)  # the list itself is one more level
    except json.JSONDecodeError as exc:
        raise _err(path, _line_at(text, exc.pos), f"not JSON: {exc.msg}") from None
    lines = _Lines(text)
    i = len(text) - len(text.lstrip())
    if not text.startswith("[", i):
        raise _err(path, _line_at(text, i), "expected a JSON list of ShareGPT entries "
                   '([{"conversations": [{"from": "human", "value": "..."}, ...]}, ...])')
    i += 1
    out: list[Entry] = []
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text):
            raise _err(path, _line_at(text, i), "the JSON list is not closed")
        if text[i] == "]":
            break
        line = lines.at(i)
        try:
            item, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise _err(path, _line_at(text, exc.pos), f"not JSON: {exc.msg}") from None
        if len(out) >= MAX_ENTRIES:
            raise _err(path, line, f"more than {MAX_ENTRIES} entries")
        if not isinstance(item, dict):
            raise _err(path, line, "an entry should be an object with 'conversations'")
        conv = item.get("conversations")
        if conv is None:
            continue  # vLLM drops it too
        if not isinstance(conv, list) or not all(
                isinstance(t, dict) and isinstance(t.get("value"), str)
                and isinstance(t.get("from", ""), str) for t in conv):
            raise _err(path, line, "'conversations' should be a list of "
                       '{"from": ..., "value": "text"}')
        if len(conv) < 2:
            continue  # vLLM: at least two turns
        out.append(Entry(line=line, prompt=conv[0]["value"], completion=conv[1]["value"]))
    rest = text[i + 1:].strip()
    if rest:
        raise _err(path, _line_at(text, i + 1 + text[i + 1:].index(rest[0])),
                   "text after the JSON list")
    return tuple(out)


def _lines(path: Path, text: str, kind: str) -> tuple[Entry, ...]:
    out: list[Entry] = []
    last_ts: float | None = None
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            raise _err(path, lineno, f"line longer than {MAX_LINE_BYTES} characters")
        if len(out) >= MAX_ENTRIES:
            raise _err(path, lineno, f"more than {MAX_ENTRIES} entries")
        try:
            check_depth(line)
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _err(path, lineno, f"not JSON: {exc.msg}") from None
        if not isinstance(item, dict):
            raise _err(path, lineno, "expected a JSON object")
        fields = _JSONL_FIELDS if kind == "jsonl" else _TRACE_FIELDS
        unknown = sorted(set(item) - set(fields))
        if unknown:
            raise _err(path, lineno, f"unknown field {unknown[0]!r} (a {kind} line has "
                       f"{', '.join(fields)})")
        if kind == "jsonl":
            out.append(_jsonl_entry(path, lineno, item))
        else:
            entry = _trace_entry(path, lineno, item)
            assert entry.timestamp_ms is not None
            if last_ts is not None and entry.timestamp_ms < last_ts:
                raise _err(path, lineno, f"timestamp {entry.timestamp_ms:g} is before the "
                           f"previous line's {last_ts:g} (a trace is in time order)")
            last_ts = entry.timestamp_ms
            out.append(entry)
    return tuple(out)


def _positive_int(path: Path, line: int, item: Mapping[str, object], key: str,
                  cap: int, option: str) -> int:
    """A positive integer field, capped like the option it stands in for."""
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _err(path, line, f"{key!r} should be a positive integer, got {_clip(value)}")
    if value > cap:
        raise _err(path, line, f"{key!r} is {value:,}, more than {cap:,} (the cap of "
                   f"{option})")
    return value


def _clip(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message_problem(m: object) -> str | None:
    """Why a chat message is not ``{"role": text, "content": text}``; None if it is."""
    if not isinstance(m, dict):
        return f"a message should be an object, got {_clip(m)}"
    if not isinstance(m.get("role"), str) or not m["role"]:
        return f"a message's 'role' should be non-empty text, got {_clip(m.get('role'))}"
    if "content" not in m:
        return "a message has no 'content' (its text)"
    if not isinstance(m["content"], str):
        return f"a message's 'content' should be text, got {_clip(m['content'])}"
    return None


def _jsonl_entry(path: Path, line: int, item: Mapping[str, object]) -> Entry:
    out_len = (_positive_int(path, line, item, "output_len", MAX_OUTPUT_LEN, "--output-len")
               if "output_len" in item else None)
    if ("prompt" in item) == ("messages" in item):
        raise _err(path, line, "give 'prompt' (text) or 'messages' (chat), one of them")
    if "prompt" in item:
        if not isinstance(item["prompt"], str) or not item["prompt"]:
            raise _err(path, line, "'prompt' should be non-empty text")
        return Entry(line=line, prompt=item["prompt"], output_len=out_len)
    msgs = item["messages"]
    if not isinstance(msgs, list) or not msgs:
        raise _err(path, line, "'messages' should be a non-empty list of "
                   '{"role": ..., "content": ...}')
    for m in msgs:
        problem = _message_problem(m)
        if problem:
            raise _err(path, line, f"'messages': {problem}")
    return Entry(line=line, messages=tuple(msgs), output_len=out_len)


def _trace_entry(path: Path, line: int, item: Mapping[str, object]) -> Entry:
    for key in ("timestamp", "input_length", "output_length"):
        if key not in item:
            raise _err(path, line, f"missing {key!r} (a trace line has timestamp, "
                       "input_length, output_length and optional hash_ids)")
    ts = item["timestamp"]
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not ts >= 0 or ts == float(
            "inf"):
        raise _err(path, line, f"'timestamp' should be milliseconds >= 0, got {ts!r}")
    hashes = item.get("hash_ids", [])
    if not isinstance(hashes, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in hashes):
        raise _err(path, line, "'hash_ids' should be a list of non-negative integers")
    return Entry(line=line, timestamp_ms=float(ts),
                 input_len=_positive_int(path, line, item, "input_length", MAX_INPUT_LEN,
                                         "--input-len"),
                 output_len=_positive_int(path, line, item, "output_length", MAX_OUTPUT_LEN,
                                          "--output-len"),
                 hash_ids=tuple(hashes))


def shuffled(entries: Sequence[Entry], seed: int) -> list[Entry]:
    """vLLM's order: ``random.seed(seed); random.shuffle(data)``."""
    out = list(entries)
    random.Random(seed).shuffle(out)
    return out


def is_valid_sequence(prompt_len: int, output_len: int, *, fixed_output: bool) -> bool:
    """vLLM's filter of too short / too long pairs (``datasets.is_valid_sequence``)."""
    return not (prompt_len < MIN_LEN or (not fixed_output and output_len < MIN_LEN)
                or prompt_len > MAX_PROMPT_LEN or prompt_len + output_len > MAX_TOTAL_LEN)


def trace_ids(entry: Entry, pool: Sequence[int], index: int) -> list[int]:
    """``input_len`` token ids: one deterministic block per hash id (so requests sharing
    ids share a prefix), then tokens unique to the request."""
    assert entry.input_len is not None
    ids: list[int] = []
    for h in entry.hash_ids:
        rng = random.Random(h)
        ids.extend(pool[rng.randrange(len(pool))] for _ in range(TRACE_BLOCK))
        if len(ids) >= entry.input_len:
            break
    rng = random.Random(f"trace-{index}")
    while len(ids) < entry.input_len:
        ids.append(pool[rng.randrange(len(pool))])
    return ids[: entry.input_len]


def trace_offsets(path: Path, entries: Sequence[Entry], trace_speed: float) -> list[float]:
    """When each trace line is sent, seconds after the first (gaps divided by
    ``--trace-speed``); a time past :data:`MAX_SECONDS` is refused naming its line."""
    t0 = (entries[0].timestamp_ms or 0.0) if entries else 0.0
    out = []
    for e in entries:
        at = ((e.timestamp_ms or 0.0) - t0) / 1000.0 / trace_speed
        if not at <= MAX_SECONDS:
            raise _err(path, e.line, f"this request would be sent {at:.3g} s after the "
                       f"first (its timestamp's gap divided by --trace-speed {trace_speed:g}),"
                       f" more than {MAX_SECONDS:,.0f} s (the cap of every time option)")
        out.append(at)
    return out


async def prompts_for(spec: Spec, tok: Tokenizer | None, *, n: int, endpoint: str,
                      seed: int, output_len: int | None, requests: int | None,
                      trace_speed: float) -> list[Prompt]:
    """The prompts of a dataset for ``n`` requests (a trace: all its lines, or the first
    ``requests``). ``output_len`` set: it replaces the dataset's own output lengths.
    ``tok`` (the server's tokenizer) is needed for sharegpt and trace."""
    entries = load(spec)
    if spec.kind == "jsonl":
        return [Prompt(e.prompt if e.prompt is not None else [dict(m) for m in e.messages or ()],
                       output_len=output_len or e.output_len) for e in entries]
    assert tok is not None
    if spec.kind == "sharegpt":
        return await _sharegpt_prompts(spec, tok, entries, n=n, seed=seed,
                                       output_len=output_len)
    chosen = entries if requests is None else entries[:requests]
    ats = trace_offsets(spec.path, chosen, trace_speed)
    pool = await corpus_pool(tok)
    out: list[Prompt] = []
    for i, (e, at) in enumerate(zip(chosen, ats, strict=True)):
        ids = trace_ids(e, pool, i)
        content: str | list[int] = ids if endpoint == "completions" else await tok.decode(ids)
        out.append(Prompt(content, output_len=output_len or e.output_len, at_s=at,
                          expected_tokens=len(ids) if endpoint == "completions" else None))
    return out


async def _sharegpt_prompts(spec: Spec, tok: Tokenizer, entries: Sequence[Entry], *, n: int,
                            seed: int, output_len: int | None) -> list[Prompt]:
    out: list[Prompt] = []
    order = shuffled(entries, seed)
    batch = 16  # tokenizer round trips in flight; the order of the results is vLLM's

    async def lengths(e: Entry) -> tuple[int, int]:
        assert e.prompt is not None and e.completion is not None
        plen = len(await tok.encode(e.prompt, special=True))
        olen = output_len or len(await tok.encode(e.completion, special=True))
        return plen, olen

    for start in range(0, len(order), batch):
        chunk = order[start:start + batch]
        for e, (plen, olen) in zip(chunk, await asyncio.gather(*(lengths(e) for e in chunk)),
                                   strict=True):
            if len(out) >= n:
                return out
            if is_valid_sequence(plen, olen, fixed_output=output_len is not None):
                assert e.prompt is not None
                out.append(Prompt(e.prompt, output_len=olen, expected_tokens=plen))
    if not out:
        raise _err(spec.path, None, "no entry passes vLLM's length filter (prompt and "
                   f"reply >= {MIN_LEN} tokens, prompt <= {MAX_PROMPT_LEN}, both <= "
                   f"{MAX_TOTAL_LEN})")
    return out
