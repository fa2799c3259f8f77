"""The winner of a tune, only when the noise allows it (pure).

The unit is the launch: each launch's objective is one sample, so an interval covers the
launch-to-launch noise of the server and machine (not only the request-to-request spread
inside one server run). A configuration needs at least two launches to have an interval
and to be compared (Student's t over launches; Welch's test between two configurations,
:mod:`variantctl.bench.stats`): a probe alone never makes a winner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from variantctl.bench import stats
from variantctl.tune.model import Settings
from variantctl.tune.search import Candidate, SearchLog

#: launches a configuration needs before it is compared with another
MIN_LAUNCHES = 2


@dataclass(frozen=True)
class Verdict:
    best: Candidate | None
    interval: stats.Interval | None
    equivalent: tuple[Candidate, ...]
    #: the best beats the base variant beyond the noise
    beats_base: bool
    reason: str


def decide(log: SearchLog, *, maximize: bool) -> Verdict:
    """The best confirmed configuration, those not significantly different from it, and
    whether it beats the base beyond the noise."""
    confirmed = [c for c in log.candidates if len(c.values) >= MIN_LAUNCHES]
    if not confirmed:
        return Verdict(None, None, (), False, "no configuration was launched twice: no "
                       "winner can be told from the noise (raise the budget)")
    best = max(confirmed, key=lambda c: (c.mean() or 0.0) * (1 if maximize else -1))
    interval = stats.t_interval(best.values)
    equivalent = tuple(c for c in confirmed if c is not best
                       and not stats.welch(best.values, c.values).significant)
    base = next(c for c in log.candidates if c.is_base)
    if best.is_base:
        return Verdict(best, interval, equivalent, False,
                       "the base variant is the best configuration measured")
    if len(base.values) < MIN_LAUNCHES:
        return Verdict(best, interval, equivalent, False,
                       "the base variant was not launched twice: whether the best beats it "
                       "cannot be told from the noise")
    if base in equivalent:
        return Verdict(best, interval, equivalent, False,
                       "nothing beats the base variant beyond the noise")
    return Verdict(best, interval, equivalent, True,
                   "beats the base variant beyond the noise (Welch, 95 %)")


#: what a configuration costs, in the order it counts: the GPUs it takes (tensor ×
#: pipeline parallel), the share of GPU memory it reserves, and the sequences it runs at
#: once (a proxy for the KV cache it needs); a flag neither set nor in the base variant
#: takes vLLM's default, or is unknown (not compared) where vLLM's default varies
COST_FLAGS = ("tensor-parallel-size", "pipeline-parallel-size", "gpu-memory-utilization",
              "max-num-seqs")
VLLM_DEFAULTS: dict[str, float] = {"tensor-parallel-size": 1.0,
                                   "pipeline-parallel-size": 1.0,
                                   "gpu-memory-utilization": 0.9}


@dataclass(frozen=True)
class Cost:
    """GPUs, GPU memory share and concurrent sequences of a configuration (None: unknown)."""

    gpus: float | None
    memory: float | None
    seqs: float | None

    def parts(self) -> tuple[tuple[str, float | None], ...]:
        return (("GPUs", self.gpus), ("gpu-memory-utilization", self.memory),
                ("max-num-seqs", self.seqs))


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def cost_of(settings: Settings, base_args: Mapping[str, object]) -> Cost:
    """The cost of ``settings`` on a base variant whose arguments are ``base_args``."""
    got: dict[str, float | None] = {}
    for flag in COST_FLAGS:
        key = f"args.{flag}"
        raw = settings[key] if key in settings else base_args.get(flag)
        got[flag] = VLLM_DEFAULTS.get(flag) if raw is None else _number(raw)
    tp, pp = got["tensor-parallel-size"], got["pipeline-parallel-size"]
    return Cost(tp * pp if tp is not None and pp is not None else None,
                got["gpu-memory-utilization"], got["max-num-seqs"])


def compare_cost(a: Cost, b: Cost) -> int:
    """-1 when ``a`` is cheaper than ``b``, 1 when dearer, 0 when no known part differs:
    the first part (GPUs, then memory, then sequences) known on both sides that differs
    decides."""
    for (_, x), (_, y) in zip(a.parts(), b.parts(), strict=True):
        if x is not None and y is not None and x != y:
            return -1 if x < y else 1
    return 0


@dataclass(frozen=True)
class Recommendation:
    """The cheapest configuration within the noise of the best that also beats the base
    beyond the noise, recommended over the best because it costs less."""

    candidate: Candidate
    interval: stats.Interval
    #: why: what it saves, and the two tests it passed
    why: str


def _saving(cheap: Cost, dear: Cost) -> str:
    for (label, x), (_, y) in zip(cheap.parts(), dear.parts(), strict=True):
        if x is not None and y is not None and x != y:
            return f"{label} {x:g} instead of {y:g}"
    return ""


def recommend(verdict: Verdict, log: SearchLog, base_args: Mapping[str, object], *,
              maximize: bool) -> Recommendation | None:
    """Among the configurations not significantly different from the best, the cheapest
    (:func:`compare_cost`) when it is cheaper than the best and itself beats the base
    beyond the noise (Welch, 95 %); None otherwise (the best is the recommendation)."""
    from functools import cmp_to_key

    best = verdict.best
    if best is None or not verdict.beats_base:
        return None
    base = next(c for c in log.candidates if c.is_base)
    best_cost = cost_of(best.settings, base_args)
    sign = 1.0 if maximize else -1.0
    cheaper: list[tuple[Candidate, Cost]] = []
    for c in verdict.equivalent:
        if c.is_base or len(c.values) < MIN_LAUNCHES:
            continue
        c_cost = cost_of(c.settings, base_args)
        if compare_cost(c_cost, best_cost) >= 0:
            continue
        vs_base = stats.welch(base.values, c.values)
        if vs_base.significant and vs_base.delta_pct * sign > 0:
            cheaper.append((c, c_cost))
    if not cheaper:
        return None
    # the cheapest; among equally cheap ones the better mean
    cheaper.sort(key=lambda cc: -sign * (cc[0].mean() or 0.0))

    def by_cost(x: tuple[Candidate, Cost], y: tuple[Candidate, Cost]) -> int:
        return compare_cost(x[1], y[1])

    cheaper.sort(key=cmp_to_key(by_cost))
    pick, pick_cost = cheaper[0]
    to_best = stats.welch(best.values, pick.values)
    to_base = stats.welch(base.values, pick.values)
    why = (f"{_saving(pick_cost, best_cost)}; within the noise of the best "
           f"({to_best.delta_pct:+.1f} %, 95 % CI {to_best.lo_pct:+.1f} … "
           f"{to_best.hi_pct:+.1f} %) and beats the base variant beyond it "
           f"({to_base.delta_pct:+.1f} %, Welch, 95 %)")
    return Recommendation(pick, stats.t_interval(pick.values), why)
