"""The search loop with a stand-in lab (no server): predicted and known failures are
never launched, a failed launch is a result, reused measurements cost no launch, the
budget holds, and no winner is claimed from one launch per side."""

from __future__ import annotations

from collections.abc import Sequence

from tests.unit.sweeps.test_tune_spec import parse
from variantctl.tune.model import Settings
from variantctl.tune.search import (
    FAILED,
    HISTORICAL,
    PREDICTED,
    REUSED,
    Launched,
    Screened,
    run_search,
)
from variantctl.tune.verdict import decide

SPEC = ("variant: base\nspace:\n  args.max-num-seqs: [1, 2, 4, 8, 16, 32]\n"
        "objective: {maximize: output_throughput}\nbudget: {launches: 12}\n"
        "sampler: tpe\nseed: 3\n")


class StandInLab:
    """Throughput = max-num-seqs (the base: 1); 4 predicted, 8 failed before, 16 measured
    before, 32 fails when launched."""

    def __init__(self) -> None:
        self.launched: list[Settings] = []

    def screen(self, settings: Settings) -> Screened:
        seqs = settings.get("args.max-num-seqs")
        if seqs == 4:
            return Screened(PREDICTED, "rule says no")
        if seqs == 8:
            return Screened(HISTORICAL, "run x-1 ended failed")
        if seqs == 16:
            return Screened(None, reused=(("old-1", 16.0),))
        return Screened(None)

    def launch(self, batch: Sequence[Settings]) -> list[Launched]:
        self.launched.extend(batch)
        out = []
        for s in batch:
            seqs = s.get("args.max-num-seqs", 1)
            assert isinstance(seqs, int)
            if seqs == 32:
                out.append(Launched("r32", None, "oom: out of memory"))
            else:
                out.append(Launched(f"r{seqs}-{len(self.launched)}",
                                    float(seqs) + 0.01 * (len(self.launched) % 3)))
        return out


def test_failures_known_in_advance_are_never_launched_and_a_failed_launch_is_a_result() -> None:
    lab = StandInLab()
    log = run_search(parse(SPEC), lab)
    launched = {s.get("args.max-num-seqs") for s in lab.launched}
    assert not launched & {4, 8}
    by_seqs = {c.settings.get("args.max-num-seqs"): c for c in log.candidates}
    assert {4, 8, 16} <= set(by_seqs)  # proposed, screened, not launched
    assert by_seqs[4].state == PREDICTED and by_seqs[8].state == HISTORICAL
    assert by_seqs[16].state == REUSED and by_seqs[16].runs[0] == ("old-1", 16.0)
    if 32 in by_seqs:
        assert by_seqs[32].state == FAILED and "oom" in by_seqs[32].reason
    assert log.launches == len(lab.launched) and log.spent <= 12


def test_no_winner_from_one_launch_per_side() -> None:
    lab = StandInLab()
    spec = parse(SPEC.replace("launches: 12", "launches: 1"))
    log = run_search(spec, lab)
    verdict = decide(log, maximize=True)
    assert verdict.best is None and not verdict.beats_base
    assert "twice" in verdict.reason


def test_the_winner_beats_the_base_beyond_the_noise() -> None:
    log = run_search(parse(SPEC), StandInLab())
    verdict = decide(log, maximize=True)
    assert verdict.best is not None and verdict.beats_base
    assert len(verdict.best.values) >= 2
    base = next(c for c in log.candidates if c.is_base)
    assert len(base.values) >= 2


def test_the_result_table_shows_every_trial_and_the_verdict() -> None:
    from rich.console import Console

    from variantctl.render.tune import result_blocks

    doc = {"tune": {
        "best": {"settings": {"args.max-num-seqs": 16}, "objective": 16.0,
                 "ci95": [15.5, 16.5], "run_id": "abc-3"},
        "equivalent": [],
        "trials": [{"settings": {}, "state": "measured", "objective": 1.0, "run_id": "b-2",
                    "reason": None, "launches": 3, "ci95": [0.75, 1.25]},
                   {"settings": {"args.max-num-seqs": 32}, "state": "failed",
                    "objective": None, "run_id": "r32", "reason": "oom:\x1b[31m out",
                    "launches": 0, "ci95": None},
                   {"settings": {"args.max-num-seqs": 8}, "state": "pruned",
                    "objective": 4.0, "run_id": "r8", "launches": 1, "ci95": None,
                    "reason": "its probe was not within reach of the best"}],
        "recommended": {"settings": {"args.max-num-seqs": 12}, "objective": 15.8,
                        "ci95": [15.1, 16.4], "run_id": "r12",
                        "why": "max-num-seqs 12 instead of 16; within the noise"},
        "importance": {}, "importance_note": "1 configuration(s) of the space measured",
        "launches": 7, "best_so_far": [1.0, 16.0], "variant_written": "/p/v.yaml",
        "verdict": "beats the base variant beyond the noise"}}
    console = Console(width=200, record=True, color_system=None)
    for b in result_blocks(doc):
        console.print(b.body)
    out = console.export_text()
    assert "(base)" in out and "max-num-seqs=32" in out and "failed" in out
    assert "\x1b" not in out  # a server's text is shown with escapes made visible
    assert "best so far, after each batch: 1 → 16" in out
    assert "0.75 … 1.25" in out  # a measured trial's spread beside its mean and n
    assert "pruned and failed candidates:" in out
    assert "#2 max-num-seqs=8: pruned — its probe was not within reach" in out
    assert "effect: not computed — 1 configuration(s) of the space measured" in out
    assert "recommended (cheaper, as good): max-num-seqs=12 15.8 (95 % CI 15.1 … 16.4)" \
        " — max-num-seqs 12 instead of 16" in out
    assert "95 % CI 15.5 … 16.5" in out and "wrote /p/v.yaml" in out


def test_repeats_1_screens_every_candidate_once_and_names_no_winner() -> None:
    # a screen: the whole budget on probes, none kept for a confirmation
    spec = parse(SPEC.replace("launches: 12", "launches: 3")
                 + "stages: {repeats: 1, max_repeats: 2}\n")
    lab = StandInLab()
    log = run_search(spec, lab)
    assert len(lab.launched) == 3 and lab.launched[0] == {}
    assert all(len(c.runs) <= 1 for c in log.candidates if c.settings.get(
        "args.max-num-seqs") != 16)  # 16 was measured before: its run reused
    verdict = decide(log, maximize=True)
    assert verdict.best is None and "twice" in verdict.reason


def test_repeats_1_with_budget_left_tightens_the_best_from_one_launch() -> None:
    # every candidate screened, budget left: the best gets a second launch (one launch
    # has no interval), the base keeps its one
    spec = parse("variant: base\nspace:\n  args.max-num-seqs: [1, 2]\n"
                 "objective: {maximize: output_throughput}\nbudget: {launches: 5}\n"
                 "sampler: grid\nseed: 3\nstages: {repeats: 1, max_repeats: 3}\n")
    lab = StandInLab()
    log = run_search(spec, lab)
    best = max((c for c in log.candidates if c.values), key=lambda c: c.mean() or 0.0)
    assert best.settings == {"args.max-num-seqs": 2} and 2 <= len(best.values) <= 3


def test_the_grid_sampler_running_out_of_points_ends_the_search_not_the_process() -> None:
    # Optuna's GridSampler calls study.stop() when its grid is exhausted, which raises
    # outside study.optimize: the tune must finish with every point measured
    spec = parse("variant: base\nspace:\n  args.max-num-seqs: [1, 2]\n"
                 "objective: {maximize: output_throughput}\nbudget: {launches: 12}\n"
                 "sampler: grid\nseed: 3\n")
    lab = StandInLab()
    log = run_search(spec, lab)
    seen = {c.settings.get("args.max-num-seqs") for c in log.candidates if not c.is_base}
    assert seen == {1, 2} and log.spent <= 12


def test_after_the_startup_proposals_a_compass_step_tries_the_best_ones_neighbours() -> None:
    """Once TPE's random startup proposals are measured, the next proposal is an untried
    neighbour of the best (one step along one numeric list), so a small budget does not
    stop one step short of the optimum; before that, and around a best whose neighbours
    were all tried, it is TPE's."""
    from variantctl.tune.search import Candidate, SearchLog, _compass_step

    spec = parse("variant: base\nspace:\n  args.max-num-seqs: [4, 8, 16, 32]\n"
                 "  args.max-num-batched-tokens: [512, 1024, 2048]\n"
                 "  env.BACKEND: [A, B]\nobjective: {maximize: output_throughput}\n"
                 "budget: {launches: 12}\nseed: 1\n")
    log = SearchLog()
    log.candidates.append(Candidate(0, {}, "measured", runs=[("base", 50.0)], is_base=True))
    best = {"args.max-num-seqs": 8, "args.max-num-batched-tokens": 1024, "env.BACKEND": "A"}
    worse = {"args.max-num-seqs": 32, "args.max-num-batched-tokens": 2048,
             "env.BACKEND": "B"}
    seen: dict[str, Candidate] = {}
    for n, (settings, value) in enumerate([(worse, 10.0), (best, 90.0)], start=1):
        c = Candidate(n, settings, "measured", runs=[(f"r{n}", value)])
        log.candidates.append(c)
        seen[repr(sorted(settings.items()))] = c
    assert _compass_step(spec, log, seen, startup=3) is None  # still TPE's startup
    step = _compass_step(spec, log, seen, startup=2)
    assert step == {**best, "args.max-num-seqs": 4}  # one step down the first list
    # the neighbours already tried are skipped; the non-numeric choice is never stepped
    tried = [{**best, "args.max-num-seqs": 4}, {**best, "args.max-num-seqs": 16},
             {**best, "args.max-num-batched-tokens": 512}]
    for s in tried:
        seen[repr(sorted(s.items()))] = log.candidates[1]
    assert _compass_step(spec, log, seen, startup=2) == {
        **best, "args.max-num-batched-tokens": 2048}
    seen[repr(sorted({**best, "args.max-num-batched-tokens": 2048}.items()))] = best_c = \
        log.candidates[2]
    assert best_c.settings == best
    assert _compass_step(spec, log, seen, startup=2) is None  # a local optimum: TPE's turn


class NoisyBaseLab:
    """The base swings 10 ↔ 20 from launch to launch, max-num-seqs 2 measures 30 or 31,
    max-num-seqs 1 measures 5: with two launches a side, Welch's test (df ≈ 1, the base's
    spread dominating) cannot tell 15 from 30.5."""

    def __init__(self) -> None:
        self.launched: list[Settings] = []

    def screen(self, settings: Settings) -> Screened:
        return Screened(None)

    def launch(self, batch: Sequence[Settings]) -> list[Launched]:
        out = []
        for s in batch:
            self.launched.append(s)
            seqs = s.get("args.max-num-seqs")
            k = sum(1 for x in self.launched if x.get("args.max-num-seqs") == seqs)
            value = {None: 10.0 + 10.0 * (k % 2 == 0), 1: 5.0,
                     2: 30.0 + k % 2}[seqs]  # type: ignore[index]
            out.append(Launched(f"r{len(self.launched)}", value))
        return out


def test_while_the_best_cannot_be_told_from_a_noisy_base_the_base_is_launched_again() -> None:
    from variantctl.bench import stats

    spec = parse("variant: base\nspace:\n  args.max-num-seqs: [1, 2]\n"
                 "objective: {maximize: output_throughput}\nbudget: {launches: 8}\n"
                 "sampler: grid\nseed: 3\nstages: {repeats: 2, max_repeats: 4}\n")
    lab = NoisyBaseLab()
    log = run_search(spec, lab)
    base = next(c for c in log.candidates if c.is_base)
    best = next(c for c in log.candidates if c.settings == {"args.max-num-seqs": 2})
    # two launches a side were not enough: the base (the less certain mean) got a third,
    # which told them apart; then the best's interval was tightened (to within ±5 %)
    assert not stats.welch(base.values[:2], best.values[:2]).significant
    assert base.values == [10.0, 20.0, 10.0]
    assert best.values == [31.0, 30.0, 31.0] and log.spent <= 8
    verdict = decide(log, maximize=True)
    assert verdict.best is best and verdict.beats_base, verdict.reason
