"""Shared prefixes and conversations: ``--prefix-len N --prefixes K`` (vLLM's
prefix-repetition workload) and ``--turns T`` (multi-turn chat).

Every prompt starts with one of K prefixes of N tokens (request i gets prefix i mod K),
then the prompt ``--prompt`` would have sent on its own. The prefixes are built with the
server's tokenizer like random prompts (``prompts._exact``: N tokens as the server counts
them without special tokens), each from its own place in the token pool, so two
prefixes differ from their first token: the server's prefix cache can only hit on a
prefix another request sent before. The level's ``/metrics`` hit rate
(``server_metrics.prefix_cache_hit_rate``) shows what the cache made of it.

``--turns T``: requests ``T·j … T·j + T−1`` are conversation j. Turn t sends the whole
history so far — the user messages of turns 0…t (the prompts ``--prompt`` gives, in
order) with, between them, the replies the server actually streamed on turns 0…t−1
(:func:`with_replies` fills them in when the turn is sent; the runner holds the replies
of open conversations only) — so turn t's prompt is turn t−1's prompt, the server's
reply and the next user message: the prefix cache's real multi-turn case. The runner sends
the turns of one conversation in order, one after the other, and runs conversations in
parallel up to the concurrency (a conversation holds its slot from its first turn to
its last).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from variantctl.bench.prompts import Prompt, Tokenizer, _exact, corpus_pool


async def shared_prefixes(tok: Tokenizer, *, k: int, n_tokens: int, seed: int) -> list[str]:
    """``k`` distinct prefix texts of ``n_tokens`` tokens each."""
    pool = await corpus_pool(tok)
    overhead = len(await tok.encode("", special=True))
    rng = random.Random(f"prefix-{seed}")
    starts = rng.sample(range(len(pool)), min(k, len(pool)))
    while len(starts) < k:  # more prefixes than pool tokens: later ones start further on
        starts.append(rng.randrange(len(pool)) + len(pool) * len(starts))
    out = []
    for j in range(k):
        p = await _exact(tok, pool, starts[j], n_tokens + overhead, overhead, "completions")
        assert isinstance(p.content, str)
        out.append(p.content)
    return out


def with_prefix(prompt: Prompt, prefix: str) -> Prompt:
    """``prompt`` led by ``prefix`` (a chat prompt: its first message's text)."""
    content = prompt.content
    if isinstance(content, str):
        return replace(prompt, content=f"{prefix} {content}", expected_tokens=None)
    if content and isinstance(content[0], dict):
        first = dict(content[0])
        first["content"] = f"{prefix} {first.get('content') or ''}"
        return replace(prompt, content=[first, *content[1:]], expected_tokens=None)
    raise ValueError("token-id prompts (a trace) carry their own shared blocks")


@dataclass(frozen=True)
class Turn:
    """Where a request sits in its conversation."""

    conversation: int
    turn: int
    last: bool


def conversations(plist: list[Prompt], turns: int) -> list[tuple[Prompt, Turn]]:
    """``plist`` as conversations of ``turns`` turns, each turn carrying the history; the
    assistant messages are empty until :func:`with_replies` puts the server's in."""
    out: list[tuple[Prompt, Turn]] = []
    n = len(plist)
    for start in range(0, n, turns):
        history: list[dict[str, str]] = []
        length = min(turns, n - start)
        for t in range(length):
            p = plist[start + t]
            if not isinstance(p.content, str):
                raise ValueError("--turns needs text prompts (short, random or a dataset "
                                 "of text), not chat messages or token ids")
            if history:
                history.append({"role": "assistant", "content": ""})
            history.append({"role": "user", "content": p.content})
            out.append((replace(p, content=[dict(m) for m in history], expected_tokens=None),
                        Turn(start // turns, t, t == length - 1)))
    return out


def with_replies(body: bytes, replies: Sequence[str]) -> bytes:
    """A turn's request body with its assistant messages, in order, set to ``replies``
    (the text the server streamed on the conversation's earlier turns)."""
    payload = json.loads(body)
    k = 0
    for m in payload["messages"]:
        if m.get("role") == "assistant" and k < len(replies):
            m["content"] = replies[k]
            k += 1
    return json.dumps(payload).encode()
