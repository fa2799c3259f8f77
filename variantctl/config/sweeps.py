"""``sweeps/NAME.yaml``: the schema of a sweep file and its loader (file:line errors).

The one place sweep YAML is read; the result is a frozen
:class:`~variantctl.sweeps.model.SweepSpec`, expanded by :mod:`variantctl.sweeps.grid`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypedDict

from variantctl.config.hosts import ENV_NAME
from variantctl.config.schema import (
    Bool,
    Field,
    Float,
    Int,
    ListOf,
    MapOf,
    Nullable,
    OneOf,
    Str,
    Struct,
)
from variantctl.config.variants import NAME_PATTERN
from variantctl.config.yamlload import Document, KeyPath, load_named, yaml_names
from variantctl.errors import ConfigError, VariantctlError
from variantctl.spelling import did_you_mean
from variantctl.sweeps.grid import grid_size, too_many_points
from variantctl.sweeps.model import Axis, GridValue, StopRules, SweepSpec
from variantctl.variants.flags import flag_problem, normalise_flag

if TYPE_CHECKING:
    from variantctl.benchparams import BenchParams

_VALUE = Nullable(OneOf(Bool(), Int(), Float(), Str(allow_empty=True)))
_VALUES = ListOf(_VALUE, min_len=1)
_NAMES = ListOf(Str(pattern=NAME_PATTERN, what="a variant name"), single=True, min_len=1)

class BenchData(TypedDict, total=False):
    """A checked ``bench:`` mapping of a sweep file."""

    concurrency: tuple[int, ...]
    requests: int
    duration: float
    prompts: tuple[str, ...]
    input_len: int
    output_len: int
    ignore_eos: bool
    temperature: float
    seed: int
    warmup: int | str
    repeat: int
    endpoint: str
    request_rate: float | str | tuple[float, ...]
    ramp_up: str
    ramp_start: float
    ramp_end: float
    timeout_s: float
    trace_speed: float
    search: str
    slo: str
    slo_percentile: float
    max_level: float
    prefix_len: int
    prefixes: int
    turns: int


class GridData(TypedDict, total=False):
    """A checked ``grid:`` mapping: each key's values, in order."""

    args: dict[str, tuple[GridValue, ...]]
    env: dict[str, tuple[GridValue, ...]]


class StopData(TypedDict, total=False):
    """A checked ``stop:`` mapping."""

    min_success_pct: float
    max_ttft_p90_ms: float


class _SweepOptional(TypedDict, total=False):
    description: str
    hosts: tuple[str, ...]
    port: int
    grid: GridData
    link: tuple[tuple[str, ...], ...]
    exclude: tuple[dict[str, GridValue], ...]
    include: tuple[dict[str, GridValue], ...]
    bench: BenchData
    profile: bool
    rank: str
    stop: StopData


class SweepData(_SweepOptional):
    """A checked sweep file."""

    base: tuple[str, ...]


_BENCH = Struct("bench", {
    "concurrency": Field(ListOf(Int(min=1), single=True, min_len=1)),
    "requests": Field(Int(min=1)),
    "duration": Field(Float(min=0.001, finite=True)),
    "prompts": Field(ListOf(Str(), single=True, min_len=1)),
    "input_len": Field(Int(min=1)),
    "output_len": Field(Int(min=1)),
    "ignore_eos": Field(Bool()),
    "temperature": Field(Float(min=0, finite=True)),
    "seed": Field(Int()),
    "warmup": Field(OneOf(Int(min=0), Str())),
    "repeat": Field(Int(min=1)),
    "endpoint": Field(Str()),
    "request_rate": Field(OneOf(Float(min=0.001), Str(pattern="inf", what="'inf'"),
                                ListOf(Float(min=0.001), min_len=2))),
    "ramp_up": Field(OneOf(Str(pattern="linear", what="'linear'"),
                           Str(pattern="exponential", what="'exponential'"))),
    "ramp_start": Field(Float(min=0.001, finite=True)),
    "ramp_end": Field(Float(min=0.001, finite=True)),
    "timeout_s": Field(Float(min=1, finite=True)),
    "trace_speed": Field(Float(min=0.001, finite=True)),
    "search": Field(OneOf(Str(pattern="concurrency", what="'concurrency'"),
                          Str(pattern="rate", what="'rate'"))),
    "slo": Field(Str()),
    "slo_percentile": Field(Float(min=0.001, finite=True)),
    "max_level": Field(Float(min=1, finite=True)),
    "prefix_len": Field(Int(min=1)),
    "prefixes": Field(Int(min=1)),
    "turns": Field(Int(min=1)),
}, shape=BenchData)

_SWEEP = Struct("sweep", {
    "description": Field(Str(allow_empty=True)),
    "base": Field(_NAMES, required=True),
    "hosts": Field(ListOf(Str(pattern=NAME_PATTERN, what="a host name"), single=True)),
    "port": Field(Int(min=1, max=65535)),
    "grid": Field(Struct("grid", {
        "args": Field(MapOf(Str(), _VALUES)),
        "env": Field(MapOf(Str(pattern=ENV_NAME, what="an environment variable name"),
                           _VALUES)),
    }, shape=GridData)),
    "link": Field(ListOf(ListOf(Str(), min_len=2))),
    "exclude": Field(ListOf(MapOf(Str(), _VALUE))),
    "include": Field(ListOf(MapOf(Str(), _VALUE))),
    "bench": Field(_BENCH),
    "profile": Field(Bool()),
    "rank": Field(Str(pattern="capacity", what="'capacity'")),
    "stop": Field(Struct("stop", {
        "min_success_pct": Field(Float(min=0, finite=True)),
        "max_ttft_p90_ms": Field(Float(min=0, finite=True)),
    }, shape=StopData)),
}, shape=SweepData)


def sweeps_dir(project: Path) -> Path:
    return project / "sweeps"


def sweep_names(directory: Path) -> list[str]:
    return yaml_names(directory)


def load_sweep(directory: Path, name: str, *, display_base: Path | None = None) -> SweepSpec:
    """Load ``directory/NAME.yaml``; NotFoundError (with did-you-mean) when there is none."""
    return parse_sweep(load_named(directory, name, "sweep", display_base=display_base), name)


def _key(raw: str, path: KeyPath, doc: Document, *, base_ok: bool = False) -> str:
    """``args.tp`` → ``args.tensor-parallel-size``; ``env.X`` kept; ``base`` if allowed."""
    if base_ok and raw == "base":
        return raw
    section, dot, name = raw.partition(".")
    if not dot or section not in ("args", "env") or not name:
        raise doc.error(path, f"{raw!r} is not a grid key",
                        hint="write args.FLAG or env.NAME" + (" (or base)" if base_ok else ""))
    if section == "args":
        flag = normalise_flag(name)
        problem = flag_problem(flag)
        if problem:
            raise doc.error(path, problem)
        return f"args.{flag}"
    return raw


def parse_sweep(doc: Document, name: str) -> SweepSpec:
    """A checked document → SweepSpec; ConfigError at the offending key otherwise."""
    if not re.fullmatch(NAME_PATTERN, name):
        raise ConfigError(f"{name!r} is not a valid sweep name (the file name)",
                          source=doc.source)
    if doc.data is None:
        raise ConfigError("empty sweep file", source=doc.source,
                          hint="a sweep needs at least `base:`")
    data = _SWEEP.check(doc.data, (), doc)
    bases = tuple(data["base"])
    axes: list[Axis] = []
    grid: GridData = data.get("grid") or {}
    for section, by_name in (("args", grid.get("args")), ("env", grid.get("env"))):
        for raw, values in (by_name or {}).items():
            path = ("grid", section, raw)
            key = _key(f"{section}.{raw}", path, doc)
            if any(a.key == key for a in axes):
                raise doc.error(path, f"{key} is given twice (aliases name the same flag)",
                                key=True)
            m = doc.mark(path, key=True)
            axes.append(Axis(key, tuple(values), f"{m.source}:{m.line}"))
    by_key = {a.key: a for a in axes}
    links: list[tuple[str, ...]] = []
    linked: set[str] = set()
    for i, group in enumerate(data.get("link") or ()):
        keys = []
        for j, raw in enumerate(group):
            key = _key(raw, ("link", i, j), doc)
            if key not in by_key:
                raise doc.error(("link", i, j), f"{key} is not in the grid",
                                hint=did_you_mean(key, by_key) or "link keys must be grid keys")
            if key in linked:
                raise doc.error(("link", i, j), f"{key} is linked twice")
            linked.add(key)
            keys.append(key)
        lengths = {len(by_key[k].values) for k in keys}
        if len(lengths) > 1:
            desc = ", ".join(f"{k} has {len(by_key[k].values)}" for k in keys)
            raise doc.error(("link", i), f"linked keys move together, so their lists need "
                            f"the same length ({desc})")
        links.append(tuple(keys))
    exclude = tuple(_assignment(rule, ("exclude", i), doc, bases, by_key)
                    for i, rule in enumerate(data.get("exclude") or ()))
    include = tuple(_assignment(rule, ("include", i), doc, bases, None)
                    for i, rule in enumerate(data.get("include") or ()))
    stop = data.get("stop") or {}
    spec = SweepSpec(
        name=name, source=doc.source, bases=bases, axes=tuple(axes), links=tuple(links),
        exclude=exclude, include=include, bench=_bench(data.get("bench") or {}, doc),
        hosts=tuple(data.get("hosts") or ()),
        stop=StopRules(stop.get("min_success_pct"), stop.get("max_ttft_p90_ms")),
        port=data.get("port"), description=data.get("description", ""),
        profile=bool(data.get("profile", False)),
        rank=data.get("rank"),
    )
    if spec.rank == "capacity" and any(b.search is None for b in spec.bench):
        raise doc.error(("rank",), "rank: capacity needs a capacity search in bench: "
                        "(search: concurrency|rate and slo: ttft:MS,tpot:MS)")
    problem = too_many_points(grid_size(spec))
    if problem:  # counted, never expanded: said before a plan is built
        raise doc.error(("grid",) if grid else ("base",), problem,
                        hint="split it into several sweeps, or link or exclude values")
    return spec


def _assignment(rule: dict[str, GridValue], path: KeyPath, doc: Document,
                bases: tuple[str, ...], grid: dict[str, Axis] | None
                ) -> MappingProxyType[str, GridValue]:
    if not rule:
        raise doc.error(path, "an empty rule would match every point")
    out: dict[str, GridValue] = {}
    for raw, value in rule.items():
        key = _key(raw, (*path, raw), doc, base_ok=True)
        if key == "base":
            if value not in bases:
                raise doc.error((*path, raw), f"{value!r} is not a base of this sweep",
                                hint=did_you_mean(str(value), bases)
                                or f"bases: {', '.join(bases)}")
        elif grid is not None and key not in grid:
            raise doc.error((*path, raw), f"{key} is not in the grid, so this exclusion "
                            "can never match", hint=did_you_mean(key, grid))
        out[key] = value
    return MappingProxyType(out)


def _bench(data: BenchData, doc: Document) -> tuple[BenchParams, ...]:
    from variantctl.benchparams import RATE_CAP_DEFAULT, BenchParams, parse_goodput

    prompts = data.get("prompts") or ("short",)
    # BenchParams' keyword arguments, each as _BENCH checked it (BenchParams checks the mix)
    common: dict[str, Any] = {}
    for key in ("requests", "duration", "input_len", "output_len", "ignore_eos",
                "temperature", "seed", "repeat", "endpoint", "timeout_s", "trace_speed"):
        if key in data:
            common[key] = data[key]
    common["output_len_set"] = "output_len" in data  # else a dataset's own lengths
    if "concurrency" in data:
        if len(set(data["concurrency"])) != len(data["concurrency"]):
            raise doc.error(("bench", "concurrency"), "a level is given twice")
        common["concurrency"] = tuple(data["concurrency"])
    if "warmup" in data:
        common["warmup"] = str(data["warmup"])
    if "request_rate" in data:
        rate = data["request_rate"]
        if isinstance(rate, (list, tuple)):  # a rate ladder: one level per rate
            if len(set(rate)) != len(rate):
                raise doc.error(("bench", "request_rate"), "a rate is given twice")
            common["rate_ladder"] = tuple(float(r) for r in rate)
            common["request_rate"] = float(rate[0])
            if "concurrency" not in data:
                common["concurrency"] = (data.get("requests") or RATE_CAP_DEFAULT,)
        else:
            common["request_rate"] = math.inf if rate == "inf" else float(rate)
    for key, value in data.items():
        if key in ("ramp_up", "ramp_start", "ramp_end", "search", "slo_percentile",
                   "max_level", "prefix_len", "prefixes", "turns"):
            common[key] = value
    if "slo" in data:
        try:
            common["slo"] = parse_goodput(data["slo"], "slo")
        except VariantctlError as exc:
            raise doc.error(("bench", "slo"), exc.message) from None
    if data.get("search") == "rate" and "concurrency" not in data:
        common["concurrency"] = (data.get("requests") or RATE_CAP_DEFAULT,)
    if "ramp_up" in data and "concurrency" not in data:
        common["concurrency"] = (data.get("requests") or RATE_CAP_DEFAULT,)
    out = []
    for i, prompt in enumerate(prompts):
        try:
            out.append(BenchParams(prompt=prompt, **common))
        except VariantctlError as exc:
            at = ("bench", "prompts", i) if "prompt" in exc.message else ("bench",)
            # the params speak of CLI options (--output-len); the file has keys (output_len)
            text = re.sub(r"--([a-z-]+)", lambda m: m.group(1).replace("-", "_"), exc.message)
            raise doc.error(at, text) from None
    return tuple(out)
