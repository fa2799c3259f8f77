"""Compare what the log says the server ran with against what a variant asked for.

Two sources of expectations: the variant's ``expect`` block (fact name -> value,
e.g. ``enforce_eager: false``, ``engine: V1``) and the flags it sets. A boolean
flag the variant does *not* set is expected to be off: a variant without
``--enforce-eager`` whose log says ``enforce_eager=True`` is flagged (the seed's
hard-coded fork).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from variantctl.logs.facts import Facts

#: flag (without leading dashes) -> (fact key, kind); kind "bool" flags default to off
FLAG_FACTS: dict[str, tuple[str, str]] = {
    "enforce-eager": ("enforce_eager", "bool"),
    "disable-custom-all-reduce": ("disable_custom_all_reduce", "bool"),
    "tensor-parallel-size": ("tensor_parallel_size", "int"),
    "tp": ("tensor_parallel_size", "int"),
    "pipeline-parallel-size": ("pipeline_parallel_size", "int"),
    "pp": ("pipeline_parallel_size", "int"),
    "max-model-len": ("max_seq_len", "int"),
    "num-scheduler-steps": ("num_scheduler_steps", "int"),
    "enable-chunked-prefill": ("enable_chunked_prefill", "opt-bool"),
    "enable-prefix-caching": ("enable_prefix_caching", "opt-bool"),
    "dtype": ("dtype", "dtype"),
    "quantization": ("quantization", "str"),
    "kv-cache-dtype": ("kv_cache_dtype", "str"),
    "trust-remote-code": ("trust_remote_code", "opt-bool"),
    "seed": ("seed", "int"),
}
#: boolean flags whose absence means "off" and is checked too (disable_custom_all_reduce is
#: not: platforms force it on, e.g. the CPU build; it is checked only when the flag is set)
DEFAULT_OFF = ("enforce-eager",)
_DTYPES = {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class Mismatch:
    """One expectation the log contradicts (or cannot confirm)."""

    key: str
    expected: Any
    actual: Any
    #: where the expectation came from: ``expect.<key>``, ``--flag`` or ``--flag (not set)``
    source: str
    #: ``differs`` or ``not-reported`` (the log never said; e.g. it stopped early)
    reason: str = "differs"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "expected": self.expected,
            "actual": self.actual,
            "source": self.source,
            "reason": self.reason,
        }

    def describe(self) -> str:
        if self.reason == "not-reported":
            return f"{self.key}: expected {self.expected!r} ({self.source}), not in the log"
        return f"{self.key}: expected {self.expected!r} ({self.source}), log says {self.actual!r}"


def compare(
    facts: Facts, expect: Mapping[str, object], args: Mapping[str, object]
) -> list[Mismatch]:
    """Mismatches between ``facts`` and a variant's ``expect`` block and flags.

    ``args`` maps flag names (with or without leading dashes) to values; ``True``
    for a bare flag, ``False``/``None`` for a flag explicitly off. Keys of
    ``expect`` that are not facts (e.g. ``verdict``) are ignored here (see
    :func:`compare_verdict`). A fact the
    log never reported gives a ``not-reported`` mismatch only for ``expect``
    entries; flags are only checked when the engine config line was seen.
    """
    out: list[Mismatch] = []
    for key, want in expect.items():
        if not _is_fact(key):
            continue
        if not facts.has(key):
            out.append(Mismatch(key, want, None, f"expect.{key}", "not-reported"))
            continue
        got = facts.get(key)
        if not _same(want, got):
            out.append(Mismatch(key, want, got, f"expect.{key}"))
    # the effective value where the engine config line gave one, else the requested one
    # (a server that failed before printing its engine config)
    config = facts.configuration()
    if not config:
        return out
    flags = {str(k).lstrip("-"): v for k, v in args.items()}
    checked: set[str] = {m.key for m in out} | set(expect)
    for flag, (key, kind) in FLAG_FACTS.items():
        if key in checked or key not in config:
            continue
        got = config[key]
        if flag in flags:
            want = _flag_value(flags[flag], kind)
            source = f"--{flag}"
        elif flag in DEFAULT_OFF and not any(f in flags for f, (k, _) in FLAG_FACTS.items()
                                              if k == key):
            want, source = False, f"--{flag} (not set)"
        else:
            continue
        checked.add(key)
        if want is None:
            continue
        if not _same(want, got):
            out.append(Mismatch(key, want, got, source))
    return out


def compare_verdict(kind: str, signature: str | None,
                    expect: Mapping[str, object]) -> list[Mismatch]:
    """Mismatches for the verdict keys of an ``expect`` block: ``verdict`` (a kind such as
    ``ok`` or ``hang``) and ``signature`` (an id such as ``cuda-graph-capture-hang``)."""
    out: list[Mismatch] = []
    if "verdict" in expect and expect["verdict"] != kind:
        out.append(Mismatch("verdict", expect["verdict"], kind, "expect.verdict"))
    if "signature" in expect and expect["signature"] != signature:
        out.append(Mismatch("signature", expect["signature"], signature, "expect.signature"))
    return out


class _Judged(Protocol):
    """What :func:`check_log` needs of a classification result (``logs.result.Result``)."""

    @property
    def kind(self) -> str: ...

    @property
    def signature(self) -> str | None: ...

    @property
    def facts(self) -> Facts: ...


def check_log(result: _Judged, expect: Mapping[str, object],
              args: Mapping[str, object]) -> list[Mismatch]:
    """Every expectation a classified log contradicts: the verdict keys of ``expect``, its
    facts, and the checks implied by the flags. The one engine behind both
    ``classify --expect`` and ``launch`` (they must never disagree)."""
    return [*compare_verdict(result.kind, result.signature, expect),
            *compare(result.facts, expect, args)]


_FACT_FIELDS = set(Facts.__dataclass_fields__) - {"config", "requested", "config_differences",
                                                  "default_differences"}


def _is_fact(key: str) -> bool:
    from variantctl.logs.facts import CONFIG_KEYS

    return key in _FACT_FIELDS or key in CONFIG_KEYS


def _flag_value(value: object, kind: str) -> bool | int | str | None:
    if kind in ("bool", "opt-bool"):
        if value is None:
            return False
        if isinstance(value, str):
            return value.lower() not in ("false", "0", "no", "off")
        return bool(value)
    if kind == "int":
        try:
            return int(str(value))
        except ValueError:
            return None
    if kind == "dtype":
        text = str(value).lower()
        return _DTYPES.get(text, text)
    return None if value is None else str(value)


def _same(want: object, got: object) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got or (isinstance(want, str) and want.lower() == str(got).lower())
    if isinstance(want, str) and isinstance(got, str):
        w, g = want.lower(), got.lower()
        if w == "auto" and g in ("auto", "none"):
            return True
        # torch.bfloat16 == bfloat16; FLASH_ATTN == Flash Attention
        return g.removeprefix("torch.") == w.removeprefix("torch.") or _squash(w) == _squash(g)
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return float(want) == float(got)
    return want == got


def _squash(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum()).replace("flashattention", "flashattn")
