"""The source-mined table (scripts/mine_vllm_messages.py) over a cached subset of real vLLM
wheels: every signature matches every wording of its message in those releases.

The wheels live in ``$VARIANTCTL_CACHE/wheels`` (never committed); the two small, old
releases used here are downloaded there with ``pip download --no-deps`` when missing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.cachelock import wheel_cache_lock

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "mine_vllm_messages.py"
#: small early releases (25-40 MB): the unversioned engine config line era of 0.2-0.3
RELEASES = ("0.2.0", "0.3.0")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mine_vllm_messages", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rows() -> list[dict[str, object]]:
    mod = _script()
    with wheel_cache_lock(mod.cache_dir()):
        return list(mod.mine(RELEASES))


def test_every_mined_wording_is_matched(rows: list[dict[str, object]]) -> None:
    assert not [r for r in rows if r["status"] == "no wheel"], "wheel download failed"
    bad = [r for r in rows if r["status"] == "NO MATCH"]
    assert not bad, bad


def test_the_table_finds_the_real_messages(rows: list[dict[str, object]]) -> None:
    found = {(r["signature"], r["release"]) for r in rows if r["status"] == "match"}
    for release in RELEASES:
        for sig in ("batched-tokens-below-model-len", "tp-heads-not-divisible",
                    "dtype-unsupported-gpu", "kv-cache-insufficient", "phase:engine-config"):
            assert (sig, release) in found
    # 0.2's engine config line has no "(vX)": the phase pattern must not require it
    wording = next(str(r["wording"]) for r in rows
                   if r["signature"] == "phase:engine-config" and r["release"] == "0.2.0")
    assert "(v" not in wording


def test_platform_variants_of_the_same_failure(rows: list[dict[str, object]]) -> None:
    platform = {str(r["release"]) for r in rows if str(r["release"]).startswith("platform")
                and r["status"] == "match"}
    assert {"platform ROCm/HIP", "platform Ascend NPU", "platform Intel XPU",
            "platform macOS", "platform Linux"} <= platform


def test_template_extraction_handles_fstrings_percent_and_concatenation() -> None:
    import ast

    mod = _script()
    tree = ast.parse(
        'raise ValueError(f"heads ({a}) must be divisible by tp ({b}).")\n'
        'logger.info("Graph capturing finished in %.0f secs.", t)\n'
        'raise RuntimeError("No available memory " "for the cache blocks.")\n'
        'raise ValueError("x (%d) y" % n)\n')
    got = sorted(t for _, t in mod.templates(tree))
    assert got == sorted(["heads ({}) must be divisible by tp ({}).",
                          "Graph capturing finished in {} secs.",
                   "No available memory for the cache blocks.", "x ({}) y"])
