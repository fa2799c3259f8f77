"""Pre-flight rules: known vLLM constraints, checked before a five-minute model load.

One function per rule. Each finding names the failure signature (an id of the
log classifier's catalog) that the launch would end in, and why. The version
tables are data (``vllm-facts.md`` §3-4); a vendor build declares its backported
flags and its default/unavailable attention backends so the seed's own baseline
raises no false alarm.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.removed_args import removed
from variantctl.variants.flags import (
    ENV_VERSIONS,
    FLAG_VERSIONS,
    describe_span,
    in_range,
    is_negatable,
    normalise_backend,
    parse_version,
)
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.modelinfo import ModelInfo

if TYPE_CHECKING:
    from variantctl.hostmodel import Host

ERROR = "error"
WARNING = "warning"

# Signature ids of the log classifier's catalog that these rules predict.
SIG_BATCHED_TOKENS = "batched-tokens-below-model-len"
# the classifier's "xformers-multistep-unsupported" matches the message for any backend
SIG_MULTISTEP_BACKEND = "xformers-multistep-unsupported"
SIG_MULTISTEP_CHUNKED = "multistep-chunked-prefill-unsupported"
SIG_MULTISTEP_REMOVED = "multistep-removed"
SIG_MULTISTEP_V0_FALLBACK = "multistep-v0-fallback"
SIG_UNRECOGNIZED_ARG = "unrecognized-argument"
SIG_FLASHINFER_UNAVAILABLE = "flashinfer-unavailable"
SIG_PORT_IN_USE = "port-in-use"
SIG_TP_HEADS = "tp-heads-not-divisible"
SIG_MODEL_LEN = "max-model-len-exceeds-model"

#: every id above; a test keeps them in step with the classifier's catalog
SIGNATURES = frozenset({SIG_BATCHED_TOKENS, SIG_MULTISTEP_BACKEND, SIG_MULTISTEP_CHUNKED,
                        SIG_MULTISTEP_REMOVED, SIG_MULTISTEP_V0_FALLBACK, SIG_UNRECOGNIZED_ARG,
                        SIG_FLASHINFER_UNAVAILABLE, SIG_PORT_IN_USE, SIG_TP_HEADS,
                        SIG_MODEL_LEN})

#: (first version, backends allowing multi-step, backends allowing multi-step + chunked
#: prefill). Before 0.6.3 any chunked prefill with multi-step is refused; the plain
#: multi-step list there is assumed to be 0.6.3's (not in the facts we have).
MULTISTEP_BACKENDS: tuple[tuple[str, frozenset[str], frozenset[str]], ...] = (
    ("0.0.0", frozenset({"FLASH_ATTN", "ROCM_FLASH", "FLASHINFER"}), frozenset()),
    ("0.6.3", frozenset({"FLASH_ATTN", "ROCM_FLASH", "FLASHINFER"}), frozenset({"FLASH_ATTN"})),
    ("0.7.3", frozenset({"FLASH_ATTN", "ROCM_FLASH", "FLASHINFER"}),
     frozenset({"FLASH_ATTN", "FLASHINFER"})),
)
MULTISTEP_UNTIL = "0.10.2"
V1_DEFAULT_SINCE = "0.8.0"  # chunked prefill is always on by default in V1


@dataclass(frozen=True)
class Finding:
    """One pre-flight result: an error fails ``check``; a warning is advice."""

    severity: str
    rule: str
    variant: str
    #: classifier signature id the launch would end in (None: no log signature applies)
    signature: str | None
    message: str

    def to_dict(self) -> JsonObject:
        return {"severity": self.severity, "rule": self.rule, "variant": self.variant,
                "signature": self.signature, "message": self.message}


@dataclass(frozen=True)
class Platform:
    """What the rules know about the vLLM a variant runs on (variant over host)."""

    version: str | None = None
    backports: frozenset[str] = frozenset()
    default_backend: str | None = None
    unavailable_backends: frozenset[str] = frozenset()


def platform_of(variant: ResolvedVariant, host: Host | None) -> Platform:
    """Merge the host's vLLM facts with the variant's (the variant wins key by key)."""
    hv = host.vendor if host else None
    vv = variant.vendor
    return Platform(
        version=variant.vllm_version or (host.vllm_version if host else None),
        backports=frozenset((vv.backports if vv and vv.backports else ())
                            or (hv.backports if hv else ())),
        default_backend=(vv.attention_backend_default if vv else None)
        or (hv.attention_backend_default if hv else None),
        unavailable_backends=frozenset((vv.unavailable_backends if vv and
                                        vv.unavailable_backends else ())
                                       or (hv.unavailable_backends if hv else ())),
    )


@dataclass(frozen=True)
class Context:
    """Everything a per-variant rule may look at."""

    variant: ResolvedVariant
    platform: Platform
    host: Host | None
    known_patchsets: Collection[str] | None
    known_hosts: Collection[str] | None
    #: the model's config.json facts, when they could be read (local model dir)
    model: ModelInfo | None = None

    def finding(self, severity: str, rule: str, signature: str | None, message: str) -> Finding:
        return Finding(severity, rule, self.variant.name, signature, message)

    # --- derived facts -------------------------------------------------------------
    def int_arg(self, flag: str) -> int | None:
        value = self.variant.args.get(flag)
        if isinstance(value, bool) or value is None or isinstance(value, tuple):
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            return None

    @property
    def scheduler_steps(self) -> int:
        return self.int_arg("num-scheduler-steps") or 1

    @property
    def chunked_prefill(self) -> bool | None:
        """On, off, or None when the default depends on a version we do not know."""
        value = self.variant.args.get("enable-chunked-prefill")
        if value is True:
            return True
        if value is False:
            return False
        if self.platform.version is None:
            return None
        return parse_version(self.platform.version) >= parse_version(V1_DEFAULT_SINCE)

    @property
    def forced_backend(self) -> str | None:
        value = self.variant.env.get("VLLM_ATTENTION_BACKEND")
        arg = self.variant.args.get("attention-backend")
        if isinstance(arg, str):
            value = arg
        return normalise_backend(value) if value else None

    @property
    def backend(self) -> tuple[str | None, str]:
        """The attention backend vLLM will pick, and where that comes from."""
        forced = self.forced_backend
        if forced:
            return forced, "VLLM_ATTENTION_BACKEND"
        return self.platform.default_backend, "the platform default"

    def multistep_lists(self) -> tuple[frozenset[str], frozenset[str]]:
        v = parse_version(self.platform.version or "0.9.2")
        row = [r for r in MULTISTEP_BACKENDS if v >= parse_version(r[0])][-1]
        return row[1], row[2]

    def multistep_era(self) -> bool:
        version = self.platform.version
        return version is None or parse_version(version) < parse_version(MULTISTEP_UNTIL)


Rule = Callable[[Context], Iterator[Finding]]


def rule_batched_tokens_below_model_len(ctx: Context) -> Iterator[Finding]:
    """max-num-batched-tokens < max-model-len is refused unless chunked prefill is on."""
    batched, model_len = ctx.int_arg("max-num-batched-tokens"), ctx.int_arg("max-model-len")
    if batched is None or model_len is None or batched >= model_len:
        return
    chunked = ctx.chunked_prefill
    why = (f"max-num-batched-tokens ({batched}) is smaller than max-model-len ({model_len})")
    if chunked is False:
        yield ctx.finding(ERROR, "batched-tokens-below-model-len", SIG_BATCHED_TOKENS,
                          f"{why} with chunked prefill off: vLLM refuses to start; raise "
                          f"max-num-batched-tokens, lower max-model-len or enable chunked prefill")
    elif chunked is None:
        yield ctx.finding(WARNING, "batched-tokens-below-model-len", SIG_BATCHED_TOKENS,
                          f"{why}; this fails unless chunked prefill is on by default "
                          f"(declare vllm_version, or set enable-chunked-prefill)")


def rule_multistep_backend(ctx: Context) -> Iterator[Finding]:
    """--num-scheduler-steps > 1 needs an attention backend that supports multi-step."""
    if ctx.scheduler_steps <= 1 or not ctx.multistep_era() or ctx.chunked_prefill is True:
        return
    allowed, _ = ctx.multistep_lists()
    backend, source = ctx.backend
    if backend is None:
        yield ctx.finding(WARNING, "multistep-backend", SIG_MULTISTEP_BACKEND,
                          "num-scheduler-steps > 1 but the attention backend is unknown: set "
                          "VLLM_ATTENTION_BACKEND or declare vendor.attention_backend_default "
                          f"(multi-step needs one of {', '.join(sorted(allowed))})")
    elif backend not in allowed:
        yield ctx.finding(ERROR, "multistep-backend", SIG_MULTISTEP_BACKEND,
                          f"num-scheduler-steps {ctx.scheduler_steps} with attention backend "
                          f"{backend} ({source}): vLLM {ctx.platform.version or '0.6-0.9'} allows "
                          f"multi-step only with {', '.join(sorted(allowed))}")


def rule_multistep_chunked_prefill(ctx: Context) -> Iterator[Finding]:
    """Multi-step together with chunked prefill works only with a few backends (or none)."""
    if ctx.scheduler_steps <= 1 or not ctx.multistep_era() or ctx.chunked_prefill is not True:
        return
    _, allowed = ctx.multistep_lists()
    backend, source = ctx.backend
    if not allowed:
        yield ctx.finding(ERROR, "multistep-chunked-prefill", SIG_MULTISTEP_CHUNKED,
                          f"vLLM {ctx.platform.version} refuses chunked prefill with "
                          f"multi-step (--num-scheduler-steps > 1) on every backend")
    elif backend is None:
        yield ctx.finding(WARNING, "multistep-chunked-prefill", SIG_MULTISTEP_CHUNKED,
                          "multi-step with chunked prefill needs attention backend "
                          f"{' or '.join(sorted(allowed))}, and the backend is unknown")
    elif backend not in allowed:
        yield ctx.finding(ERROR, "multistep-chunked-prefill", SIG_MULTISTEP_CHUNKED,
                          f"multi-step with chunked prefill is not supported by attention "
                          f"backend {backend} ({source}); only {', '.join(sorted(allowed))}")


def rule_attention_backend_unavailable(ctx: Context) -> Iterator[Finding]:
    """A forced attention backend whose package the (vendor) build does not have."""
    backend = ctx.forced_backend
    if backend and backend in ctx.platform.unavailable_backends:
        flashinfer = backend == "FLASHINFER"
        seen = (" (the seed saw `TypeError: 'NoneType' object is not callable` creating "
                "its decode wrapper)") if flashinfer else ""
        yield ctx.finding(ERROR, "attention-backend-unavailable",
                          SIG_FLASHINFER_UNAVAILABLE if flashinfer else None,
                          f"attention backend {backend} is forced but the host's vLLM build "
                          f"declares it unavailable (vendor.unavailable_backends){seen}")


def rule_flag_not_in_version(ctx: Context) -> Iterator[Finding]:
    """A flag the declared vLLM version does not have (argparse rejects it)."""
    version = ctx.platform.version
    if version is None:
        return
    for flag, value in ctx.variant.args.items():
        span = FLAG_VERSIONS.get(flag)
        if span is None:
            # the mined table (every minor release's EngineArgs): gone from span[1] on
            mined = removed(flag)
            span = (None, mined[1]) if mined else None
        if span is None or flag in ctx.platform.backports or in_range(version, span):
            continue
        if value is False and not is_negatable(flag, version):
            continue  # renders to nothing
        sig = SIG_MULTISTEP_REMOVED if flag == "num-scheduler-steps" else SIG_UNRECOGNIZED_ARG
        yield ctx.finding(ERROR, "flag-not-in-version", sig,
                          f"--{flag} does not exist in vLLM {version} (it exists "
                          f"{describe_span(span)}); if this build backports it, list it "
                          f"in vendor.backports")


def rule_multistep_v1_fallback(ctx: Context) -> Iterator[Finding]:
    """0.8.5-0.9.2 accept --num-scheduler-steps but fall back from V1 to V0."""
    version = ctx.platform.version
    if version is None or ctx.scheduler_steps <= 1:
        return
    if in_range(version, ("0.8.5", MULTISTEP_UNTIL)):
        yield ctx.finding(WARNING, "multistep-v1-fallback", SIG_MULTISTEP_V0_FALLBACK,
                          f"vLLM {version}: --num-scheduler-steps is not supported by the V1 "
                          f"engine; the server falls back to V0")


def rule_env_not_in_version(ctx: Context) -> Iterator[Finding]:
    """An environment variable the declared version no longer reads (silently ignored)."""
    version = ctx.platform.version
    if version is None:
        return
    for name in ctx.variant.env:
        span = ENV_VERSIONS.get(name)
        if span is not None and not in_range(version, span):
            hint = "; use args attention-backend" if name == "VLLM_ATTENTION_BACKEND" else ""
            yield ctx.finding(WARNING, "env-not-in-version", None,
                              f"{name} is read by vLLM {describe_span(span)}, not by {version}: "
                              f"it is silently ignored{hint}")


def rule_unknown_patchset(ctx: Context) -> Iterator[Finding]:
    """``requires`` names a patchset that does not exist."""
    if ctx.known_patchsets is None:
        return
    from variantctl.spelling import did_you_mean

    for name in ctx.variant.requires:
        if name not in ctx.known_patchsets:
            close = did_you_mean(name, ctx.known_patchsets)
            yield ctx.finding(ERROR, "unknown-patchset", None,
                              f"requires patchset {name!r}, which does not exist"
                              + (f" ({close})" if close else ""))


def rule_unknown_host(ctx: Context) -> Iterator[Finding]:
    """The variant's host is not in hosts.yaml."""
    if ctx.known_hosts is not None and ctx.variant.host not in ctx.known_hosts:
        yield ctx.finding(ERROR, "unknown-host", None,
                          f"host {ctx.variant.host!r} is not defined in variants/hosts.yaml")


def rule_expect_contradicts_flags(ctx: Context) -> Iterator[Finding]:
    """``expect: {enforce_eager: false}`` while the variant passes --enforce-eager."""
    expected = ctx.variant.expect.get("enforce_eager")
    flag = ctx.variant.args.get("enforce-eager")
    if expected is False and flag is True:
        # no log signature: launch's expectation check reports the mismatch
        yield ctx.finding(ERROR, "expect-contradicts-flags", None,
                          "expects enforce_eager false but passes --enforce-eager, so the "
                          "log will show enforce_eager=True")


def rule_tp_heads_not_divisible(ctx: Context) -> Iterator[Finding]:
    """vLLM splits attention heads over tensor-parallel ranks: heads % tp must be 0."""
    heads = ctx.model.num_attention_heads if ctx.model else None
    tp = ctx.int_arg("tensor-parallel-size") or 1
    if heads is None or tp <= 1 or heads % tp == 0:
        return
    assert ctx.model is not None
    divisors = [d for d in range(1, heads + 1) if heads % d == 0 and d <= 16]
    yield ctx.finding(ERROR, "tp-heads-not-divisible", SIG_TP_HEADS,
                      f"the model has {heads} attention heads ({ctx.model.source}), which "
                      f"tensor-parallel-size {tp} does not divide: vLLM refuses to start; "
                      f"use one of {', '.join(map(str, divisors))}")


def rule_max_model_len_exceeds_model(ctx: Context) -> Iterator[Finding]:
    """--max-model-len above the model's max_position_embeddings is refused (unless allowed)."""
    model = ctx.model
    requested = ctx.int_arg("max-model-len")
    if (model is None or model.max_position_embeddings is None or requested is None
            or requested <= model.max_position_embeddings or model.rope_scaling):
        return
    why = (f"max-model-len {requested} is above the model's max_position_embeddings "
           f"({model.max_position_embeddings}, {model.source})")
    if ctx.variant.env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") in ("1", "true", "True"):
        yield ctx.finding(WARNING, "max-model-len-exceeds-model", None,
                          f"{why}; allowed by VLLM_ALLOW_LONG_MAX_MODEL_LEN, but outputs "
                          f"past that length may be wrong")
        return
    yield ctx.finding(ERROR, "max-model-len-exceeds-model", SIG_MODEL_LEN,
                      f"{why}: vLLM refuses to start; lower max-model-len, or set "
                      f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 if the model really supports more")


RULES: tuple[Rule, ...] = (
    rule_batched_tokens_below_model_len,
    rule_multistep_backend,
    rule_multistep_chunked_prefill,
    rule_attention_backend_unavailable,
    rule_flag_not_in_version,
    rule_multistep_v1_fallback,
    rule_env_not_in_version,
    rule_unknown_patchset,
    rule_unknown_host,
    rule_expect_contradicts_flags,
    rule_tp_heads_not_divisible,
    rule_max_model_len_exceeds_model,
)


def rule_port_conflict(
    variants: list[ResolvedVariant], hosts: Mapping[str, Host] | None
) -> Iterator[Finding]:
    """Two variants of one host on one port cannot run at the same time."""
    by_port: dict[tuple[str, int], list[str]] = {}
    for v in variants:
        by_port.setdefault((v.host, v.port), []).append(v.name)
    for (host, port), names in by_port.items():
        if len(names) < 2:
            continue
        # one finding per clash, on the first variant, so a catalog that runs its
        # variants one after the other on one port gets one line, not one per variant
        others = ", ".join(names[1:])
        yield Finding(WARNING, "port-conflict", names[0], SIG_PORT_IN_USE,
                      f"shares host {host!r} port {port} with {others}: they cannot run "
                      f"at the same time (the second fails with address already in use)")
