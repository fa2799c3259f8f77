"""The second seed's roofline figures from a model's ``config.json`` (PURE).

Per decode step at concurrency ``c`` the server reads every weight it uses once and
each sequence's KV cache, and does ``2 × active parameters`` FLOPs per token plus the
attention over the context. Operational intensity (OI) is FLOPs / bytes of one
step; the ceiling is ``min(peak FLOPs, OI × peak bandwidth)`` (summed over the GPUs
the model runs on) and *ceiling attainment* is the measured FLOP rate
(aggregate output TPS × FLOPs per token) over that ceiling. The ridge point
(peak FLOPs / peak bandwidth) says whether a point is memory- or compute-bound.
A first-order model, like the seed's: no activations, no prefill, no overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from variantctl.report.model import ModelShape, Peaks
from variantctl.variants.modelinfo import config_mapping

_DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2,
                "float8": 1, "fp8": 1, "int8": 1}


def _int(data: Mapping[str, object], *keys: str) -> int | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def parse_model_shape(text: str, source: str, dtype: str | None = None) -> ModelShape | None:
    """The shape of a Hugging Face ``config.json`` text; None when it lacks the numbers.

    ``dtype`` (the variant's ``--dtype``) wins over the file's ``torch_dtype``; MoE
    configs (``num_experts_per_tok``) count the experts a token uses.
    """
    data = config_mapping(text)
    if data is None:
        return None
    hidden = _int(data, "hidden_size", "n_embd", "d_model")
    layers = _int(data, "num_hidden_layers", "n_layer", "num_layers")
    heads = _int(data, "num_attention_heads", "n_head")
    vocab = _int(data, "vocab_size")
    if None in (hidden, layers, heads, vocab):
        return None
    assert hidden and layers and heads and vocab
    kv = _int(data, "num_key_value_heads") or heads
    head_dim = _int(data, "head_dim") or hidden // heads
    inter = _int(data, "intermediate_size", "n_inner") or 4 * hidden
    fraction = 1.0
    top_k = _int(data, "num_experts_per_tok")
    experts = _int(data, "num_experts", "num_local_experts", "n_routed_experts")
    if top_k and experts:
        inter = _int(data, "moe_intermediate_size") or inter
        fraction = top_k / experts
        inter *= experts  # every expert's weights; ``fraction`` of them per token
    name = dtype if dtype and dtype != "auto" else str(data.get("torch_dtype") or
                                                        data.get("dtype") or "bfloat16")
    return ModelShape(
        source=source, hidden_size=hidden, num_layers=layers, intermediate_size=inter,
        vocab_size=vocab, num_heads=heads, num_kv_heads=kv, head_dim=head_dim,
        dtype_bytes=_DTYPE_BYTES.get(name.lower(), 2),
        tie_embeddings=bool(data.get("tie_word_embeddings", False)),
        active_expert_fraction=fraction,
    )


@dataclass(frozen=True)
class RooflinePoint:
    concurrency: int
    context: float  # mean tokens in context during decode
    oi: float  # FLOPs per byte of one decode step
    ridge: float  # peak FLOPs / peak bandwidth
    bound: str  # "memory" | "compute"
    achieved_tflops: float
    ceiling_tflops: float
    achieved_bandwidth_gbs: float
    attainment: float  # achieved / ceiling


def _per_layer(m: ModelShape) -> tuple[float, float]:
    """(attention weights, MLP weights) of one layer, in parameters."""
    q = m.num_heads * m.head_dim
    kv = m.num_kv_heads * m.head_dim
    attn = m.hidden_size * (q + 2 * kv) + q * m.hidden_size
    mlp = 3.0 * m.hidden_size * m.intermediate_size  # gated MLP: gate, up, down
    return attn, mlp


def flops_per_token(m: ModelShape, context: float) -> float:
    attn, mlp = _per_layer(m)
    active = m.num_layers * (attn + mlp * m.active_expert_fraction) + m.vocab_size * m.hidden_size
    # QK^T and softmax·V over the context: 2 × 2 × heads × head_dim × context per layer
    attention = 4.0 * m.num_layers * m.num_heads * m.head_dim * context
    return 2.0 * active + attention


def bytes_per_step(m: ModelShape, concurrency: int, context: float) -> float:
    attn, mlp = _per_layer(m)
    # MoE: the experts a step touches (at most all), not only one token's
    touched = min(1.0, m.active_expert_fraction * concurrency)
    weights = m.num_layers * (attn + mlp * touched) + m.vocab_size * m.hidden_size
    kv = concurrency * context * m.num_layers * 2 * m.num_kv_heads * m.head_dim
    return (weights + kv) * m.dtype_bytes


def roofline(m: ModelShape, peaks: Peaks, concurrency: int, context: float,
             agg_tps: float, gpus: int | None = None) -> RooflinePoint:
    """One point's figures; ``gpus`` (the GPUs sampled) overrides the declared count."""
    n = gpus or peaks.count
    peak_flops = peaks.tflops * 1e12 * n
    peak_bw = peaks.bandwidth_gbs * 1e9 * n
    f_tok = flops_per_token(m, context)
    step_bytes = bytes_per_step(m, concurrency, context)
    oi = concurrency * f_tok / step_bytes
    ridge = peak_flops / peak_bw
    ceiling = min(peak_flops, oi * peak_bw)
    achieved = agg_tps * f_tok
    bandwidth = (agg_tps / concurrency) * step_bytes if concurrency else 0.0
    return RooflinePoint(
        concurrency=concurrency, context=context, oi=oi, ridge=ridge,
        bound="memory" if oi < ridge else "compute",
        achieved_tflops=achieved / 1e12, ceiling_tflops=ceiling / 1e12,
        achieved_bandwidth_gbs=bandwidth / 1e9,
        attainment=achieved / ceiling if ceiling else 0.0,
    )
