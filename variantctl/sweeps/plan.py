"""The sweep plan: every point derived, pre-flight checked, looked up in history (pure).

Nothing here connects to a host: ``sweep --dry-run`` works with every host out of reach.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.runs.identity import config_key, point_key
from variantctl.sweeps.grid import expand, split_values
from variantctl.sweeps.history import History
from variantctl.sweeps.model import GridPoint, GridValue, SweepSpec, point_name
from variantctl.variants.check import check, has_errors
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.rules import Finding

if TYPE_CHECKING:
    from variantctl.hostmodel import Host

HISTORY = "history"
PREDICTED = "predicted"


@dataclass(frozen=True)
class Skip:
    """Why a point is not run: a past run of it failed, or a rule predicts it will."""

    reason: str
    message: str
    signature: str | None = None
    rule: str | None = None
    run_id: str | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = {"reason": self.reason, "signature": self.signature,
                               "message": self.message}
        if self.reason == HISTORY:
            out["run_id"] = self.run_id
        else:
            out["rule"] = self.rule
        return out


@dataclass(frozen=True)
class PlannedPoint:
    point: GridPoint
    name: str
    host: str
    variant: ResolvedVariant
    #: the point's identity in the state file (runs/identity.point_key)
    point_key: str
    #: the configuration's key in history (runs/identity.config_key)
    config_key: str
    findings: tuple[Finding, ...]
    skip: Skip | None
    #: False for a skip (unless --include-predicted)
    run: bool
    eta_startup_s: float
    eta_source: str
    eta_bench_s: float | None = None
    #: --resume keeps an earlier run's result for this point (``measured, run ID``):
    #: it is not run again and takes no time
    done: str | None = None

    @property
    def eta_s(self) -> float:
        if self.done is not None:
            return 0.0
        return self.eta_startup_s + (self.eta_bench_s or 0.0)


@dataclass(frozen=True)
class Plan:
    spec: SweepSpec
    points: tuple[PlannedPoint, ...]
    hosts: tuple[str, ...]
    include_predicted: bool = False

    @property
    def to_run(self) -> tuple[PlannedPoint, ...]:
        return tuple(p for p in self.points if p.run)

    @property
    def eta_s(self) -> float:
        """Wall time: hosts run in parallel, points on one host one after another."""
        per_host: dict[str, float] = {}
        for p in self.to_run:
            per_host[p.host] = per_host.get(p.host, 0.0) + p.eta_s
        return max(per_host.values(), default=0.0)


def _env_text(value: GridValue) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def derive(spec: SweepSpec, base: ResolvedVariant, point: GridPoint, host: str
           ) -> ResolvedVariant:
    """The point's variant: base on ``host`` (and the sweep's port), grid values set."""
    variant = base.with_overrides(host=host if host != base.host else None, port=spec.port)
    args, env = split_values(point.values)
    return variant.with_args(args, env={k: _env_text(v) for k, v in env.items()},
                             origin=f"sweep {spec.name} grid",
                             name=point_name(point.base, spec.name, point.index))


def make_plan(
    spec: SweepSpec,
    bases: Mapping[str, ResolvedVariant],
    hosts: Mapping[str, Host],
    *,
    on_hosts: Sequence[str] = (),
    known_patchsets: Collection[str] | None = None,
    patchset_fingerprints: Mapping[str, str] | None = None,
    history: History | None = None,
    bench_seconds: Mapping[str, float] | None = None,
    include_predicted: bool = False,
    done: Mapping[str, str] | None = None,
) -> Plan:
    """Expand, derive, check and look up every point.

    ``on_hosts`` (``--hosts``, else the file's ``hosts``) spreads the points round-robin
    in index order; empty: each point on its base variant's host (a host ``hosts`` does
    not define is keyed by its name; the pre-flight reports it). ``bench_seconds``: by
    point key, how long a past measurement of it took.
    ``patchset_fingerprints``: name -> fingerprint of the project's patchsets (the
    configuration key holds those a point requires).
    ``done``: by point key, the result --resume keeps from an earlier run (``measured,
    run ID``).
    """
    history = history or History()
    planned: list[PlannedPoint] = []
    for i, point in enumerate(expand(spec)):
        base = bases[point.base]
        host = on_hosts[i % len(on_hosts)] if on_hosts else base.host
        variant = derive(spec, base, point, host)
        where: Host | str = hosts.get(host, host)
        ckey = config_key(variant, where, patchset_fingerprints or {})
        pkey = point_key(variant, where, spec.measured)
        findings = tuple(check([variant], known_patchsets, hosts))
        skip: Skip | None = None
        past = history.last_failure(ckey)
        errors = [f for f in findings if f.severity == "error"]
        # a real failure is stronger evidence than a prediction, and it is not retried
        # by --include-predicted (it has been tried: its run holds the evidence)
        if past is not None:
            skip = Skip(HISTORY, f"run {past.run_id} ended {past.verdict}"
                        + (f": {past.message}" if past.message else ""),
                        signature=past.signature, run_id=past.run_id)
        elif has_errors(list(findings)):
            f = errors[0]
            skip = Skip(PREDICTED, f.message, signature=f.signature, rule=f.rule)
        eta, source = history.startup_estimate(ckey, host, point.base)
        planned.append(PlannedPoint(
            point=point, name=variant.name, host=host, variant=variant, point_key=pkey,
            config_key=ckey, findings=findings, skip=skip,
            run=skip is None or (include_predicted and skip.reason == PREDICTED),
            eta_startup_s=eta, eta_source=source,
            eta_bench_s=(bench_seconds or {}).get(pkey), done=(done or {}).get(pkey),
        ))
    names = tuple(dict.fromkeys(p.host for p in planned))
    return Plan(spec, tuple(planned), names, include_predicted)
