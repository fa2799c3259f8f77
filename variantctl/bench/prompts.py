"""What each request sends: ``short`` | ``tools`` | ``random`` | a FILE.

``random`` is token-exact like ``vllm bench serve --dataset-name random``: the server's
``/tokenize`` and ``/detokenize`` endpoints are the tokenizer. Why the server and not
the model's tokenizer files: the server may be on a remote host reached through a
forward (the files are not here), its tokenizer is by definition the one that counts
``usage.prompt_tokens`` (a patched or different local copy could disagree), and it
keeps ``transformers`` out of variantctl's dependencies. vLLM's own bench also
re-aligns its prompts against the server's ``/tokenize`` when they disagree.

Method (vLLM's, on a token pool): ids ``pool[(offset + i + k) % len(pool)]`` with a
seeded offset per request, decoded to text, re-encoded, and truncated or extended
until the server counts exactly ``input_len`` prompt tokens — for ``completions``
with the special tokens the server adds (BOS), for ``chat`` the templated messages.
The pool is the tokens of a fixed plain-text corpus rather than the whole vocabulary
(the server does not publish its vocabulary size); plain word tokens also re-encode
stably, so a prompt converges in one or two rounds.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from variantctl import jsondepth
from variantctl.bench import tools_prompt
from variantctl.bench.client import read_bounded, redirect_detail
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonMapping, JsonObject

SHORT = "Write a short story about a lighthouse keeper who finds a message in a bottle."

_CORPUS = (
    "the quick brown fox jumps over the lazy dog while a small river runs past old "
    "stone houses where people make bread cheese and wine every morning before the sun "
    "comes up over green hills and quiet fields of wheat corn and barley many children "
    "walk to school along the road singing songs about the sea the mountains the city "
    "and the long winter nights when stars shine bright above the frozen lake history "
    "science music language number garden window table paper letter market station "
    "engine system network server memory process thread signal value result question "
    "answer reason method model object figure measure report record summer autumn "
    "spring morning evening yellow purple orange silver golden wooden northern southern"
)

_MAX_ROUNDS = 12


@dataclass(frozen=True)
class Prompt:
    """One request's prompt: text or messages (chat), text or ids (completions)."""

    content: str | Sequence[int] | Sequence[JsonMapping]
    extra: JsonObject = field(default_factory=dict)  # e.g. tools, tool_choice
    expected_tokens: int | None = None  # exact for random prompts
    output_len: int | None = None  # a dataset's own output length (None: --output-len)
    at_s: float | None = None  # a trace's arrival, seconds from its first request


def _file_error(path: Path, line: int | None, message: str) -> VariantctlError:
    where = f"{path}:{line}" if line is not None else str(path)
    return VariantctlError(f"{where}: {message}", exit_code=ExitCode.USAGE)


def load_file(path: Path) -> list[Prompt]:
    """A prompt FILE: ``.jsonl`` (one JSON string, ``{"prompt": ...}`` or
    ``{"messages": [...]}`` per line) or any other text file as one prompt."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise _file_error(path, None, "no such prompt file (--prompt takes short, tools, "
                          "random or a file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _file_error(path, None, f"cannot read prompt file: {exc}") from None
    if path.suffix != ".jsonl":
        if not text.strip():
            raise _file_error(path, None, "the prompt file is empty")
        return [Prompt(text)]
    prompts: list[Prompt] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = jsondepth.loads(line)
        except ValueError as exc:
            raise _file_error(path, lineno, f"not JSON: {exc}") from None
        if isinstance(item, str):
            prompts.append(Prompt(item))
        elif isinstance(item, dict) and isinstance(item.get("prompt"), str):
            prompts.append(Prompt(item["prompt"]))
        elif isinstance(item, dict) and isinstance(item.get("messages"), list):
            prompts.append(Prompt(item["messages"]))
        else:
            raise _file_error(path, lineno,
                              'expected a string, {"prompt": "..."} or {"messages": [...]}')
    if not prompts:
        raise _file_error(path, None, "the prompt file holds no prompts")
    return prompts


def builtin(kind: str, endpoint: str, index: int) -> Prompt:
    """``short`` or ``tools`` for request ``index`` (deterministic)."""
    if kind == "short":
        return Prompt(SHORT)
    question = tools_prompt.QUESTIONS[index % len(tools_prompt.QUESTIONS)]
    if endpoint == "chat":
        return Prompt(
            [{"role": "system", "content": tools_prompt.SYSTEM},
             {"role": "user", "content": question}],
            extra={"tools": tools_prompt.tools(), "tool_choice": "auto"},
        )
    # /v1/completions has no tools field: the same prefix, as text.
    schema = json.dumps(tools_prompt.tools(), separators=(",", ":"))
    return Prompt(f"{tools_prompt.SYSTEM}\n\nTools:\n{schema}\n\nUser: {question}\nAssistant:")


#: the largest /tokenize or /detokenize answer read (a 10M-token prompt's ids: ~90 MB)
MAX_TOKENIZER_BODY = 128 * 1024 * 1024


class Tokenizer:
    """The server's tokenizer over HTTP (``/tokenize``, ``/detokenize``)."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, model: str):
        self._session = session
        self._base = base_url
        self._model = model

    async def _post(self, path: str, body: JsonObject) -> dict[str, Any]:  # the answer: JSON
        url = self._base + path
        try:
            async with self._session.post(url, json={"model": self._model, **body},
                                          allow_redirects=False) as r:
                if 300 <= r.status < 400:
                    raise VariantctlError(f"{url}: HTTP {r.status}: {redirect_detail(r)}",
                                          exit_code=ExitCode.FAILED)
                raw, more = await read_bounded(r.content, MAX_TOKENIZER_BODY)
                if r.status != 200:
                    text = " ".join(raw[:200].decode("utf-8", "replace").split())
                    raise VariantctlError(
                        f"{url}: HTTP {r.status} ({text}); --prompt random needs the "
                        "server's /tokenize and /detokenize endpoints (vLLM has them)",
                        exit_code=ExitCode.FAILED)
                if more:
                    raise VariantctlError(
                        f"{url}: answered more than {MAX_TOKENIZER_BODY // (1024 * 1024)} MiB "
                        "(not read further)", exit_code=ExitCode.FAILED)
                data = json.loads(raw)
        except aiohttp.ClientError as exc:
            raise VariantctlError(f"{url}: {exc}", exit_code=ExitCode.UNREACHABLE) from None
        except (ValueError, RecursionError):
            raise VariantctlError(f"{url}: the answer is not JSON the tokenizer API sends",
                                  exit_code=ExitCode.FAILED) from None
        if not isinstance(data, dict):
            raise VariantctlError(f"{url}: the answer is not a JSON object",
                                  exit_code=ExitCode.FAILED)
        return data

    def _field(self, path: str, data: dict[str, Any], key: str, ok: bool) -> Any:
        """``data[key]`` when ``ok`` says it has the expected type, else an error naming
        the field (a server's answer is untrusted)."""
        if not ok:
            raise VariantctlError(
                f"{self._base}{path}: the answer's {key!r} is missing or not what vLLM "
                "sends", exit_code=ExitCode.FAILED)
        return data[key]

    async def encode(self, text: str, *, special: bool) -> list[int]:
        data = await self._post("/tokenize", {"prompt": text, "add_special_tokens": special})
        tokens = data.get("tokens")
        return list(self._field("/tokenize", data, "tokens", isinstance(tokens, list) and all(
            isinstance(t, int) and not isinstance(t, bool) for t in tokens)))

    async def count_chat(self, messages: Sequence[JsonMapping]) -> int:
        data = await self._post("/tokenize", {"messages": messages,
                                              "add_generation_prompt": True})
        count = data.get("count")
        return int(self._field("/tokenize", data, "count", isinstance(count, int)
                               and not isinstance(count, bool) and count >= 0))

    async def decode(self, ids: list[int]) -> str:
        data = await self._post("/detokenize", {"tokens": ids})
        return str(self._field("/detokenize", data, "prompt",
                               isinstance(data.get("prompt"), str)))


async def corpus_pool(tok: Tokenizer) -> list[int]:
    """The token ids random prompts are drawn from (a plain-text corpus's tokens)."""
    return sorted(set(await tok.encode(_CORPUS, special=False)))


async def random_prompts(
    tok: Tokenizer, *, n: int, input_len: int, endpoint: str, seed: int
) -> list[Prompt]:
    """``n`` prompts of exactly ``input_len`` prompt tokens as the server counts them."""
    pool = await corpus_pool(tok)
    if endpoint == "chat":
        overhead = await tok.count_chat([{"role": "user", "content": ""}])
    else:
        overhead = len(await tok.encode("", special=True))
    if input_len <= overhead:
        raise VariantctlError(
            f"--input-len {input_len} is too small: the server adds {overhead} token(s) "
            f"to every {endpoint} prompt", exit_code=ExitCode.USAGE)
    rng = random.Random(seed)
    offsets = [rng.randrange(len(pool)) for _ in range(n)]
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> Prompt:
        async with sem:
            return await _exact(tok, pool, offsets[i] + i, input_len, overhead, endpoint)

    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def _exact(tok: Tokenizer, pool: list[int], start: int, target: int, overhead: int,
                 endpoint: str) -> Prompt:
    want = target - overhead
    ids = [pool[(start + k) % len(pool)] for k in range(want)]
    extra_at = start + want
    for _ in range(_MAX_ROUNDS):
        text = await tok.decode(ids)
        if endpoint == "chat":
            count = await tok.count_chat([{"role": "user", "content": text}])
        else:
            count = len(await tok.encode(text, special=True))
        if count == target:
            return Prompt(text, expected_tokens=target)
        ids = await tok.encode(text, special=False)
        if count > target:
            ids = ids[: max(1, len(ids) - (count - target))]
        else:
            more = target - count
            ids = ids + [pool[(extra_at + k) % len(pool)] for k in range(more)]
            extra_at += more
    raise VariantctlError(
        f"could not build a prompt of exactly {target} tokens with the server's tokenizer "
        f"(last: {count}); use --prompt FILE", exit_code=ExitCode.FAILED)
