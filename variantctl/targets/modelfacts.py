"""Gather the facts of a model's ``config.json`` where the server will load it from.

``check`` reads models on this machine; ``launch`` reads them on the host, over
the same Target it starts the server with. A hub id (``Qwen/Qwen2.5-7B``) or a
directory that is not there gives no facts, and the rules that need them stand
back: pre-flight never downloads anything.
"""

from __future__ import annotations

import posixpath

from variantctl.errors import TargetError
from variantctl.targets.base import Target
from variantctl.variants.modelinfo import ModelInfo, parse_model_config

#: read at most this much of a config.json (they are a few KiB)
MAX_CONFIG_BYTES = 1 << 20


def read_model_info(target: Target, model: str | None) -> ModelInfo | None:
    """The facts of ``model``'s config.json on ``target``, or None when it has none."""
    if not model or not model.startswith(("/", "~", "./", "../")):
        return None
    directory = target.expand_user(model) if model.startswith("~") else model
    path = posixpath.join(directory, "config.json")
    try:
        st = target.stat(path)
        if st is None or st.size > MAX_CONFIG_BYTES:
            return None
        data = target.read_bytes(path)
    except TargetError:
        return None
    return parse_model_config(data.decode("utf-8", "replace"), f"{target.name}:{path}")
