"""What a model's ``config.json`` says that pre-flight rules can use (PURE).

The facts are gathered by an executor (``variantctl.targets.modelfacts``: the
local disk for ``check``, the host for ``launch``); this module only reads the
JSON text, so rules stay testable without files.
"""

from __future__ import annotations

from dataclasses import dataclass

from variantctl.jsondepth import loads as depth_limited_loads
from variantctl.jsontypes import Json


@dataclass(frozen=True)
class ModelInfo:
    """The fields of a Hugging Face ``config.json`` that vLLM checks at start-up."""

    #: where it was read, e.g. ``local:/models/x/config.json``, for messages
    source: str
    num_attention_heads: int | None = None
    max_position_embeddings: int | None = None
    #: RoPE scaling changes the usable length; the length rule stands back then
    rope_scaling: bool = False
    architectures: tuple[str, ...] = ()


def _int(value: Json) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def config_mapping(text: str) -> dict[str, Json] | None:
    """A ``config.json`` text as one mapping, or None when it is not a JSON object.

    Multimodal configs keep the language model's numbers under ``text_config``; those
    fill in what the top level lacks. The one reader of config.json (pre-flight facts
    here, the report's roofline shape)."""
    try:
        # a model directory is untrusted: nesting past the limit is "not a config", not a
        # RecursionError (jsondepth raises a JSONDecodeError, a ValueError)
        data = depth_limited_loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    inner = data.get("text_config")
    if isinstance(inner, dict):
        return {**inner, **{k: v for k, v in data.items() if k != "text_config"}}
    return data


def parse_model_config(text: str, source: str) -> ModelInfo | None:
    """The facts of a ``config.json`` text, or None when it is not a JSON object.

    Multimodal configs keep the language model's numbers under ``text_config``;
    those are used when the top level has none.
    """
    merged = config_mapping(text)
    if merged is None:
        return None
    data = merged

    def pick(key: str) -> Json:
        return data.get(key)

    arch = data.get("architectures")
    return ModelInfo(
        source=source,
        num_attention_heads=_int(pick("num_attention_heads")),
        max_position_embeddings=_int(pick("max_position_embeddings")),
        rope_scaling=bool(pick("rope_scaling")),
        architectures=tuple(a for a in arch if isinstance(a, str)) if isinstance(arch, list)
        else (),
    )
