"""Flag names, aliases and which vLLM versions know which flags (data, not logic).

The tables come from the released wheels (``vllm-facts.md`` §4) and, where a
boundary between 0.10.2 and 0.33 was unknown there, from the real 0.32.0 CPU
build: ``--max-seq-len-to-capture`` and ``VLLM_ATTENTION_BACKEND`` are already
gone in 0.32.0 and ``--attention-backend`` is already there.
"""

from __future__ import annotations

import re

#: short spellings vLLM accepts, normalised so inheritance and diff see one key
ALIASES: dict[str, str] = {
    "tp": "tensor-parallel-size",
    "pp": "pipeline-parallel-size",
    "dp": "data-parallel-size",
    "q": "quantization",
}

FLAG_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")

#: flags that are not ``args`` but top-level keys of a variant
RESERVED: dict[str, str] = {"model": "model", "port": "port"}


def normalise_flag(raw: str) -> str:
    """``-tp`` / ``tp`` -> ``tensor-parallel-size``; ``max_model_len`` -> ``max-model-len``."""
    name = raw.lstrip("-").replace("_", "-")
    return ALIASES.get(name, name)


def flag_problem(name: str) -> str | None:
    """Why ``name`` (normalised) cannot be a flag, or None."""
    if not FLAG_NAME.fullmatch(name):
        return f"{name!r} is not a valid flag name (lower-case letters, digits and dashes)"
    if name.startswith("no-"):
        return f"write `{name[3:]}: false` instead of `{name}`"
    if name in RESERVED:
        return f"set the top-level `{RESERVED[name]}` key instead of args.{name}"
    return None


Version = tuple[int, ...]


def parse_version(text: str) -> Version:
    """``0.6.3.post1`` -> (0, 6, 3); ``0.33`` -> (0, 33, 0)."""
    parts: list[int] = []
    for piece in text.split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts[:3])


VERSION_PATTERN = r"\d+\.\d+(\.\d+)?([.+-]?[A-Za-z0-9.+-]*)?"

#: flag -> (first version that has it, first version that no longer has it); None = open
FLAG_VERSIONS: dict[str, tuple[str | None, str | None]] = {
    "num-scheduler-steps": (None, "0.10.2"),
    "max-seq-len-to-capture": (None, "0.32.0"),
    "enable-auto-tool-choice": ("0.6.0", None),
    "tool-call-parser": ("0.6.0", None),
    "reasoning-parser": ("0.7.3", None),
    "attention-backend": ("0.32.0", None),
}

#: environment variable -> (first version that reads it, first that ignores it)
ENV_VERSIONS: dict[str, tuple[str | None, str | None]] = {
    "VLLM_ATTENTION_BACKEND": (None, "0.32.0"),
}

#: boolean engine flags that argparse.BooleanOptionalAction makes negatable (``--no-x``)
NEGATABLE_FLAGS = frozenset(
    {
        "enforce-eager",
        "enable-chunked-prefill",
        "enable-prefix-caching",
        "disable-custom-all-reduce",
        "trust-remote-code",
    }
)
NEGATABLE_SINCE = "0.9.2"


def in_range(version: str, span: tuple[str | None, str | None]) -> bool:
    """Whether ``version`` lies in ``[since, until)``."""
    v = parse_version(version)
    since, until = span
    if since is not None and v < parse_version(since):
        return False
    return not (until is not None and v >= parse_version(until))


def is_negatable(flag: str, version: str | None) -> bool:
    """``--no-<flag>`` exists (unknown versions are taken as current releases)."""
    if flag not in NEGATABLE_FLAGS:
        return False
    return version is None or parse_version(version) >= parse_version(NEGATABLE_SINCE)


def describe_span(span: tuple[str | None, str | None]) -> str:
    since, until = span
    if since and until:
        return f"from {since} until before {until}"
    if since:
        return f"from {since} on"
    if until:
        return f"only before {until}"
    return "in every version"


#: spellings of attention backends in error messages and docs -> the env enum name
BACKEND_ALIASES: dict[str, str] = {
    "flash-attn": "FLASH_ATTN",
    "flash_attn": "FLASH_ATTN",
    "rocm-flash-attn": "ROCM_FLASH",
    "flashinfer": "FLASHINFER",
    "xformers": "XFORMERS",
    "torch-sdpa": "TORCH_SDPA",
}


def normalise_backend(raw: str) -> str:
    """``flash-attn`` / ``FLASH_ATTN`` -> ``FLASH_ATTN`` (the VLLM_ATTENTION_BACKEND name)."""
    return BACKEND_ALIASES.get(raw.lower(), raw.upper().replace("-", "_"))
