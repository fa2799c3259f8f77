"""The winner of a tune, only when the noise allows it (pure).

The unit is the launch: each launch's objective is one sample, so an interval covers the
launch-to-launch noise of the server and machine (not only the request-to-request spread
inside one server run). A configuration needs at least two launches to have an interval
and to be compared (Student's t over launches; Welch's test between two configurations,
:mod:`variantctl.bench.stats`): a probe alone never makes a winner.
"""

from __future__ import annotations

from dataclasses import dataclass

from variantctl.bench import stats
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
