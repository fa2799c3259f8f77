"""The roofline arithmetic on the tiny Llama's shape, checked against hand-computed numbers."""

from __future__ import annotations

import json

import pytest

from tests.unit.report.builders import level, record, result
from variantctl.report.build import build
from variantctl.report.model import Peaks, ReportInput, RunInput
from variantctl.report.roofline import (
    bytes_per_step,
    flops_per_token,
    parse_model_shape,
    roofline,
)

TINY = json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
                   "intermediate_size": 512, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512,
                   "torch_dtype": "bfloat16"})


def test_shape_from_config_json() -> None:
    m = parse_model_shape(TINY, "tiny/config.json")
    assert m is not None
    assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads, m.head_dim,
            m.dtype_bytes) == (256, 2, 4, 2, 64, 2)
    f32 = parse_model_shape(TINY, "x", dtype="float32")
    assert f32 is not None and f32.dtype_bytes == 4
    assert parse_model_shape("{}", "x") is None
    assert parse_model_shape("not json", "x") is None


def test_moe_counts_the_experts_a_token_uses() -> None:
    moe = json.loads(TINY) | {"num_experts": 8, "num_experts_per_tok": 2,
                              "moe_intermediate_size": 128}
    m = parse_model_shape(json.dumps(moe), "x")
    assert m is not None and m.intermediate_size == 8 * 128 and m.active_expert_fraction == 0.25


def test_flops_bytes_oi_and_attainment_by_hand() -> None:
    m = parse_model_shape(TINY, "x")
    assert m is not None
    # per layer: attention 256·(256+2·128) + 256·256 = 196608, MLP 3·256·512 = 393216;
    # 2 layers + lm_head 512·256 = 1310720 parameters
    assert flops_per_token(m, 40) == 2 * 1310720 + 4 * 2 * 4 * 64 * 40  # 2703360
    assert bytes_per_step(m, 1, 40) == (1310720 + 40 * 2 * 2 * 2 * 64) * 2  # 2662400
    r = roofline(m, Peaks(bandwidth_gbs=100, tflops=10), concurrency=1, context=40,
                 agg_tps=20.0)
    assert r.oi == pytest.approx(2703360 / 2662400)
    assert r.ridge == pytest.approx(100.0)
    assert r.bound == "memory"
    assert r.ceiling_tflops == pytest.approx(r.oi * 100e9 / 1e12)
    assert r.achieved_tflops == pytest.approx(20 * 2703360 / 1e12)
    assert r.attainment == pytest.approx(r.achieved_tflops / r.ceiling_tflops)
    assert r.achieved_bandwidth_gbs == pytest.approx(20 * 2662400 / 1e9)
    # two GPUs double both ceilings; a big batch turns compute-bound
    two = roofline(m, Peaks(100, 10, count=2), 1, 40, 20.0)
    assert two.ceiling_tflops == pytest.approx(2 * r.ceiling_tflops)
    big = roofline(m, Peaks(100, 0.01), 256, 40, 20.0)
    assert big.bound == "compute" and big.ceiling_tflops == pytest.approx(0.01)


def test_roofline_section_only_for_hosts_that_declare_peaks() -> None:
    m = parse_model_shape(TINY, "x")
    assert m is not None
    run = RunInput(record("aaaaaaaaaa-1", "cpu-eager", host="cpu"), (("b.json", result([
        level(1, agg=20.0, ttft_p90_ms=100, tps_p10=20, tps_p50=20)], input_len=32,
        output_len=16)),))
    plain = build(ReportInput("R", (run,), models={run.run_id: m}))
    assert "Roofline" not in [s.title for s in plain.sections]
    doc = build(ReportInput("R", (run,), peaks={"cpu": Peaks(100, 10, 1, "test")},
                            models={run.run_id: m}))
    (roof,) = [s for s in doc.sections if s.title == "Roofline"]
    (row,) = roof.tables[0].rows
    # context = 32 prompt + 16 / 2 output tokens = 40: the numbers above
    expected = roofline(m, Peaks(100, 10), 1, 40, 20.0)
    assert row[:6] == ("cpu-eager", "1", "1 (declared)", f"{expected.oi:.2f}", "100.0",
                       "memory")
    assert row[-1] == f"{100 * expected.attainment:.1f}"
    no_model = build(ReportInput("R", (run,), peaks={"cpu": Peaks(100, 10)}))
    (roof,) = [s for s in no_model.sections if s.title == "Roofline"]
    assert "config.json could not be read" in roof.paragraphs[1]
