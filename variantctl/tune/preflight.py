"""What the pre-flight rules say of a tune's space before anything launches (pure).

Each value of each setting is set alone on the base variant and checked
(:func:`variantctl.variants.check.check`, the rules ``check`` and ``sweep`` run):

- a setting the host's vLLM lacks (``flag-not-in-version``, ``env-not-in-version``) or a
  patchset the project does not define (``unknown-patchset``) is bad input: the spec is
  refused (exit 2) at the setting's ``file:line`` — no candidate of it could ever run;
- any other pre-flight *error* predicts that the value fails to start (e.g. a
  ``max-num-batched-tokens`` below ``max-model-len``): candidates holding it are never
  launched, and the optimiser is told they failed (``predicted``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from variantctl.errors import ConfigError
from variantctl.jsontypes import JsonObject
from variantctl.sweeps.grid import MAX_POINTS
from variantctl.sweeps.model import GridValue
from variantctl.tune.model import (
    PATCHSETS,
    Choices,
    Range,
    Settings,
    SettingValue,
    TuneSpec,
    settings_json,
)
from variantctl.variants.check import check
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.rules import ERROR, Finding

if TYPE_CHECKING:
    from variantctl.hostmodel import Host

#: rules that mean the setting cannot be tried on this host at all
LACKS = frozenset({"flag-not-in-version", "env-not-in-version", "unknown-patchset"})


@dataclass(frozen=True)
class PrunedValue:
    """A value of one setting the rules predict to fail, with the rule's finding."""

    key: str
    value: SettingValue
    rule: str
    signature: str | None
    message: str

    def to_json(self) -> JsonObject:
        return {"setting": self.key, "value": settings_json({self.key: self.value})[self.key],
                "rule": self.rule, "signature": self.signature, "message": self.message}


@dataclass(frozen=True)
class SpacePlan:
    """The space as the tune will search it: its size, the sampler, what the rules
    prune, and the budget (``tune --dry-run`` prints it)."""

    spec: TuneSpec
    host: str
    pruned: tuple[PrunedValue, ...]
    sampler: str

    @property
    def grid_size(self) -> float:
        return self.spec.grid_size

    def to_json(self) -> JsonObject:
        size = self.grid_size
        dims: list[JsonObject] = []
        for d in self.spec.space:
            if isinstance(d, Choices):
                dims.append({"setting": d.key, "choices": [
                    settings_json({d.key: v})[d.key] for v in d.values]})
            else:
                dims.append({"setting": d.key, "range": [d.lo, d.hi], "log": d.log,
                             "int": d.integer})
        return {"tune": self.spec.name, "source": self.spec.source,
                "variant": self.spec.variant, "host": self.host,
                "hosts": list(self.spec.hosts) or [self.host], "space": dims,
                "grid_size": None if math.isinf(size) else int(size),
                "sampler": self.sampler, "objective": self.spec.objective.to_json(),
                "budget": self.spec.budget.to_json(), "stages": self.spec.stages.to_json(),
                "seed": self.spec.seed, "pruned": [p.to_json() for p in self.pruned]}


def candidate(base: ResolvedVariant, settings: Settings, *, origin: str,
              name: str | None = None) -> ResolvedVariant:
    """``base`` with ``settings`` set (``patchsets`` adds to what the base requires)."""
    args: dict[str, GridValue] = {}
    env: dict[str, str | None] = {}
    requires: tuple[str, ...] = base.requires
    for key, value in settings.items():
        if key == PATCHSETS:
            names = value if isinstance(value, tuple) else ()
            requires = tuple(dict.fromkeys((*base.requires, *names)))
        elif key.startswith("args."):
            args[key.split(".", 1)[1]] = value if not isinstance(value, tuple) else None
        else:
            env[key.split(".", 1)[1]] = _env_text(value)
    out = base.with_args(args, env=env, origin=origin, name=name)
    return replace(out, requires=requires) if requires != base.requires else out


def _env_text(value: SettingValue) -> str | None:
    if value is None or isinstance(value, tuple):
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _probe_values(dim: Choices | Range) -> tuple[SettingValue, ...]:
    if isinstance(dim, Choices):
        return dim.values
    lo, hi = (int(dim.lo), int(dim.hi)) if dim.integer else (dim.lo, dim.hi)
    return (lo, hi)


def choose_sampler(spec: TuneSpec) -> str:
    """``auto``: the grid sampler when the whole grid fits in the launch budget (every
    configuration once), TPE otherwise."""
    if spec.sampler != "auto":
        return spec.sampler
    size = spec.grid_size
    launches = spec.budget.launches
    if not math.isinf(size) and launches is not None and size <= launches:
        return "grid"
    return "tpe"


def plan_space(spec: TuneSpec, base: ResolvedVariant, hosts: Mapping[str, Host],
               known_patchsets: Collection[str] | None) -> SpacePlan:
    """Check every value of the space on ``base`` (ConfigError at the setting for a value
    the host cannot run at all; a predicted failure is pruned)."""
    host = spec.hosts[0] if spec.hosts else base.host
    pruned: list[PrunedValue] = []
    for dim in spec.space:
        for value in _probe_values(dim):
            variant = candidate(base.with_overrides(
                host=host if host != base.host else None), {dim.key: value},
                origin=f"tune {spec.name} space")
            findings: list[Finding] = check([variant], known_patchsets, hosts)
            for f in findings:
                if f.rule in LACKS:
                    source, _, line = dim.origin.rpartition(":")
                    raise ConfigError(
                        f"{dim.key}: {f.message}", source=source or spec.source,
                        line=int(line) if line.isdigit() else None,
                        hint=f"the host {host} cannot run this setting (pre-flight rule "
                        f"{f.rule}); remove it from space:")
            errors = [f for f in findings if f.severity == ERROR]
            if errors:
                f = errors[0]
                pruned.append(PrunedValue(dim.key, value, f.rule, f.signature, f.message))
    sampler = choose_sampler(spec)
    if sampler == "grid" and spec.grid_size > MAX_POINTS:
        raise ConfigError(f"the space has {spec.grid_size:,.0f} points, more than the "
                          f"{MAX_POINTS:,} the grid sampler may enumerate",
                          source=spec.source, hint="use sampler: tpe")
    return SpacePlan(spec, host, tuple(pruned), sampler)
