"""``tunes/NAME.yaml``: the schema of a tuning spec and its loader (file:line errors).

The one place tune YAML is read; the result is a frozen
:class:`~variantctl.tune.model.TuneSpec`. ``bench:`` is a sweep's ``bench:``
(:mod:`variantctl.config.sweeps` checks it); the objective ``{search: …, slo: …}`` adds
the capacity search to it.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict

from variantctl.config.hosts import ENV_NAME
from variantctl.config.schema import (
    Any_,
    Enum,
    Field,
    Float,
    Int,
    ListOf,
    MapOf,
    OneOf,
    Str,
    Struct,
)
from variantctl.config.sweeps import _BENCH, BenchData, _bench, _key
from variantctl.config.variants import NAME_PATTERN
from variantctl.config.yamlload import Document, KeyPath, load_named
from variantctl.errors import ConfigError
from variantctl.spelling import did_you_mean
from variantctl.sweeps.grid import MAX_POINTS
from variantctl.tune.model import (
    MAXIMIZE,
    MINIMIZE,
    PATCHSETS,
    SAMPLERS,
    SEARCH,
    Budget,
    Choices,
    Dimension,
    Objective,
    Range,
    SettingValue,
    Stages,
    TuneSpec,
)

#: the most launches a budget may name (a budget is a promise to stop)
MAX_LAUNCHES = 100_000
def _metrics() -> dict[str, bool]:
    from variantctl.bench.uncertainty import HEADLINES

    return {name: h.higher_is_better for name, h in HEADLINES.items()}


class _ObjectiveData(TypedDict, total=False):
    maximize: str
    minimize: str
    search: str
    slo: Any
    slo_percentile: float
    max_level: float
    level: int


class _BudgetData(TypedDict, total=False):
    launches: int
    minutes: float


class _StagesData(TypedDict, total=False):
    repeats: int
    max_repeats: int
    reach_pct: float
    ci_pct: float


class _TuneOptional(TypedDict, total=False):
    description: str
    hosts: tuple[str, ...]
    bench: BenchData
    seed: int
    sampler: str
    stages: _StagesData


class TuneData(_TuneOptional):
    variant: str
    space: dict[str, Any]
    objective: _ObjectiveData
    budget: _BudgetData


_TUNE = Struct("tune", {
    "description": Field(Str(allow_empty=True)),
    "variant": Field(Str(pattern=NAME_PATTERN, what="a variant name"), required=True),
    "hosts": Field(ListOf(Str(pattern=NAME_PATTERN, what="a host name"), single=True,
                          min_len=1)),
    "space": Field(MapOf(Str(), Any_()), required=True),
    "bench": Field(_BENCH),
    "objective": Field(Struct("objective", {
        MAXIMIZE: Field(Str()),
        MINIMIZE: Field(Str()),
        SEARCH: Field(Enum("concurrency", "rate")),
        "slo": Field(Any_()),
        "slo_percentile": Field(Float(min=0.001, finite=True)),
        "max_level": Field(Float(min=1, finite=True)),
        "level": Field(Int(min=1)),
    }, shape=_ObjectiveData), required=True),
    "budget": Field(Struct("budget", {
        "launches": Field(Int(min=1, max=MAX_LAUNCHES)),
        "minutes": Field(Float(min=0.001, finite=True)),
    }, shape=_BudgetData), required=True),
    "seed": Field(Int(min=0)),
    "sampler": Field(Enum(*SAMPLERS)),
    "stages": Field(Struct("stages", {
        # 1: a screen, one launch per candidate and no confirmation (no winner named)
        "repeats": Field(Int(min=1, max=100)),
        "max_repeats": Field(Int(min=2, max=100)),
        "reach_pct": Field(Float(min=0, finite=True)),
        "ci_pct": Field(Float(min=0.001, finite=True)),
    }, shape=_StagesData)),
}, shape=TuneData)

_CHOICE = OneOf(Int(), Float(), Str(allow_empty=True))


def tunes_dir(project: Path) -> Path:
    return project / "tunes"


def load_tune(directory: Path, name: str, *, display_base: Path | None = None) -> TuneSpec:
    """Load ``directory/NAME.yaml``; NotFoundError (with did-you-mean) when there is none."""
    return parse_tune(load_named(directory, name, "tune", display_base=display_base), name)


def parse_tune(doc: Document, name: str) -> TuneSpec:
    """A checked document → TuneSpec; ConfigError at the offending key otherwise."""
    if not re.fullmatch(NAME_PATTERN, name):
        raise ConfigError(f"{name!r} is not a valid tune name (the file name)",
                          source=doc.source)
    if doc.data is None:
        raise ConfigError("empty tune file", source=doc.source,
                          hint="a tune needs variant:, space:, objective: and budget:")
    data = _TUNE.check(doc.data, (), doc)
    space, origins = _space(data["space"], doc)
    objective, bench_extra = _objective(data["objective"], doc)
    budget = data["budget"]
    if not budget:
        raise doc.error(("budget",), "a budget needs launches: N and/or minutes: M",
                        hint="e.g. budget: {launches: 20}")
    bench_data: dict[str, Any] = dict(data.get("bench") or {})
    for key in bench_extra:
        if key in bench_data:
            raise doc.error(("bench", key), f"{key} is the objective's: set it under "
                            "objective:, not bench:")
    bench_data.update(bench_extra)
    bench = _bench(bench_data, doc)  # type: ignore[arg-type]  # checked keys, plus search
    if objective.kind == SEARCH and len(bench) > 1:
        raise doc.error(("bench", "prompts"), "a capacity search tunes for one prompt set")
    stages_data = data.get("stages") or {}
    stages = Stages(**stages_data)
    if stages.max_repeats < stages.repeats:
        raise doc.error(("stages", "max_repeats"), f"max_repeats ({stages.max_repeats}) is "
                        f"below repeats ({stages.repeats})")
    if objective.level is not None and objective.level not in bench[0].concurrency:
        raise doc.error(("objective", "level"), f"level {objective.level} is not in the "
                        f"bench's concurrency {list(bench[0].concurrency)}")
    spec = TuneSpec(
        name=name, source=doc.source, variant=data["variant"], space=space,
        objective=objective, budget=Budget(budget.get("launches"), budget.get("minutes")),
        bench=bench, hosts=tuple(data.get("hosts") or ()), seed=data.get("seed", 0),
        sampler=data.get("sampler", "auto"), stages=stages,
        origins=MappingProxyType(origins))
    if spec.sampler == "grid":
        size = spec.grid_size
        if math.isinf(size):
            raise doc.error(("sampler",), "the grid sampler needs a finite space: a range "
                            "of reals has no grid", hint="add int: true, or list choices")
        if size > MAX_POINTS:
            raise doc.error(("sampler",), f"the space has {size:,.0f} points, more than "
                            f"the {MAX_POINTS:,} the grid sampler may enumerate",
                            hint="use sampler: tpe (the default for a large space)")
    return spec


def _space(raw: dict[str, Any], doc: Document) -> tuple[tuple[Dimension, ...], dict[str, str]]:
    if not raw:
        raise doc.error(("space",), "the space is empty: nothing to tune",
                        hint="e.g. space: {args.max-num-seqs: [8, 16, 32]}")
    dims: list[Dimension] = []
    origins: dict[str, str] = {}
    for raw_key, value in raw.items():
        path: KeyPath = ("space", raw_key)
        key = PATCHSETS if raw_key == PATCHSETS else _key(str(raw_key), path, doc)
        if key in origins:
            raise doc.error(path, f"{key} is given twice (aliases name the same flag)",
                            key=True)
        m = doc.mark(path, key=True)
        origins[key] = f"{m.source}:{m.line}"
        if key.startswith("env."):
            env_name = key.split(".", 1)[1]
            if not re.fullmatch(ENV_NAME, env_name):
                raise doc.error(path, f"{env_name!r} is not an environment variable name",
                                key=True)
        if isinstance(value, dict):
            if key == PATCHSETS:
                raise doc.error(path, "patchsets takes a list of choices (each a list of "
                                "patchset names), not a range")
            dims.append(_range(key, value, path, doc, origins[key]))
        elif isinstance(value, list):
            if not value:
                raise doc.error(path, f"{key} has no values: an empty space has nothing "
                                "to tune")
            dims.append(Choices(key, _choices(key, value, path, doc), origins[key]))
        else:
            raise doc.error(path, f"{key} should be a list of choices or "
                            "{range: [LO, HI], log: BOOL, int: BOOL}")
    return tuple(dims), origins


def _choices(key: str, values: list[Any], path: KeyPath, doc: Document
             ) -> tuple[SettingValue, ...]:
    out: list[SettingValue] = []
    for i, v in enumerate(values):
        at = (*path, i)
        if key == PATCHSETS:
            names = ListOf(Str(pattern=NAME_PATTERN, what="a patchset name"),
                           single=True).check(v, at, doc)
            item: SettingValue = tuple(sorted(set(names)))
        elif v is None or isinstance(v, bool):
            item = v
        else:
            checked = _CHOICE.check(v, at, doc)
            if isinstance(checked, float) and not math.isfinite(checked):
                raise doc.error(at, f"must be a finite number, got {checked}")
            item = checked if isinstance(checked, (int, float, str)) else str(checked)
        if item in out:
            raise doc.error(at, f"{_show(item)} is given twice")
        out.append(item)
    return tuple(out)


def _show(value: SettingValue) -> str:
    return "[" + ", ".join(value) + "]" if isinstance(value, tuple) else repr(value)


def _flag(value: object, path: KeyPath, doc: Document) -> bool:
    if not isinstance(value, bool):
        raise doc.error(path, f"expected true or false, got {value!r}")
    return value


def _range(key: str, value: dict[str, Any], path: KeyPath, doc: Document, origin: str
           ) -> Range:
    for k in value:
        if k not in ("range", "log", "int"):
            raise doc.error((*path, k), f"unknown key {k!r} in a range",
                            hint=did_you_mean(str(k), ("range", "log", "int"))
                            or "known keys: range, log, int", key=True)
    if "range" not in value:
        raise doc.error(path, "a range needs range: [LO, HI]")
    bounds = value["range"]
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise doc.error((*path, "range"), "range takes two bounds, [LO, HI]: a space "
                        "without both is unbounded")
    lo, hi = (Float(finite=True).check(b, (*path, "range", i), doc)
              for i, b in enumerate(bounds))
    log = _flag(value.get("log", False), (*path, "log"), doc)
    integer = _flag(value.get("int", False), (*path, "int"), doc)
    if not lo < hi:
        raise doc.error((*path, "range"), f"the range [{lo:g}, {hi:g}] is empty: LO must "
                        "be below HI")
    if log and lo <= 0:
        raise doc.error((*path, "range"), f"a log range needs LO > 0, got {lo:g}")
    if integer and (lo != int(lo) or hi != int(hi)):
        raise doc.error((*path, "range"), "an int range needs whole-number bounds")
    return Range(key, lo, hi, log=log, integer=integer, origin=origin)


def _slo_text(value: object, path: KeyPath, doc: Document) -> str:
    """``{ttft: 500, tpot: 50}`` or ``'ttft:500,tpot:50'`` → the ``--slo`` text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value:
        parts = []
        for k, v in value.items():
            n = Float(min=0.001, finite=True).check(v, (*path, k), doc)
            parts.append(f"{k}:{n:g}")
        return ",".join(parts)
    raise doc.error(path, "slo should be a mapping of limits in ms, e.g. "
                    "{ttft: 500, tpot: 50}")


def _objective(data: _ObjectiveData, doc: Document) -> tuple[Objective, dict[str, Any]]:
    path: KeyPath = ("objective",)
    kinds = [k for k in (MAXIMIZE, MINIMIZE, SEARCH) if k in data]
    if len(kinds) != 1:
        raise doc.error(path, "an objective is one of {maximize: METRIC}, "
                        "{minimize: METRIC} or {search: concurrency, slo: {...}}")
    kind = kinds[0]
    raw: dict[str, Any] = dict(data)
    extra: dict[str, Any] = {}
    if kind == SEARCH:
        if "slo" not in data:
            raise doc.error(path, "a search objective needs an SLO (the capacity is the "
                            "most load that meets it)", hint="e.g. objective: {search: "
                            "concurrency, slo: {ttft: 500, tpot: 50}}")
        extra = {"search": raw[SEARCH], "slo": _slo_text(raw["slo"], (*path, "slo"), doc)}
        for k in ("slo_percentile", "max_level"):
            if k in raw:
                extra[k] = raw[k]
        return Objective(SEARCH, str(raw[SEARCH])), extra
    for k in ("slo", "slo_percentile", "max_level"):
        if k in data:
            raise doc.error((*path, k), f"{k} belongs to a search objective "
                            "({search: concurrency, slo: ...})")
    metric = str(raw[kind])
    metrics = _metrics()
    if metric not in metrics:
        raise doc.error((*path, kind), f"unknown metric {metric!r}",
                        hint=did_you_mean(metric, metrics)
                        or f"metrics: {', '.join(metrics)}")
    if metrics[metric] != (kind == MAXIMIZE):
        better = "higher" if metrics[metric] else "lower"
        raise doc.error((*path, kind), f"{kind} {metric}: {better} is better for this "
                        "metric", hint=f"write {MINIMIZE if kind == MAXIMIZE else MAXIMIZE}:"
                        f" {metric}")
    return Objective(kind, metric, data.get("level")), extra


#: the first line of a variant file ``tune`` wrote (it replaces only such a file)
MARK = "written by variantctl tune"


def best_variant_text(name: str, base: str, tune: str, args: dict[str, Any],
                      env: dict[str, str | None], requires: tuple[str, ...] | None,
                      summary: str) -> str:
    """The YAML of ``variants/NAME.yaml`` that ``extends`` ``base`` with only the settings
    the tune changed (a null removes a flag or variable, as in any variant file)."""
    import yaml

    body: dict[str, Any] = {"description": f"{MARK} {tune}: {summary}", "extends": base}
    if args:
        body["args"] = args
    if env:
        body["env"] = env
    if requires is not None:
        body["requires"] = list(requires)
    head = f"# {MARK} {tune} ({name}); a later tune {tune} replaces this file\n"
    return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
