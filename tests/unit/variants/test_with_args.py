"""Derived variants (a sweep's grid points): values set over a resolved variant, with origins."""

from __future__ import annotations

from pathlib import Path

from variantctl.config.hosts import builtin_local
from variantctl.config.variants import load_catalog
from variantctl.variants.diff import diff_variants
from variantctl.variants.render import render_argv
from variantctl.variants.resolve import resolve

REPO = Path(__file__).resolve().parents[3]


def test_with_args_sets_removes_and_records_origins() -> None:
    base = resolve(load_catalog(REPO / "variants"), "full-parser")
    point = base.with_args(
        {"max-num-seqs": 4, "num_scheduler_steps": 4, "enforce-eager": None},
        env={"VLLM_ATTENTION_BACKEND": "FLASHINFER"},
        origin="sweep seed-grid grid",
        name="full-parser@seqs4",
    )
    assert point.args["max-num-seqs"] == 4
    assert point.args["num-scheduler-steps"] == 4  # normalised like a variant file's keys
    assert "enforce-eager" not in point.args
    assert point.env["VLLM_ATTENTION_BACKEND"] == "FLASHINFER"
    assert point.origins["args.max-num-seqs"] == "sweep seed-grid grid"
    assert point.origins["env.VLLM_ATTENTION_BACKEND"] == "sweep seed-grid grid"
    # untouched values keep the file:line they came from
    assert point.origins["args.tensor-parallel-size"] == base.origins["args.tensor-parallel-size"]
    assert point.name == "full-parser@seqs4" and point.parents == ("full-parser",)
    # the base is unchanged (frozen values)
    assert base.args["max-num-seqs"] == 2 and "enforce-eager" in base.args
    changed = {(c.group, c.key) for c in diff_variants(base, point)}
    assert {("args", "max-num-seqs"), ("args", "num-scheduler-steps"),
            ("args", "enforce-eager"), ("env", "VLLM_ATTENTION_BACKEND")} <= changed
    argv = render_argv(point, builtin_local())
    words = " ".join(argv)
    assert any(f in words for f in ("--max-num-seqs=4", "--max-num-seqs 4"))
    assert any(f in words for f in ("--num-scheduler-steps=4", "--num-scheduler-steps 4"))
    assert "--enforce-eager" not in argv
