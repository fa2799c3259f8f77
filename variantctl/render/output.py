"""Shared output helpers."""

from __future__ import annotations

import json
from typing import Any

from variantctl.env import Environment


def print_json(env: Environment, data: Any) -> None:
    """Write ``data`` as indented JSON to stdout, without rich markup or highlighting."""
    text = json.dumps(data, indent=2, sort_keys=False, default=str, ensure_ascii=False)
    env.stdout.file.write(text + "\n")
    env.stdout.file.flush()
