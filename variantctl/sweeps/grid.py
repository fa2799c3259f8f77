"""Grid expansion: axes × links, minus exclusions, plus includes (pure)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.sweeps.model import Axis, GridKey, GridPoint, GridValue, SweepSpec

#: the most points a sweep may have (each one launches a server and benchmarks it: far
#: more than a sweep can run, and what a plan can hold in memory)
MAX_POINTS = 100_000


def _groups(axes: Sequence[Axis], links: Sequence[Sequence[GridKey]]) -> list[list[Axis]]:
    """Axes grouped: a link's axes form one group (zipped), every other axis its own."""
    by_key = {a.key: a for a in axes}
    linked: dict[GridKey, int] = {}
    for i, group in enumerate(links):
        for key in group:
            linked[key] = i
    out: list[list[Axis]] = []
    seen: set[int] = set()
    for axis in axes:
        gi = linked.get(axis.key)
        if gi is None:
            out.append([axis])
        elif gi not in seen:
            seen.add(gi)
            out.append([by_key[k] for k in links[gi]])
    return out


def _combinations(spec: SweepSpec) -> Iterator[dict[GridKey, GridValue]]:
    options: list[list[dict[GridKey, GridValue]]] = []
    for group in _groups(spec.axes, spec.links):
        width = len(group[0].values)
        options.append([{a.key: a.values[i] for a in group} for i in range(width)])
    for combo in itertools.product(*options):
        merged: dict[GridKey, GridValue] = {}
        for part in combo:
            merged.update(part)
        yield merged


def matches(rule: Mapping[GridKey, GridValue], base: str,
            values: Mapping[GridKey, GridValue]) -> bool:
    """Does a point (base + values) match every key of an exclusion?"""
    for key, want in rule.items():
        have = base if key == "base" else values.get(key, _ABSENT)
        if have is _ABSENT or not _same(have, want):
            return False
    return True


_ABSENT: object = object()


def _same(a: object, b: object) -> bool:
    # YAML `1` and `true` are different values here (bool is an int in Python)
    return type(a) is type(b) and a == b


def grid_size(spec: SweepSpec) -> int:
    """How many points :func:`expand` would produce before exclusions, counted without
    expanding anything (a 10⁹-point grid is arithmetic here, not a list)."""
    grid_bases = spec.bases if spec.axes or not spec.include else ()
    widths = [len(group[0].values) for group in _groups(spec.axes, spec.links)]
    extra = sum(1 if "base" in rule else len(spec.bases) for rule in spec.include)
    return len(grid_bases) * math.prod(widths) + extra


def too_many_points(count: int) -> str | None:
    """Why a sweep of ``count`` points is refused, or None."""
    if count <= MAX_POINTS:
        return None
    return (f"the sweep has {count:,} points (bases × grid values + includes), more than "
            f"the {MAX_POINTS:,} a sweep may have")


def expand(spec: SweepSpec) -> tuple[GridPoint, ...]:
    """Every point of the sweep, numbered from 1 in a stable order: bases outer, then
    the grid in file order (last axis fastest), then the includes. Without a grid a
    sweep is its bases, unless it has includes: then only those. A grid larger than
    :data:`MAX_POINTS` is refused (counted first, never materialised)."""
    problem = too_many_points(grid_size(spec))
    if problem:
        raise VariantctlError(f"{spec.source}: {problem}", exit_code=ExitCode.USAGE,
                              hint="split it into several sweeps, or link or exclude values")
    raw: list[tuple[str, dict[GridKey, GridValue]]] = []
    # no grid but includes: just those points (an empty grid alone is the base itself)
    grid_bases = spec.bases if spec.axes or not spec.include else ()
    for base in grid_bases:
        for values in _combinations(spec):
            if any(matches(rule, base, values) for rule in spec.exclude):
                continue
            raw.append((base, values))
    for extra in spec.include:
        bases = [str(extra["base"])] if "base" in extra else list(spec.bases)
        for base in bases:
            raw.append((base, {k: v for k, v in extra.items() if k != "base"}))
    return tuple(GridPoint(i, base, MappingProxyType(values))
                 for i, (base, values) in enumerate(raw, start=1))


def split_values(values: Mapping[GridKey, GridValue]
                 ) -> tuple[dict[str, GridValue], dict[str, GridValue]]:
    """(args, env) of a point, section prefixes dropped."""
    args: dict[str, GridValue] = {}
    env: dict[str, GridValue] = {}
    for key, value in values.items():
        section, _, name = key.partition(".")
        (args if section == "args" else env)[name] = value
    return args, env
