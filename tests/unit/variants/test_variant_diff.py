"""diff: grouped added / removed / changed settings, on the seed catalog and small cases."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.unit.variants.conftest import write_project
from variantctl.config.variants import Catalog, load_catalog
from variantctl.variants.diff import UNSET, Change, diff_variants, summarise
from variantctl.variants.resolve import resolve

MakeCatalog = Callable[..., Catalog]
REPO = Path(__file__).resolve().parents[3]


def seed() -> Catalog:
    return load_catalog(REPO / "variants", {})


def test_seed_flashinfer_differs_only_in_the_backend_env() -> None:
    cat = seed()
    flashinfer, len4096 = resolve(cat, "sched4-flashinfer"), resolve(cat, "sched4-nochunk-len4096")
    changes = diff_variants(flashinfer, len4096)
    assert changes == [Change("env", "VLLM_ATTENTION_BACKEND", "FLASHINFER", UNSET)]
    back = diff_variants(len4096, flashinfer)
    assert [c.to_dict() for c in back] == [{"group": "env", "key": "VLLM_ATTENTION_BACKEND",
                                            "kind": "added", "a": None, "b": "FLASHINFER"}]


def test_seed_parser_off_removes_three_flags() -> None:
    cat = seed()
    changes = diff_variants(resolve(cat, "full-parser"), resolve(cat, "parser-off"))
    assert [(c.group, c.key, c.kind) for c in changes] == [
        ("args", "enable-auto-tool-choice", "removed"),
        ("args", "tool-call-parser", "removed"),
        ("args", "reasoning-parser", "removed"),
    ]


def test_every_group_added_removed_changed(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({
        "a.yaml": """
            host: h1
            port: 8000
            model: /m
            args: {keep: 1, change: 1, drop: x, lst: [a, b]}
            env: {E1: a, GONE: x}
            requires: [p1]
            expect: {enforce_eager: true}
            startup: {stall: 10}
        """,
        "b.yaml": """
            host: h2
            port: 8001
            command: vllm serve
            model: /m
            args: {keep: 1, change: 2, lst: [a, c], new: true}
            env: {E1: b}
            requires: [p1, p2]
            expect: {enforce_eager: false}
            startup: {stall: 10}
            vllm_version: 0.6.3
        """,
    })
    changes = diff_variants(resolve(cat, "a"), resolve(cat, "b"))
    got = [(c.group, c.key, c.kind, c.old, c.new) for c in changes]
    assert got == [
        ("host", None, "changed", "h1", "h2"),
        ("port", None, "changed", 8000, 8001),
        ("command", None, "changed", ["python", "-m", "vllm.entrypoints.openai.api_server"],
         ["vllm", "serve"]),
        ("args", "change", "changed", 1, 2),
        ("args", "drop", "removed", "x", UNSET),
        ("args", "lst", "changed", ["a", "b"], ["a", "c"]),
        ("args", "new", "added", UNSET, True),
        ("env", "E1", "changed", "a", "b"),
        ("env", "GONE", "removed", "x", UNSET),
        ("requires", None, "changed", ["p1"], ["p1", "p2"]),
        ("expect", "enforce_eager", "changed", True, False),
        ("vllm_version", None, "changed", None, "0.6.3"),
    ]
    assert summarise(changes)[:4] == ["host h1→h2", "port 8000→8001",
                                      "command python -m vllm.entrypoints.openai.api_server→"
                                      "vllm serve", "change 1→2"]
    assert "+--new" in summarise(changes) and "-drop" in summarise(changes)
    assert "+requires p2" in summarise(changes) and "-GONE" in summarise(changes)


def test_identical_and_type_only_changes(make_catalog: MakeCatalog) -> None:
    cat = make_catalog({"a.yaml": "args: {x: 1}\n", "b.yaml": "args: {x: '1'}\n",
                        "c.yaml": "extends: a\n"})
    assert diff_variants(resolve(cat, "a"), resolve(cat, "c")) == []
    assert diff_variants(resolve(cat, "a"), resolve(cat, "b")) == [Change("args", "x", 1, "1")]


def test_cli_diff_table_and_json(run_cli: Callable[..., object]) -> None:
    res = run_cli(["diff", "sched4-flashinfer", "sched4-nochunk-len4096"], project=REPO)
    assert res.code == 0  # type: ignore[attr-defined]
    lines = [ln.rstrip() for ln in res.stdout.splitlines()]  # type: ignore[attr-defined]
    assert lines[0].split() == ["SETTING", "sched4-flashinfer", "sched4-nochunk-len4096"]
    assert lines[1].split() == ["env", "VLLM_ATTENTION_BACKEND", "FLASHINFER", "→", "(unset)"]
    assert len(lines) == 2
    res = run_cli(["diff", "tp1", "tp2", "--format", "json"], project=REPO)
    assert json.loads(res.stdout) == {  # type: ignore[attr-defined]
        "a": "tp1", "b": "tp2",
        "changes": [{"group": "args", "key": "tensor-parallel-size", "kind": "changed",
                     "a": 1, "b": 2}]}


def test_cli_diff_of_identical_variants(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    project = write_project(tmp_path / "p", {"a.yaml": "port: 1\n", "b.yaml": "extends: a\n"})
    res = run_cli(["diff", "a", "b"], project=project)
    assert res.code == 0  # type: ignore[attr-defined]
    assert res.stdout == "a and b run the same server (no differences)\n"  # type: ignore[attr-defined]
