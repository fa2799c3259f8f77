"""``bisect``: which of the settings two runs differ in accounts for their difference
(pure: the settings, the rounds of configurations to measure, and what the measurements
say; the CLI runs each round as a sweep).

A configuration is run A's with a subset of the settings set to run B's values. The
delta of a subset is its output throughput against A re-measured in the same bisect, as a
percentage of A (with its 95 % interval: ``bench/uncertainty.compare_points``); its share
is that delta over the delta of B (all settings) against A.

- k ≤ :data:`GREEDY_MAX`: round 1 measures A, B and each setting alone (k + 2 launches);
  a setting whose delta is significant and holds at least :data:`ENOUGH_SHARE` of the
  total is named. Otherwise round 2 measures every pair (k(k−1)/2 launches) and the pair
  with the largest share is named when it holds enough.
- k > :data:`GREEDY_MAX`: group halving. Round 1 measures A, B and the two halves of the
  settings; each later round halves the half with the larger share, until one setting
  is left (2 + 2⌈log₂ k⌉ launches at most). When neither half holds enough of the delta
  (the settings act together) it stops and names the group it had.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from variantctl.bench.model import LevelResult
from variantctl.bench.uncertainty import compare_points
from variantctl.jsontypes import Json, JsonMapping, JsonObject
from variantctl.runs.run import as_object
from variantctl.secretmask import DEFAULT, MASK, SecretRule

#: the most settings bisected one at a time (then pairs); more are halved
GREEDY_MAX = 4
#: the share of the total delta a setting (or pair) must hold to be named
ENOUGH_SHARE = 0.5
#: the sections of a variant bisect can vary
SECTIONS = ("args", "env", "requires")
#: what differs between two runs without changing how the server runs
_NOT_CONFIG = frozenset({"name", "description", "parents", "ancestors", "origins", "source",
                         "tags", "port", "host", "expect", "startup", "log"})
#: the throughput figure bisect decides on
METRIC = "output_throughput"


@dataclass(frozen=True)
class Setting:
    """One setting the runs differ in: ``args.itl-ms``, ``env.FOO`` or ``requires.P``
    (a patchset one run required and the other did not); None: not set."""

    section: str
    key: str
    a: Json
    b: Json
    #: a secret's values (variantctl.secretmask) are shown as ``***``, used as they are
    secret: bool = False
    #: the rule that masks secrets held inline in a value (``[--api-key, sk-…]``)
    rule: SecretRule = DEFAULT

    @property
    def label(self) -> str:
        return f"{self.section}.{self.key}"

    def shown(self, value: Json) -> Json:
        """``value`` as printed: ``***`` for a secret's (unset stays None)."""
        if self.secret and value is not None:
            return MASK
        return self.rule.mask_value(_plain(value))

    def to_json(self) -> JsonObject:
        return {"setting": self.label, "a": self.shown(self.a), "b": self.shown(self.b),
                **({"secret": True} if self.secret else {})}


def _plain(value: Json) -> Json:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def settings_between(a: JsonMapping, b: JsonMapping,
                     secrets: SecretRule = DEFAULT
                     ) -> tuple[tuple[Setting, ...], tuple[str, ...]]:
    """The settings two stored variants (``ResolvedVariant.to_dict``) differ in, and the
    other configuration keys they differ in that bisect cannot vary (``command``,
    ``model``...)."""
    out: list[Setting] = []
    for section in ("args", "env"):
        sa, sb = as_object(a.get(section)), as_object(b.get(section))
        for key in sorted({*sa, *sb}):
            va, vb = _plain(sa.get(key)), _plain(sb.get(key))
            if va != vb or type(va) is not type(vb):
                out.append(Setting(section, str(key), va, vb,
                                   secrets.is_secret_setting(f"{section}.{key}"), secrets))
    ra, rb = _names(a.get("requires")), _names(b.get("requires"))
    for name in sorted(ra ^ rb):
        out.append(Setting("requires", name, name in ra, name in rb))
    other = tuple(sorted(k for k in {*a, *b} - {*SECTIONS, *_NOT_CONFIG}
                         if _plain(a.get(k)) != _plain(b.get(k))))
    return tuple(out), other


def _names(value: Json) -> set[str]:
    """A recorded list of names (``requires``) as a set (none when it is not a list)."""
    return {str(v) for v in value} if isinstance(value, (list, tuple)) else set()


Subset = frozenset[int]


def first_round(k: int) -> tuple[Subset, ...]:
    """What round 1 measures: A (empty), B (all), then each setting alone (k ≤
    GREEDY_MAX) or the two halves."""
    everything = frozenset(range(k))
    if k <= GREEDY_MAX:
        singles = tuple(frozenset({i}) for i in range(k)) if k > 1 else ()
        return (frozenset(), everything, *singles)
    return (frozenset(), everything, *halves(everything))


def halves(group: Subset) -> tuple[Subset, Subset]:
    ordered = sorted(group)
    mid = len(ordered) // 2
    return frozenset(ordered[:mid]), frozenset(ordered[mid:])


def cost(k: int) -> tuple[int, int]:
    """(launches round 1 needs, the most every round together may need)."""
    first = len(first_round(k))
    if k <= GREEDY_MAX:
        return first, first + (k * (k - 1) // 2 if k > 2 else 0)
    return first, 2 + 2 * math.ceil(math.log2(k))


@dataclass(frozen=True)
class Effect:
    """What moving one subset of the settings to B's values does, against A."""

    subset: Subset
    delta_pct: float | None
    lo_pct: float | None
    hi_pct: float | None
    significant: bool
    #: of B's delta (None: B's delta is not known or zero)
    share: float | None
    n: int

    def share_ci(self, total: float | None) -> tuple[float | None, float | None]:
        if total in (None, 0.0) or self.lo_pct is None or self.hi_pct is None:
            return None, None
        assert total is not None
        lo, hi = self.lo_pct / total, self.hi_pct / total
        return (min(lo, hi), max(lo, hi))


def level_of(a: Sequence[LevelResult], b: Sequence[LevelResult]) -> int | None:
    """The concurrency bisect decides at: the highest both A and B were measured at."""
    common = {lv.concurrency for lv in a} & {lv.concurrency for lv in b}
    return max(common) if common else None


def effect(subset: Subset, level: int, a: Sequence[LevelResult],
           other: Sequence[LevelResult], total: float | None) -> Effect:
    """The subset's throughput delta against A at ``level``, and its share of ``total``."""
    tests = compare_points(level, [lv for lv in a if lv.concurrency == level],
                           [lv for lv in other if lv.concurrency == level], [METRIC])
    if not tests:
        return Effect(subset, None, None, None, False, None, 0)
    t = tests[0]
    d = t.difference
    delta = t.delta_pct
    share = delta / total if delta is not None and total not in (None, 0.0) else None
    return Effect(subset, delta, d.lo_pct if d else None, d.hi_pct if d else None,
                  t.significant, share, t.b.n)


@dataclass(frozen=True)
class Decision:
    """After a round: what is named (``found``), or what to measure next (``next``);
    neither: nothing accounts for enough of the delta (``reason`` says why)."""

    found: Subset | None
    next: tuple[Subset, ...]
    reason: str


def decide(k: int, effects: Mapping[Subset, Effect], total: Effect | None) -> Decision:
    """The next step from what is measured so far (every round's effects together)."""
    if total is None or total.delta_pct is None or not total.significant:
        return Decision(None, (), "B does not differ from A beyond the noise when both are "
                        "measured here: there is no difference to explain")
    everything = frozenset(range(k))
    if k == 1:
        return Decision(everything, (), "the runs differ in one setting")
    if k <= GREEDY_MAX:
        return _greedy(k, effects)
    return _halving(everything, effects)


def _enough(e: Effect | None) -> bool:
    return e is not None and e.significant and e.share is not None and e.share >= ENOUGH_SHARE


def _greedy(k: int, effects: Mapping[Subset, Effect]) -> Decision:
    singles = [effects.get(frozenset({i})) for i in range(k)]
    best = _best([e for e in singles if _enough(e)])
    if best is not None:
        return Decision(best.subset, (), "one setting alone holds most of the delta")
    pairs = tuple(frozenset(p) for p in itertools.combinations(range(k), 2))
    if k > 2 and any(p not in effects for p in pairs):
        return Decision(None, pairs, "no setting alone holds half of the delta: measuring "
                        "the pairs")
    best = _best([e for e in (effects.get(p) for p in pairs) if _enough(e)])
    if best is not None:
        return Decision(best.subset, (), "no setting alone, but this pair, holds most of "
                        "the delta")
    return Decision(None, (), "neither one setting nor a pair holds half of the delta "
                    "(the settings act together, or the delta is within the noise)")


def _best(effects: Sequence[Effect | None]) -> Effect | None:
    found = [e for e in effects if e is not None and e.share is not None]
    return max(found, key=lambda e: e.share or 0.0, default=None)


def _halving(group: Subset, effects: Mapping[Subset, Effect]) -> Decision:
    while len(group) > 1:
        h1, h2 = halves(group)
        if h1 not in effects or h2 not in effects:
            return Decision(None, (h1, h2), "halving")
        best = _best([e for e in (effects[h1], effects[h2]) if _enough(e)])
        if best is None:
            return Decision(group, (), "neither half holds half of the delta: the "
                            "settings of this group act together")
        group = best.subset
    return Decision(group, (), "halving narrowed the delta to one setting")


def include_of(subset: Subset, settings: Sequence[Setting]) -> JsonObject:
    """The sweep ``include`` entry (args/env keys) that sets ``subset`` to B's values."""
    out: JsonObject = {}
    for i in sorted(subset):
        s = settings[i]
        if s.section in ("args", "env"):
            out[s.label] = s.b
    return out


def requires_of(subset: Subset, settings: Sequence[Setting], base: Sequence[str]
                ) -> tuple[str, ...]:
    """A's patchsets with those of ``subset`` set as B has them."""
    out = list(base)
    for i in sorted(subset):
        s = settings[i]
        if s.section != "requires":
            continue
        if s.b and s.key not in out:
            out.append(s.key)
        if not s.b and s.key in out:
            out.remove(s.key)
    return tuple(out)


def subset_label(subset: Subset, settings: Sequence[Setting]) -> str:
    """``A`` (nothing moved), ``B`` (everything), else the moved settings."""
    if not subset:
        return "A"
    if len(subset) == len(settings):
        return "B"
    return " + ".join(settings[i].label for i in sorted(subset))
