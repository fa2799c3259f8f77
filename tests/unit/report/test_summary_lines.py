"""What `report` prints first (report.summary.winner_lines): each winning figure with its
95 % interval and what it rests on, and whether its margin over the runner-up at the same
concurrency is beyond the noise — a figure without its n and spread is a defect."""

from __future__ import annotations

import re

from tests.unit.report.builders import measured_level, record, result
from variantctl.report.model import RunInput
from variantctl.report.series import series_of
from variantctl.report.summary import winner_lines


def _run(run_id: str, seqs: int, seed: int, slow: float, *, repeats: int = 3) -> RunInput:
    levels = [measured_level(2, seed + s, slow=slow, repeat=s) for s in range(repeats)]
    return RunInput(record(run_id, f"v{seqs}", args={"max-num-seqs": seqs}),
                    (("b1.json", result(levels)),))


def test_a_clear_winner_is_beyond_the_noise_with_its_interval() -> None:
    lines = winner_lines(series_of([_run("aaaaaaaaaa-1", 4, 0, 1.0),
                                    _run("bbbbbbbbbb-1", 2, 10, 1.4)]))
    most, first = lines
    assert re.fullmatch(
        r"Most throughput: seqs=4, [\d.]+ tok/s aggregate at concurrency 2 \(95 % CI "
        r"[\d.]+–[\d.]+, n=3 repeats\), \d+ % more than seqs=2, beyond the noise \(seqs=2 "
        r"-\d+ %, 95 % CI -\d+ to -\d+ %\)\.", most), most
    assert re.fullmatch(
        r"Fastest first token: seqs=4, TTFT P90 \d+ ms at concurrency 2 \(95 % CI \d+–\d+, "
        r"n=3 repeats\), \d+ % less than seqs=2, beyond the noise \(seqs=2 \+\d+ %, 95 % CI "
        r"\+\d+ to \+\d+ %\)\.", first), first


def test_a_margin_within_the_noise_says_so() -> None:
    """The same configuration measured twice (other draws): one is "more", not better."""
    most, _first = winner_lines(series_of([_run("aaaaaaaaaa-1", 4, 0, 1.0),
                                           _run("bbbbbbbbbb-1", 2, 10, 1.0)]))
    assert "within the noise" in most and "95 % CI -" in most and "n=3 repeats" in most


def test_one_repeat_rests_on_its_requests() -> None:
    most, _first = winner_lines(series_of([_run("aaaaaaaaaa-1", 4, 0, 1.0, repeats=1),
                                           _run("bbbbbbbbbb-1", 2, 10, 1.4, repeats=1)]))
    assert "n=40 requests*)" in most and "beyond the noise" not in most
    assert "launch-to-launch noise unknown (one launch a side): no winner claimed" in most
