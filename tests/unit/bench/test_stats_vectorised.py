"""The vectorised bootstrap (numpy) gives exactly the intervals of the pure-Python loop
it replaced, for the same seed (issue 27 item 8): same draws, same values, bit for bit."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest

from variantctl.bench import stats
from variantctl.bench.uncertainty import HEADLINES, _Sample, _Throughput

T = TypeVar("T")
ALPHA = (1.0 - stats.CONFIDENCE) / 2.0  # as the old code computed it (not exactly 0.025)
Stat = Callable[[Sequence[T]], float | None]


def reference_intervals(sample: Sequence[T], statistics: dict[str, Stat[T]],
                        seed: int = stats.SEED) -> dict[str, tuple[float, float, float]]:
    """The old algorithm: one resample at a time, every statistic on a list."""
    estimates = {k: f(sample) for k, f in statistics.items()}
    live = {k: f for k, f in statistics.items() if estimates[k] is not None}
    draws: dict[str, list[float]] = {k: [] for k in live}
    rng = random.Random(seed)
    n = len(sample)
    for _ in range(stats.RESAMPLES):
        pick = [sample[i] for i in rng.choices(range(n), k=n)]
        for k, f in live.items():
            v = f(pick)
            if v is not None:
                draws[k].append(v)
    out = {}
    for k, est in estimates.items():
        if est is not None and draws[k]:
            ordered = sorted(draws[k])
            lo = stats._quantile(ordered, ALPHA)
            hi = stats._quantile(ordered, 1.0 - ALPHA)
            out[k] = (est, lo, hi)
    return out


def reference_difference(a: Sequence[T], b: Sequence[T], fa: Stat[T], fb: Stat[T],
                         seed: int = stats.SEED) -> list[float]:
    rng = random.Random(seed)
    draws = []
    for _ in range(stats.RESAMPLES):
        x = fa([a[i] for i in rng.choices(range(len(a)), k=len(a))])
        y = fb([b[i] for i in rng.choices(range(len(b)), k=len(b))])
        if x is not None and y is not None:
            draws.append(stats._relative(x, y))
    return sorted(draws)


def requests(n: int, seed: int, *, one_token_share: float = 0.2) -> list[_Sample]:
    """Requests with irregular figures; some have one token (no TPOT, no TPS)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        one = rng.random() < one_token_share
        out.append(_Sample(ttft_ms=rng.lognormvariate(3, 0.7),
                           tpot_ms=None if one else rng.uniform(5, 40),
                           tps=None if one else rng.uniform(10, 200),
                           tokens=1 if one else rng.randint(2, 300),
                           e2el_s=rng.expovariate(0.5)))
    return out


def request_stats() -> dict[str, Stat[_Sample]]:
    out: dict[str, Stat[_Sample]] = {
        name: h.of_requests for name, h in HEADLINES.items() if h.of_requests is not None}
    out["output_throughput"] = _Throughput(1.7)
    return out


@pytest.mark.parametrize(("n", "seed"), [(1, 1), (2, 5), (7, 2), (40, 3), (333, 4)])
def test_intervals_are_the_reference_ones(n: int, seed: int) -> None:
    sample = requests(n, seed, one_token_share=0.9 if n == 7 else 0.2)
    funcs = request_stats()
    assert all(callable(getattr(f, "many", None)) for f in funcs.values())  # the fast path
    got = {k: (iv.estimate, iv.lo, iv.hi) for k, iv in
           stats.bootstrap_intervals(sample, funcs).items()}
    assert got == reference_intervals(sample, funcs)


def test_the_difference_is_the_reference_one() -> None:
    a, b = requests(50, 11), requests(80, 12)
    for name in ("output_throughput", "tpot_p90", "ttft_mean"):
        fa = _Throughput(1.2) if name == "output_throughput" else request_stats()[name]
        fb = _Throughput(2.5) if name == "output_throughput" else request_stats()[name]
        d = stats.bootstrap_difference(a, b, fa, fb)
        draws = reference_difference(a, b, fa, fb)
        assert (d.lo_pct, d.hi_pct) == (stats._quantile(draws, ALPHA),
                                        stats._quantile(draws, 1.0 - ALPHA))


def test_the_picks_are_the_python_generators() -> None:
    rng = random.Random(99)
    expected = [[rng.choices(range(n), k=n) for n in (3, 17)] for _ in range(5)]
    a, b = stats.resample_picks(99, 5, [3, 17])
    assert [[list(a[r]), list(b[r])] for r in range(5)] == expected


@pytest.mark.parametrize("spread", [1.0, 1e3, 1e8, 1e30])
def test_exact_sums_are_fsums(spread: float) -> None:
    """Sums of resamples of values of both signs, close and far apart in magnitude
    (the widest through the row-by-row fallback), equal math.fsum's bit for bit."""
    rng = random.Random(int(spread) % 1000 + 7)
    column = [rng.choice((-1, 1)) * rng.uniform(1.0, spread) * 1e-3 for _ in range(60)]
    column[5] = 0.0
    (picks,) = stats.resample_picks(3, 200, [60])
    import numpy as np

    got = stats.exact_sums(np.array(column), picks)
    assert [float(v) for v in got] == [math.fsum(column[i] for i in row) for row in picks]


def test_sums_of_many_columns_are_each_columns_own() -> None:
    """exact_sums_many and int_sums_many: every column's sums equal exact_sums' and
    int_sums' of that column alone, bit for bit — columns close and far apart in
    magnitude, all zeros, with an inf (those through the one-column fallback) beside
    ordinary ones."""
    import numpy as np

    rng = random.Random(5)
    n = 50
    columns = [[rng.uniform(0.01, 3.0) for _ in range(n)],
               [rng.choice((-1, 1)) * rng.uniform(1.0, 1e3) for _ in range(n)],
               [rng.uniform(1.0, 1e30) * 1e-3 for _ in range(n)],  # too wide: fallback
               [rng.uniform(1.0, 1e12) for _ in range(n)],  # too wide for 2 limbs
               [0.0] * n,
               [math.inf] + [1.0] * (n - 1),
               [rng.uniform(1e-300, 1e-290) for _ in range(n)]]  # e0 < -1000: fallback
    matrix = np.array(columns, dtype=np.float64).T
    (picks,) = stats.resample_picks(8, 300, [n])
    got = stats.exact_sums_many(matrix, picks)
    for j, column in enumerate(columns):
        want = stats.exact_sums(np.array(column), picks)
        assert [float(v) for v in got[:, j]] == [float(v) for v in want]
    assert [float(v) for v in got[:, 0]] == [math.fsum(columns[0][i] for i in row)
                                             for row in picks]
    ints = np.array([[rng.randint(1, 500) for _ in range(n)] for _ in range(3)]).T
    total = stats.int_sums_many(ints, picks)
    for j in range(3):
        assert total[:, j].tolist() == stats.int_sums(ints[:, j], picks).astype(float).tolist()
    huge = ints * (1 << 45)  # sums past 2**53: column by column, rounded as astype rounds
    total = stats.int_sums_many(huge, picks)
    for j in range(3):
        assert total[:, j].tolist() == stats.int_sums(huge[:, j], picks).astype(float).tolist()


def test_percentile_intervals_of_many_columns_are_the_sorted_ones() -> None:
    """Quantiles read from a partition are those of the sorted draws, ties and zeros of
    both signs included."""
    import numpy as np

    rng = random.Random(6)
    cols = [[rng.gauss(0, 1) for _ in range(1000)],
            [rng.choice((0.0, -0.0, 1.5, -2.0)) for _ in range(1000)],
            [float(rng.randint(-3, 3)) for _ in range(1000)],
            [rng.choice((0.0, -0.0)) for _ in range(1000)]]
    estimates = [0.5, -0.25, 1.0, 0.0]
    got = stats.percentile_intervals_many(estimates, np.array(cols).T)
    for est, col, iv in zip(estimates, cols, got, strict=True):
        want = stats._percentile_interval(est, list(col), stats.CONFIDENCE)
        assert (iv.estimate, iv.lo, iv.hi) == (want.estimate, want.lo, want.hi)
        assert [math.copysign(1.0, v) for v in (iv.lo, iv.hi)] == \
            [math.copysign(1.0, v) for v in (want.lo, want.hi)]


def test_the_product_in_blocks_of_rows_is_the_whole_product() -> None:
    """pick_counts @ matrix made in blocks of rows (OpenBLAS then stays on one thread)
    is the product made at once: sums of integers, exact either way."""
    import numpy as np

    (picks,) = stats.resample_picks(4, 1000, [64])
    matrix = np.array([[float(random.Random(i * 97 + j).randint(-2**31, 2**31))
                        for j in range(100)] for i in range(64)])
    assert stats._ONE_THREAD_PRODUCT < 1000 * 64 * 100  # so made in blocks
    got = stats._counts_times(picks, matrix)
    assert got.shape == (1000, 100)
    assert got.tolist() == (stats.pick_counts(picks) @ matrix).tolist()
    assert got[:, 3].tolist() == [math.fsum(matrix[i, 3] for i in row) for row in picks]
