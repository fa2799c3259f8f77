"""Confidence intervals and two-sample tests, in pure Python (PURE: no I/O, no clock).

What docs/report.md ("Statistics") explains, computed here and nowhere else:

- :func:`t_interval` — the 95 % interval of a mean from ``n`` independent values
  (one per repeat) with Student's t on ``n − 1`` degrees of freedom;
- :func:`bootstrap_intervals` — the percentile bootstrap of statistics of one
  sample (the requests of a level), with a fixed seed so the same data gives the
  same interval every time;
- :func:`welch` — Welch's two-sample t-test and the interval of the difference of two
  means (unequal variances, Welch–Satterthwaite degrees of freedom);
- :func:`bootstrap_difference` — the percentile-bootstrap interval of a statistic's
  relative difference between two samples (each resampled independently); a
  difference is significant when the interval leaves out 0.

Student's t distribution comes from the regularized incomplete beta function
(Numerical Recipes' continued fraction), so no scipy is needed.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

CONFIDENCE = 0.95
#: bootstrap resamples (a level's figures share one resampling of its requests)
RESAMPLES = 1000
SEED = 20260101


# -- Student's t ------------------------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
          + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_ppf(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t (bisection on :func:`t_cdf`; |error| < 1e-10)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {q}")
    if q < 0.5:
        return -t_ppf(1.0 - q, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < q:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


# -- intervals --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """An estimate and its 95 % confidence interval."""

    estimate: float
    lo: float
    hi: float

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2.0

    @property
    def half_width_pct(self) -> float:
        """Half the interval's width as a percentage of the estimate (inf for 0)."""
        return 100.0 * self.half_width / abs(self.estimate) if self.estimate else math.inf


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


def sample_var(values: Sequence[float]) -> float:
    """The unbiased (n − 1) variance; 0 for fewer than 2 values."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.fsum((v - m) ** 2 for v in values) / (n - 1)


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Mean ± t(n−1) × s/√n. Assumes independent, roughly normal values (a repeat's
    figure averages many requests, so the central limit theorem makes it so)."""
    if len(values) < 2:
        raise ValueError("a t interval needs at least 2 values")
    m = mean(values)
    half = t_ppf(0.5 + confidence / 2.0, len(values) - 1) * math.sqrt(
        sample_var(values) / len(values))
    return Interval(m, m - half, m + half)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    lo, hi, frac = _rank(len(sorted_values), q)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def _rank(n: int, q: float) -> tuple[int, int, float]:
    """Where the ``q`` quantile of ``n`` sorted values lies: between the values at ``lo``
    and ``hi``, ``frac`` of the way."""
    rank = (n - 1) * q
    lo = math.floor(rank)
    return lo, min(lo + 1, n - 1), rank - lo


def _percentile_interval(estimate: float, draws: list[float],
                         confidence: float) -> Interval:
    draws.sort()
    alpha = (1.0 - confidence) / 2.0
    return Interval(estimate, _quantile(draws, alpha), _quantile(draws, 1.0 - alpha))


def percentile_intervals_many(estimates: Sequence[float], draws: NDArray[np.float64],
                              confidence: float = CONFIDENCE) -> list[Interval]:
    """:func:`_percentile_interval` of each column of ``draws`` (none of them NaN) with
    its estimate: the same values. Only the four order statistics the two quantiles read
    are put in place (a partition, not a sort: equal values are equal whatever their
    order, and a quantile of zeros is 0.0 whichever of them is -0.0)."""
    import numpy as np

    alpha = (1.0 - confidence) / 2.0
    n = draws.shape[0]
    lo_a, hi_a, frac_a = _rank(n, alpha)
    lo_b, hi_b, frac_b = _rank(n, 1.0 - alpha)
    wanted = [lo_a, hi_a, lo_b, hi_b]
    placed = np.partition(np.ascontiguousarray(draws.T), sorted(set(wanted)), axis=1)
    rows: list[list[float]] = placed[:, wanted].tolist()
    return [Interval(est, a + (b - a) * frac_a, c + (d - c) * frac_b)
            for est, (a, b, c, d) in zip(estimates, rows, strict=True)]


class VectorStatistic(Protocol[T_contra]):
    """A statistic that is also computed over many resamples at once: ``many(sample,
    picks)`` gives, for each row of ``picks`` (indices into ``sample``), exactly the
    value the statistic gives on ``[sample[i] for i in row]`` (NaN where it is None)."""

    def __call__(self, sample: Sequence[T_contra], /) -> float | None: ...

    def many(self, sample: Sequence[T_contra], picks: NDArray[np.int64], /
             ) -> NDArray[np.float64]: ...


def resample_picks(seed: int, resamples: int, sizes: Sequence[int]
                   ) -> list[NDArray[np.int64]]:
    """:func:`_picks`, of which the last few are kept (read-only): the runs of a trend
    or a report have the same number of requests, so the same indices."""
    return list(_picks(seed, resamples, tuple(sizes)))


@functools.lru_cache(maxsize=8)
def _picks(seed: int, resamples: int, sizes: tuple[int, ...]
           ) -> tuple[NDArray[np.int64], ...]:
    """The indices ``random.Random(seed)`` draws when each of ``resamples`` rounds calls
    ``rng.choices(range(n), k=n)`` for each ``n`` of ``sizes`` in turn: one
    (resamples × n) array per size. numpy's MT19937 is started from the Python
    generator's state and its 32-bit outputs are turned into doubles with the same
    formula (``random()``: 53 bits from two outputs) and the same ``floor(u × n)``, so
    the indices are the very ones of the pure-Python loop, only made at once."""
    import numpy as np

    state = random.Random(seed).getstate()[1]
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937",
                  "state": {"key": np.array(state[:624], dtype=np.uint32), "pos": state[624]}}
    total = sum(sizes)
    raw = bits.random_raw(2 * total * resamples).reshape(resamples, total, 2)
    a, b = raw[..., 0] >> np.uint64(5), raw[..., 1] >> np.uint64(6)
    u = (a.astype(np.float64) * 67108864.0 + b.astype(np.float64)) * (1.0 / 9007199254740992.0)
    out, at = [], 0
    for n in sizes:
        picks = np.floor(u[:, at:at + n] * float(n)).astype(np.int64)
        picks.flags.writeable = False
        out.append(picks)
        at += n
    return tuple(out)


#: the widest spread of binary exponents :func:`exact_sums` adds in two int64 limbs
_MAX_SPREAD = 31
#: integers whose sums are exact in float64
_EXACT_INT = 1 << 53
#: the last few (picks, counts): a trend or a report draws from the same picks again
_COUNTS: list[tuple[NDArray[np.int64], NDArray[np.float64]]] = []


def pick_counts(picks: NDArray[np.int64]) -> NDArray[np.float64]:
    """How many times each row of ``picks`` draws each index (resamples × n, as floats:
    ``counts @ column`` is ``column[picks].sum(axis=1)``, exact for integers small
    enough). Kept for the read-only picks of :func:`resample_picks`, made once each."""
    import numpy as np

    for kept, counts in _COUNTS:
        if kept is picks:
            return counts
    rows, n = picks.shape
    flat = (picks + (np.arange(rows, dtype=np.int64) * n)[:, None]).ravel()
    made = np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(np.float64)
    if not picks.flags.writeable:  # an array that cannot change under its id
        _COUNTS.insert(0, (picks, made))
        del _COUNTS[8:]
    return made


def int_sums(values: NDArray[np.int64], picks: NDArray[np.int64]) -> NDArray[np.int64]:
    """``values[picks].sum(axis=1)``: through :func:`pick_counts` when every partial sum
    is an integer float64 holds exactly."""
    import numpy as np

    n = picks.shape[1]
    if values.size and int(np.abs(values).max()) * max(n, 1) < _EXACT_INT:
        sums: NDArray[np.int64] = (pick_counts(picks) @ values.astype(np.float64)
                                   ).astype(np.int64)
        return sums
    out: NDArray[np.int64] = values[picks].sum(axis=1)
    return out


def exact_sums(column: NDArray[np.float64], picks: NDArray[np.int64]) -> NDArray[np.float64]:
    """``math.fsum`` of ``column[row]`` for each row of ``picks``: the correctly rounded
    sum, made at once. Each finite value is an integer times 2**e0 (e0: the smallest
    exponent); those integers, split into two int64 limbs, add exactly, and one float
    addition of the two exact limb sums rounds the total correctly. Values too far apart
    in magnitude for two limbs (or not finite) are added by ``math.fsum`` row by row."""
    import numpy as np

    n = picks.shape[1]
    nonzero = column != 0.0
    if not np.all(np.isfinite(column)) or not nonzero.any():
        return np.array([math.fsum(row) for row in column[picks].tolist()])
    mant, exp = np.frexp(column)
    e0 = int(exp[nonzero].min()) - 53
    shift = np.where(nonzero, exp - 53 - e0, 0).astype(np.int64)
    if int(shift.max()) + max(n, 1).bit_length() > _MAX_SPREAD or e0 < -1000:
        return np.array([math.fsum(row) for row in column[picks].tolist()])
    whole = np.abs(mant * 9007199254740992.0).astype(np.uint64)  # |value| / 2**(e+... )
    sign = np.where(column < 0, -1, 1).astype(np.int64)
    low_mask = np.uint64(0xFFFFFFFF)
    sh = shift.astype(np.uint64)
    # whole·2**shift = hi·2**32 + lo, 0 <= lo < 2**32 (shift < 32 by the spread check)
    lo = ((whole << sh) & low_mask).astype(np.int64) * sign
    hi = (whole >> (np.uint64(32) - sh)).astype(np.int64) * sign
    if n < _EXACT_INT >> 32:
        # each limb times n is under 2**53 (the spread check; lo < 2**32): the sums are
        # exact integers in float64 whatever the order of the additions, so a matrix
        # product of the counts gives them (one BLAS call, not two gathers)
        limb_sums = pick_counts(picks) @ np.stack([lo, hi], axis=1).astype(np.float64)
        s_lo = limb_sums[:, 0].astype(np.int64)
        s_hi = limb_sums[:, 1].astype(np.int64)
    else:
        s_lo = lo[picks].sum(axis=1)
        s_hi = hi[picks].sum(axis=1)
    carry = s_lo >> 32
    s_lo -= carry << 32
    s_hi += carry
    total = s_hi.astype(np.float64) * 4294967296.0 + s_lo.astype(np.float64)
    scaled: NDArray[np.float64] = np.ldexp(total, e0)
    return scaled


#: the largest m·n·k of a matrix product OpenBLAS makes on the calling thread alone
#: (SMP_THRESHOLD_MIN × GEMM_MULTITHREAD_THRESHOLD); past it, it wakes its threads
_ONE_THREAD_PRODUCT = 65536 * 4


def _counts_times(picks: NDArray[np.int64], matrix: NDArray[np.float64]
                  ) -> NDArray[np.float64]:
    """``pick_counts(picks) @ matrix``, in blocks of rows small enough for OpenBLAS to
    keep on this thread. Its threads spin while they wait for the next product: on a
    busy two-core machine the trend's bootstraps took 5–10 times the CPU with them.
    Every entry is the same sum (these are exact integers in float64: any order)."""
    import numpy as np

    counts = pick_counts(picks)
    rows, n = counts.shape
    step = max(1, _ONE_THREAD_PRODUCT // max(1, n * matrix.shape[1]))
    if step >= rows:
        whole: NDArray[np.float64] = counts @ matrix
        return whole
    out = np.empty((rows, matrix.shape[1]), dtype=np.float64)
    for at in range(0, rows, step):
        out[at:at + step] = counts[at:at + step] @ matrix
    return out


def int_sums_many(columns: NDArray[np.int64], picks: NDArray[np.int64]
                  ) -> NDArray[np.float64]:
    """:func:`int_sums` of each column of ``columns`` (as many rows as ``picks`` has
    columns) as float64 (what ``.astype(np.float64)`` makes of them), as the columns of
    one (resamples × columns) array: one matrix product for all of them when every sum
    is exact in float64, else column by column."""
    import numpy as np

    n = picks.shape[1]
    if columns.size and int(np.abs(columns).max()) * max(n, 1) < _EXACT_INT:
        return _counts_times(picks, columns.astype(np.float64))
    out = np.empty((picks.shape[0], columns.shape[1]), dtype=np.float64)
    for j in range(columns.shape[1]):
        out[:, j] = int_sums(columns[:, j], picks).astype(np.float64)
    return out


def exact_sums_many(columns: NDArray[np.float64], picks: NDArray[np.int64]
                    ) -> NDArray[np.float64]:
    """:func:`exact_sums` of each column of ``columns`` (as many rows as ``picks`` has
    columns), as the columns of one (resamples × columns) array, the same values bit for
    bit: the two integer limbs of every column that fits them are made as exact_sums
    makes them, all columns at once, and summed by one matrix product (each limb sum an
    exact integer, whatever order BLAS adds in); the other columns go through
    :func:`exact_sums` one by one."""
    import numpy as np

    rows, n = picks.shape
    out = np.empty((rows, columns.shape[1]), dtype=np.float64)
    nonzero = columns != 0.0
    with np.errstate(invalid="ignore"):  # inf and NaN columns are left to exact_sums
        mant, exp = np.frexp(columns)
    exp = exp.astype(np.int64)
    have = nonzero.any(axis=0)
    e0 = np.where(nonzero, exp, np.iinfo(np.int64).max).min(axis=0, initial=0) - 53
    e0 = np.where(have, e0, 0)
    shift = np.where(nonzero, exp - 53 - e0, 0)
    fits = (np.isfinite(columns).all(axis=0) & have
            & (shift.max(axis=0, initial=0) + max(n, 1).bit_length() <= _MAX_SPREAD)
            & (e0 >= -1000))
    if n >= _EXACT_INT >> 32:
        fits[:] = False
    for j in np.flatnonzero(~fits).tolist():
        out[:, j] = exact_sums(columns[:, j], picks)
    if fits.any():
        column, mant, shift = columns[:, fits], mant[:, fits], shift[:, fits]
        whole = np.abs(mant * 9007199254740992.0).astype(np.uint64)
        sign = np.where(column < 0, -1, 1).astype(np.int64)
        sh = shift.astype(np.uint64)
        lo = ((whole << sh) & np.uint64(0xFFFFFFFF)).astype(np.int64) * sign
        hi = (whole >> (np.uint64(32) - sh)).astype(np.int64) * sign
        # the limb sums are exact integers in float64; hi × 2**32 is exact too, so the
        # one addition rounds the exact total once — exact_sums' value, without its
        # carry between int64 limbs (+ 0.0: its zero is +0.0)
        total = _counts_times(picks, hi.astype(np.float64)) * 4294967296.0 \
            + _counts_times(picks, lo.astype(np.float64)) + 0.0
        # int32 exponents (ldexp's own loop: int64 ones are converted element by element)
        out[:, fits] = np.ldexp(total, e0[fits].astype(np.int32))
    return out


def _vectorised(statistics: Iterable[object]) -> bool:
    return all(callable(getattr(f, "many", None)) for f in statistics)


def _kept(values: NDArray[np.float64]) -> list[float]:
    """The draws that are not None (NaN), sorted (what :func:`_percentile_interval`
    does next: numpy's stable sort puts them in the very order ``list.sort`` does, -0.0
    and 0.0 included, at a fraction of the cost)."""
    import numpy as np

    kept: list[float] = np.sort(values[~np.isnan(values)], kind="stable").tolist()
    return kept


def bootstrap_intervals(sample: Sequence[T],
                        statistics: Mapping[str, Callable[[Sequence[T]], float | None]], *,
                        seed: int = SEED, resamples: int = RESAMPLES,
                        confidence: float = CONFIDENCE) -> dict[str, Interval]:
    """The percentile bootstrap of each statistic over ``sample`` (one resample serves
    them all). Assumes the items are independent draws from one distribution (true of
    requests within one server run only up to the server's own state: see
    docs/report.md). A statistic that is None on the sample is left out.

    Vector statistics (:class:`VectorStatistic`) are computed over all resamples at
    once (numpy; the same draws and values as the loop); others one resample at a time.
    """
    if not sample:
        return {}
    estimates = {k: f(sample) for k, f in statistics.items()}
    live = {k: f for k, f in statistics.items() if estimates[k] is not None}
    n = len(sample)
    draws: dict[str, list[float]] = {k: [] for k in live}
    if live and _vectorised(live.values()):
        (picks,) = resample_picks(seed, resamples, [n])
        for k, f in live.items():
            draws[k] = _kept(f.many(sample, picks))  # type: ignore[attr-defined]
    else:
        rng = random.Random(seed)
        for _ in range(resamples):
            pick = [sample[i] for i in rng.choices(range(n), k=n)]
            for k, f in live.items():
                v = f(pick)
                if v is not None:
                    draws[k].append(v)
    out = {}
    for k in live:
        est = estimates[k]
        if est is not None and draws[k]:
            out[k] = _percentile_interval(est, draws[k], confidence)
    return out


# -- two-sample tests -------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """B − A: the relative difference, its 95 % interval (both in % of A) and the test."""

    delta_pct: float
    lo_pct: float
    hi_pct: float
    p_value: float | None  # None for a bootstrap (the interval decides)
    method: str  # "welch" | "bootstrap"

    @property
    def significant(self) -> bool:
        """The interval leaves out 0 (for Welch: p < 0.05, the same decision)."""
        return self.lo_pct > 0.0 or self.hi_pct < 0.0


def welch(a: Sequence[float], b: Sequence[float],
          confidence: float = CONFIDENCE) -> Difference:
    """Welch's t-test of mean(b) − mean(a), as a percentage of mean(a).

    Both samples need ≥ 2 values. The interval of the difference is divided by |mean(a)|
    (A's mean taken as exact: a good approximation when A's own interval is narrow).
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's test needs at least 2 values on each side")
    ma, mb = mean(a), mean(b)
    va, vb = sample_var(a) / len(a), sample_var(b) / len(b)
    delta = mb - ma
    se = math.sqrt(va + vb)
    scale = 100.0 / abs(ma) if ma else math.inf
    if se == 0.0:  # no spread on either side: any difference is beyond the noise
        pct = delta * scale if delta else 0.0
        return Difference(pct, pct, pct, 0.0 if delta else 1.0, "welch")
    df = (va + vb) ** 2 / ((va * va / (len(a) - 1) if va else 0.0)
                           + (vb * vb / (len(b) - 1) if vb else 0.0))
    t = delta / se
    p = 2.0 * (1.0 - t_cdf(abs(t), df))
    half = t_ppf(0.5 + confidence / 2.0, df) * se
    return Difference(delta * scale, (delta - half) * scale, (delta + half) * scale, p, "welch")


def bootstrap_difference(a: Sequence[T], b: Sequence[T],
                         stat_a: Callable[[Sequence[T]], float | None],
                         stat_b: Callable[[Sequence[T]], float | None], *,
                         seed: int = SEED, resamples: int = RESAMPLES,
                         confidence: float = CONFIDENCE) -> Difference:
    """The percentile bootstrap of 100 × (stat_b(B) − stat_a(A)) / |stat_a(A)|, resampling
    A and B independently (two statistics: a side's throughput depends on its own mean
    in-flight count). Assumes independent items on each side (requests: see docs)."""
    ea, eb = stat_a(a), stat_b(b)
    if not a or not b or ea is None or eb is None:
        raise ValueError("a bootstrap needs a statistic on each side")
    draws: list[float] = []
    if _vectorised((stat_a, stat_b)):
        import numpy as np

        pa, pb = resample_picks(seed, resamples, [len(a), len(b)])
        xs = stat_a.many(a, pa)  # type: ignore[attr-defined]
        ys = stat_b.many(b, pb)  # type: ignore[attr-defined]
        both = ~(np.isnan(xs) | np.isnan(ys))  # neither None (NaN)
        rel = _relative_many(xs[both], ys[both])
        # sorted here, as _percentile_interval would (a NaN, from inf − inf, is left
        # where it is: list.sort and numpy place it differently)
        draws = (rel if np.isnan(rel).any() else np.sort(rel, kind="stable")).tolist()
    else:
        rng = random.Random(seed)
        for _ in range(resamples):
            x = stat_a([a[i] for i in rng.choices(range(len(a)), k=len(a))])
            y = stat_b([b[i] for i in rng.choices(range(len(b)), k=len(b))])
            if x is not None and y is not None:
                draws.append(_relative(x, y))
    iv = _percentile_interval(_relative(ea, eb), draws, confidence)
    return Difference(iv.estimate, iv.lo, iv.hi, None, "bootstrap")


def _relative_many(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`_relative` of each pair at once (the same float operations in the same
    order, so the same values)."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * (b - a) / np.abs(a)
    zero: NDArray[np.float64] = np.where(b == 0.0, 0.0, np.copysign(np.inf, b))
    out: NDArray[np.float64] = np.where(a == 0.0, zero, rel)
    return out


def _relative(a: float, b: float) -> float:
    """100 × (b − a) / |a|; ±inf when a is 0 and b is not."""
    if a == 0.0:
        return 0.0 if b == 0.0 else math.copysign(math.inf, b)
    return 100.0 * (b - a) / abs(a)
