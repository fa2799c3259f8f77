"""Confidence intervals and A/B tests (variantctl.bench.stats, bench.uncertainty).

Reference values are scipy's (scipy.stats.t, scipy.stats.ttest_ind(equal_var=False)),
written out here so the suite needs no scipy.
"""

from __future__ import annotations

import random

import pytest

from tests.unit.report.builders import measured_level
from variantctl.bench import metrics, stats, uncertainty


@pytest.mark.parametrize(("t", "df", "cdf"), [
    (1.5, 5, 0.9030482), (-2.0, 3, 0.0696630), (0.0, 7, 0.5), (12.706205, 1, 0.975),
    (2.0, 200, 0.9765734)])
def test_t_cdf_matches_scipy(t: float, df: float, cdf: float) -> None:
    assert stats.t_cdf(t, df) == pytest.approx(cdf, abs=1e-6)


@pytest.mark.parametrize(("df", "q"), [(1, 12.706205), (2, 4.302653), (3, 3.182446),
                                       (9, 2.262157), (24.99, 2.059571), (1000, 1.962339)])
def test_t_quantile_matches_scipy(df: float, q: float) -> None:
    assert stats.t_ppf(0.975, df) == pytest.approx(q, abs=1e-5)
    assert stats.t_ppf(0.025, df) == pytest.approx(-q, abs=1e-5)


def test_t_interval_of_repeats() -> None:
    iv = stats.t_interval([10.0, 12.0, 11.0])
    # mean 11, s = 1, t(0.975, 2) = 4.302653: half-width 4.302653 / sqrt(3)
    assert iv.estimate == 11.0
    assert iv.half_width == pytest.approx(4.302653 / 3 ** 0.5, abs=1e-5)
    assert iv.half_width_pct == pytest.approx(100 * iv.half_width / 11.0)


WELCH_A = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
           21.4]
WELCH_B = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
           24.4]


def test_welch_matches_scipy() -> None:
    d = stats.welch(WELCH_A, WELCH_B)
    # scipy: t = 2.4554, df = 24.989, p = 0.021378; mean A 20.82, mean B 22.987
    assert d.p_value == pytest.approx(0.021378, abs=1e-5)
    assert d.delta_pct == pytest.approx(100 * (22.98667 - 20.82) / 20.82, abs=1e-3)
    assert d.significant and d.lo_pct > 0
    same = stats.welch(WELCH_A, list(reversed(WELCH_A)))
    assert same.delta_pct == pytest.approx(0.0, abs=1e-9) and not same.significant
    assert same.p_value == pytest.approx(1.0)


def test_bootstrap_is_reproducible_and_covers_the_estimate() -> None:
    rng = random.Random(1)
    sample = [rng.gauss(100.0, 10.0) for _ in range(200)]
    med = {"p50": lambda xs: metrics.percentile(sorted(xs), 50)}
    one = stats.bootstrap_intervals(sample, med)["p50"]
    assert one == stats.bootstrap_intervals(sample, med)["p50"]  # fixed seed
    assert one.lo < one.estimate < one.hi
    # the median of 200 N(100, 10) draws: ±1.96 × 1.2533 × 10 / √200 ≈ ±1.74
    assert 1.0 < one.half_width < 2.6


def test_bootstrap_difference_separates_shift_from_noise() -> None:
    rng = random.Random(3)  # two draws whose means differ by 0.5 % (1.5 % is 1 SE)
    a = [rng.gauss(100.0, 10.0) for _ in range(100)]
    b = [rng.gauss(100.0, 10.0) for _ in range(100)]
    c = [rng.gauss(110.0, 10.0) for _ in range(100)]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    same = stats.bootstrap_difference(a, b, mean, mean)
    assert not same.significant and same.lo_pct < 0 < same.hi_pct
    shifted = stats.bootstrap_difference(a, c, mean, mean)
    assert shifted.significant and shifted.lo_pct > 0 and shifted.method == "bootstrap"


# -- levels ----------------------------------------------------------------------------------


def test_one_repeat_bootstraps_requests_and_marks_it() -> None:
    lv = measured_level(2, 1)
    cis = uncertainty.point_intervals([lv])
    assert set(cis) == set(uncertainty.HEADLINES)
    thr = cis["output_throughput"]
    # the estimate is the level's own figure, the interval around it from the requests
    assert thr.estimate == pytest.approx(lv.metrics.output_throughput)
    assert thr.interval.lo < thr.estimate < thr.interval.hi
    assert cis["ttft_p90"].estimate == pytest.approx(lv.metrics.ttft_ms.p90)
    assert cis["tps_p10"].estimate == pytest.approx(lv.metrics.output_tps.p10)
    assert (thr.method, thr.repeats, thr.requests) == ("requests", 1, 40)
    assert thr.marks == "*"  # one repeat; 40 requests are enough
    few = uncertainty.point_intervals([measured_level(2, 1, n=10)])["output_throughput"]
    assert few.marks == "*!"
    assert uncertainty.point_intervals([lv]) == cis  # reproducible: a fixed seed


def test_three_repeats_use_student_t_over_the_repeats() -> None:
    levels = [measured_level(2, s, repeat=s) for s in range(3)]
    thr = uncertainty.point_intervals(levels)["output_throughput"]
    values = [lv.metrics.output_throughput for lv in levels]
    assert thr.method == "repeats" and thr.marks == "" and thr.repeats == 3
    assert thr.interval == stats.t_interval(values)


def test_compare_points_same_and_different_configurations() -> None:
    a = [measured_level(4, s, repeat=s) for s in range(3)]
    same = [measured_level(4, 10 + s, repeat=s) for s in range(3)]
    slower = [measured_level(4, 20 + s, slow=1.3, repeat=s) for s in range(3)]
    tests = uncertainty.compare_points(4, a, same)
    assert uncertainty.verdict(tests) == "no-significant-difference"
    assert all(t.difference.method == "welch" for t in tests)
    tests = uncertainty.compare_points(4, a, slower)
    assert uncertainty.verdict(tests) == "b-slower"
    row = next(t for t in tests if t.metric == "output_throughput").to_json()
    assert list(row) == ["level", "metric", "a", "b", "delta_pct", "ci95_pct", "significant",
                         "n_a", "n_b"]
    assert row["significant"] is True and row["n_a"] == row["n_b"] == 3
    assert row["ci95_pct"][0] < row["delta_pct"] < row["ci95_pct"][1] < 0
    # one repeat a side: the bootstrap over requests, n = requests
    tests = uncertainty.compare_points(4, slower[:1], a[:1])
    thr = next(t for t in tests if t.metric == "output_throughput")
    assert thr.difference.method == "bootstrap" and thr.to_json()["n_a"] == 40
    # B is faster over these requests, but one launch a side cannot tell a winner
    # (launch-to-launch noise is unknown: issue 32)
    assert thr.significant and thr.one_launch
    assert uncertainty.verdict(tests) == uncertainty.NOISE_UNKNOWN
    ttft = next(t for t in tests if t.metric == "ttft_mean")
    assert ttft.better is True  # lower TTFT in B


def test_until_ci_needs_three_repeats_and_a_narrow_interval() -> None:
    levels = [measured_level(2, s, repeat=s) for s in range(3)]
    assert not uncertainty.until_ci_done(levels[:2], 50.0)  # a bootstrap never ends it
    hw = uncertainty.point_intervals(levels)["output_throughput"].interval.half_width_pct
    assert uncertainty.until_ci_done(levels, hw + 0.01)
    assert not uncertainty.until_ci_done(levels, hw - 0.01)
