"""The committed table of vLLM's own message templates (``scripts/vllm_messages.json``,
written by ``scripts/mine_vllm_messages.py --write-table`` from every minor release 0.5 to
the newest): every shipped signature (and phase marker) still matches each wording it was
written for, in each release that prints it. No network: the table is read as committed."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from variantctl.config.catalog import default_catalog
from variantctl.removed_args import REMOVED_ARGS, removed

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"
TABLE: dict[str, Any] = json.loads((SCRIPTS / "vllm_messages.json").read_text("utf-8"))


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mine_vllm_messages",
                                                  SCRIPTS / "mine_vllm_messages.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


MOD = _script()
ENTRIES = TABLE["messages"]


def test_the_table_covers_every_minor_release_through_the_newest() -> None:
    minors = {tuple(int(x) for x in r.split(".post")[0].split(".")[:2])
              for r in TABLE["releases"]}
    assert {(0, m) for m in range(5, 35)} <= minors
    assert set(TABLE["releases"]) == set(MOD.DEFAULT_RELEASES)
    # every signature anchor found its wording somewhere (a renamed message would vanish)
    assert {e["signature"] for e in ENTRIES} == set(MOD.ANCHORS)


@pytest.mark.parametrize("entry", ENTRIES, ids=[f"{e['signature']}@{e['first']}"
                                               for e in ENTRIES])
def test_each_wording_is_matched_in_every_release_that_has_it(entry: dict[str, Any]) -> None:
    catalog = default_catalog()
    wording = MOD.Wording("table", 0, entry["template"])
    assert entry["releases"][0] == entry["first"] and entry["releases"][-1] == entry["last"]
    for release in entry["releases"]:
        text = wording.filled(tuple(entry["samples"]))
        assert MOD.matches(catalog, entry["signature"], text), (release, text)


def test_the_removed_argument_table_names_the_releases() -> None:
    assert removed("--num-scheduler-steps") == ("0.9.2", "0.10.2")
    assert removed("num_scheduler_steps=4") == ("0.9.2", "0.10.2")
    assert removed("--max-model-len") is None
    releases = set(MOD.DEFAULT_RELEASES)
    assert all(last in releases and gone in releases for last, gone in REMOVED_ARGS.values())
