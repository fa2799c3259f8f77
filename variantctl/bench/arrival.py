"""Arrival profiles: which levels a run has and when each level's requests are sent.

PURE (no I/O). A run is a ladder of levels, one :class:`Profile` each:

- ``concurrency`` — ``--concurrency 1,2,4`` at one ``--request-rate`` (``inf``: all at
  once, up to the concurrency): one level per concurrency;
- ``rate`` — ``--request-rate 1,2,4``: one level per rate, the concurrency a cap;
- ``ramp-up`` — ``--ramp-up linear|exponential --ramp-start R --ramp-end R``: one level
  whose rate grows from R to R' over its requests, as ``vllm bench serve``'s
  ``--ramp-up-strategy`` (``serve._get_current_request_rate``);
- ``trace`` — ``--prompt trace:FILE``: the trace's own timestamps.

:func:`offsets` is vLLM's ``get_request`` schedule: cumulative gamma delays of shape
``burstiness`` and mean ``1/rate`` (the rate of the request's index under a ramp-up),
rescaled to ``n/rate`` seconds for a constant rate (vLLM's normalisation).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from variantctl.benchparams import MAX_SECONDS, BenchParams, dataset_spec
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsonfields import Fields
from variantctl.jsontypes import JsonObject


@dataclass(frozen=True)
class Profile:
    """What produced one level's arrivals (recorded with the level)."""

    kind: str  # concurrency | rate | ramp-up | trace
    rate: float = math.inf  # requests/s (constant kinds)
    ramp: str | None = None  # linear | exponential
    ramp_start: float | None = None
    ramp_end: float | None = None
    trace_speed: float | None = None

    def label(self) -> str:
        if self.kind == "ramp-up":
            return f"ramp-up {self.ramp} {self.ramp_start:g}→{self.ramp_end:g} req/s"
        if self.kind == "trace":
            return f"trace ×{self.trace_speed:g}"
        if self.kind == "rate":
            return f"rate {self.rate:g} req/s"
        return "concurrency" + ("" if math.isinf(self.rate) else f" at {self.rate:g} req/s")

    def to_json(self) -> JsonObject:
        out: JsonObject = {"kind": self.kind,
                           "rate": "inf" if math.isinf(self.rate) else self.rate}
        if self.kind == "ramp-up":
            out |= {"ramp": self.ramp, "ramp_start": self.ramp_start,
                    "ramp_end": self.ramp_end}
        if self.kind == "trace":
            out["trace_speed"] = self.trace_speed
        return out

    @classmethod
    def from_fields(cls, f: Fields) -> Profile:
        kind = f.text("kind")
        if kind not in ("concurrency", "rate", "ramp-up", "trace"):
            raise f.error("kind", "should be concurrency, rate, ramp-up or trace")
        return cls(kind=kind, rate=f.number("rate", math.inf), ramp=f.opt_text("ramp"),
                   ramp_start=f.opt_number("ramp_start"), ramp_end=f.opt_number("ramp_end"),
                   trace_speed=f.opt_number("trace_speed"))


@dataclass(frozen=True)
class Level:
    """One level of the ladder: its concurrency (a cap under a rate) and its profile."""

    concurrency: int
    profile: Profile


def levels(params: BenchParams) -> tuple[Level, ...]:
    """The ladder's levels in order (one repeat)."""
    spec = dataset_spec(params.prompt)
    if spec is not None and spec[0] == "trace":
        p = Profile("trace", trace_speed=params.trace_speed)
        return tuple(Level(c, p) for c in params.concurrency)
    if params.ramp_up is not None:
        p = Profile("ramp-up", ramp=params.ramp_up, ramp_start=params.ramp_start,
                    ramp_end=params.ramp_end)
        return tuple(Level(c, p) for c in params.concurrency)
    if params.rate_ladder:
        (cap,) = params.concurrency  # BenchParams: one cap under a rate ladder
        return tuple(Level(cap, Profile("rate", rate=r)) for r in params.rate_ladder)
    return tuple(Level(c, Profile("concurrency", rate=params.request_rate))
                 for c in params.concurrency)


def rate_at(profile: Profile, index: int, total: int) -> float:
    """The request rate when request ``index`` of ``total`` is due (vLLM's ramp-up)."""
    if profile.kind == "ramp-up":
        assert profile.ramp_start is not None and profile.ramp_end is not None
        progress = index / max(total - 1, 1)
        if profile.ramp == "linear":
            return profile.ramp_start + (profile.ramp_end - profile.ramp_start) * progress
        return float(profile.ramp_start * (profile.ramp_end / profile.ramp_start) ** progress)
    return profile.rate


def offsets(profile: Profile, n: int, burstiness: float, seed: int) -> list[float]:
    """Send times of ``n`` requests, seconds from the level's start."""
    rates = [rate_at(profile, i, n) for i in range(n)]
    if all(math.isinf(r) for r in rates):
        return [0.0] * n
    rng = random.Random(seed)
    total = 0.0
    out: list[float] = []
    for r in rates:
        if math.isinf(r):
            d = 0.0
        elif math.isinf(burstiness):
            d = 1.0 / r
        else:
            d = rng.gammavariate(burstiness, 1.0 / (r * burstiness))
        total += d
        out.append(total)
    if profile.kind != "ramp-up" and out and out[-1] > 0:
        factor = (n / profile.rate) / out[-1]
        out = [t * factor for t in out]
    if out and not out[-1] <= MAX_SECONDS:
        # a time derived from a rate is capped like the time options themselves
        raise VariantctlError(
            f"{profile.label()}: sending {n:,} requests would take {out[-1]:.3g} s, more "
            f"than {MAX_SECONDS:,.0f} s (the longest time option): raise the rate or send "
            "fewer requests", exit_code=ExitCode.USAGE)
    return out


def next_gap(profile: Profile, index: int, burstiness: float, rng: random.Random) -> float:
    """``--duration`` mode (no total known): the delay before request ``index``."""
    rate = profile.rate
    if math.isinf(rate):
        return 0.0
    # capped like the time options: --duration ends the level long before it anyway
    if math.isinf(burstiness):
        return min(1.0 / rate, MAX_SECONDS)
    return min(rng.gammavariate(burstiness, 1.0 / (rate * burstiness)), MAX_SECONDS)
