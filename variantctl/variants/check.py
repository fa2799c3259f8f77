"""Run every pre-flight rule over a set of resolved variants."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from variantctl.variants.model import ResolvedVariant
from variantctl.variants.modelinfo import ModelInfo
from variantctl.variants.rules import (
    ERROR,
    RULES,
    Context,
    Finding,
    platform_of,
    rule_port_conflict,
)

if TYPE_CHECKING:
    from variantctl.hostmodel import Host

__all__ = ["Finding", "check", "has_errors"]


def check(
    variants: Sequence[ResolvedVariant],
    known_patchsets: Collection[str] | None,
    hosts: Mapping[str, Host] | None = None,
    models: Mapping[str, ModelInfo] | None = None,
) -> list[Finding]:
    """Findings for ``variants`` (errors first, then by variant); ``None`` skips that rule.

    ``hosts`` supplies each variant's declared vLLM version and vendor facts and
    lets the unknown-host rule run; ``models`` (by variant name) the facts of the
    model's ``config.json`` for the rules that need them.
    """
    findings: list[Finding] = []
    for v in variants:
        host = hosts.get(v.host) if hosts is not None else None
        ctx = Context(v, platform_of(v, host), host, known_patchsets,
                      None if hosts is None else set(hosts),
                      (models or {}).get(v.name))
        for rule in RULES:
            findings.extend(rule(ctx))
    findings.extend(rule_port_conflict(list(variants), hosts))
    order = {v.name: i for i, v in enumerate(variants)}
    findings.sort(key=lambda f: (f.severity != ERROR, order.get(f.variant, 0)))
    return findings


def has_errors(findings: Sequence[Finding]) -> bool:
    return any(f.severity == ERROR for f in findings)
