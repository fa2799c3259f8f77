"""The cheapest configuration within the noise of the best (tune/verdict.recommend): pure,
on hand-made launch samples."""

from __future__ import annotations

from collections.abc import Mapping

from variantctl.tune.model import SettingValue
from variantctl.tune.search import MEASURED, Candidate, SearchLog
from variantctl.tune.verdict import Cost, compare_cost, cost_of, decide, recommend


def _log(base: list[float], *others: tuple[Mapping[str, SettingValue], list[float]]
         ) -> SearchLog:
    log = SearchLog()
    log.candidates.append(Candidate(0, {}, MEASURED, is_base=True,
                                    runs=[(f"b{i}", v) for i, v in enumerate(base)]))
    for n, (settings, values) in enumerate(others, 1):
        log.candidates.append(Candidate(n, dict(settings), MEASURED,
                                        runs=[(f"r{n}-{i}", v) for i, v in enumerate(values)]))
    return log


def test_an_equivalent_with_fewer_sequences_is_recommended_with_why() -> None:
    log = _log([50, 51, 49], ({"args.max-num-seqs": 64}, [100, 101, 99.5]),
               ({"args.max-num-seqs": 32}, [99.5, 100.5, 99]),
               ({"args.max-num-seqs": 16}, [70, 71, 69]))
    verdict = decide(log, maximize=True)
    assert verdict.best is log.candidates[1] and verdict.beats_base
    assert log.candidates[2] in verdict.equivalent and log.candidates[3] not in verdict.equivalent
    rec = recommend(verdict, log, {"max-num-seqs": 128}, maximize=True)
    assert rec is not None and rec.candidate is log.candidates[2]
    assert rec.why.startswith("max-num-seqs 32 instead of 64; within the noise of the best")
    assert "beats the base variant beyond it" in rec.why
    assert rec.interval.lo <= rec.candidate.mean() <= rec.interval.hi  # type: ignore[operator]


def test_nothing_is_recommended_when_the_best_is_also_the_cheapest() -> None:
    log = _log([50, 51, 49], ({"args.max-num-seqs": 16}, [100, 101, 99.5]),
               ({"args.max-num-seqs": 32}, [99.5, 100.5, 99]))
    verdict = decide(log, maximize=True)
    assert verdict.best is log.candidates[1] and verdict.equivalent
    assert recommend(verdict, log, {}, maximize=True) is None


def test_a_cheaper_equivalent_that_does_not_beat_the_base_is_not_recommended() -> None:
    # within the noise of the best, but so noisy it is within the noise of the base too
    log = _log([90, 90.5, 89.5], ({"args.max-num-seqs": 64}, [100, 100.5, 99.5]),
               ({"args.max-num-seqs": 8}, [80, 120, 95]))
    verdict = decide(log, maximize=True)
    assert verdict.beats_base and log.candidates[2] in verdict.equivalent
    assert recommend(verdict, log, {}, maximize=True) is None


def test_no_recommendation_without_a_winner_over_the_base() -> None:
    log = _log([99, 100, 101], ({"args.max-num-seqs": 64}, [100, 101, 99.5]),
               ({"args.max-num-seqs": 32}, [99.5, 100.5, 99]))
    verdict = decide(log, maximize=True)
    assert not verdict.beats_base
    assert recommend(verdict, log, {}, maximize=True) is None


def test_gpus_count_before_memory_and_memory_before_sequences() -> None:
    # minimising a latency: the best is the lowest; both others are within its noise
    log = _log([80, 81, 79],
               ({"args.tensor-parallel-size": 2, "args.gpu-memory-utilization": 0.7},
                [50, 50.5, 49.5]),
               ({"args.tensor-parallel-size": 1, "args.gpu-memory-utilization": 0.95},
                [50.2, 50.6, 49.9]),
               ({"args.tensor-parallel-size": 2, "args.gpu-memory-utilization": 0.6},
                [50.1, 50.4, 49.8]))
    verdict = decide(log, maximize=False)
    assert verdict.best is log.candidates[1] and verdict.beats_base
    rec = recommend(verdict, log, {}, maximize=False)
    assert rec is not None and rec.candidate is log.candidates[2]  # one GPU, not two
    assert rec.why.startswith("GPUs 1 instead of 2")


def test_cost_takes_the_base_variant_and_vllm_defaults_where_a_setting_is_absent() -> None:
    base_args = {"tensor-parallel-size": 2, "gpu-memory-utilization": 0.8}
    assert cost_of({}, base_args) == Cost(2.0, 0.8, None)
    # a setting of null removes the flag: vLLM's default
    assert cost_of({"args.gpu-memory-utilization": None, "args.pipeline-parallel-size": 2},
                   base_args) == Cost(4.0, 0.9, None)
    assert cost_of({"args.max-num-seqs": 32}, {}) == Cost(1.0, 0.9, 32.0)
    # an unknown part is not compared; the first known part that differs decides
    assert compare_cost(Cost(1.0, 0.9, None), Cost(1.0, 0.9, 64.0)) == 0
    assert compare_cost(Cost(1.0, 0.95, 8.0), Cost(1.0, 0.9, 64.0)) == 1
    assert compare_cost(Cost(1.0, 0.9, 8.0), Cost(1.0, 0.9, 64.0)) == -1
