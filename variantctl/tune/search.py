"""The search: Optuna's ask/tell proposes, a :class:`Lab` screens and measures, the stages
decide how many launches each candidate gets (docs/tune.md).

Optuna is imported here only (``tune`` without ``--dry-run`` imports this module), so
``variantctl --help`` stays cheap. The lab does every effect: this loop only decides.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from variantctl.tune.model import (
    PATCHSETS,
    Choices,
    Dimension,
    Settings,
    SettingValue,
    TuneSpec,
    settings_json,
)
from variantctl.tune.preflight import choose_sampler

if TYPE_CHECKING:
    import optuna

MEASURED, PRUNED, PREDICTED, HISTORICAL, REUSED, FAILED = (
    "measured", "pruned", "predicted", "historical", "reused", "failed")
#: consecutive proposals already seen after which the space counts as exhausted
MAX_REPEATED_PROPOSALS = 30


@dataclass(frozen=True)
class Screened:
    """What is known of a candidate before it launches."""

    state: str | None  # PREDICTED | HISTORICAL | None (it may launch)
    reason: str = ""
    #: earlier launches of the same configuration and bench: ``(run_id, objective)``
    reused: tuple[tuple[str, float], ...] = ()
    #: the configuration's key (``runs/identity``; "" when the lab has none): two
    #: settings that launch the same server — a value equal to the base variant's — are
    #: one candidate, measured once
    config: str = ""


@dataclass(frozen=True)
class Launched:
    """One launch of a candidate: its objective, or why it has none."""

    run_id: str | None
    value: float | None
    reason: str = ""


class Lab(Protocol):
    def screen(self, settings: Settings) -> Screened: ...

    def launch(self, batch: Sequence[Settings]) -> list[Launched]: ...


@dataclass
class Candidate:
    """Every launch of one configuration in this tune (or reused from the store)."""

    number: int
    settings: Settings
    state: str
    reason: str = ""
    runs: list[tuple[str, float]] = field(default_factory=list)
    is_base: bool = False

    @property
    def values(self) -> list[float]:
        return [v for _, v in self.runs]

    def mean(self) -> float | None:
        return math.fsum(self.values) / len(self.values) if self.values else None


@dataclass
class SearchLog:
    candidates: list[Candidate] = field(default_factory=list)
    #: launches this invocation made
    launches: int = 0
    #: measurements the budget has paid for: launches, and earlier launches reused (so
    #: running the tune again, after Ctrl-C or a kill, continues within its budget)
    spent: int = 0
    trace: list[float] = field(default_factory=list)  # best-so-far after each trial
    #: each setting's importance (Optuna's PED-ANOVA; the shares sum to 1)
    importance: dict[str, float] = field(default_factory=dict)
    #: why there is no importance, when there is none
    importance_note: str = ""


def _encode(value: SettingValue) -> Any:
    # Optuna's categorical choices are scalars: a patchset list travels as its text
    return ",".join(value) if isinstance(value, tuple) else value


def distributions(spec: TuneSpec) -> dict[str, optuna.distributions.BaseDistribution]:
    import optuna

    out: dict[str, optuna.distributions.BaseDistribution] = {}
    for d in spec.space:
        if isinstance(d, Choices):
            out[d.key] = optuna.distributions.CategoricalDistribution(
                [_encode(v) for v in d.values])
        elif d.integer:
            out[d.key] = optuna.distributions.IntDistribution(int(d.lo), int(d.hi), log=d.log)
        else:
            out[d.key] = optuna.distributions.FloatDistribution(d.lo, d.hi, log=d.log)
    return out


def _decode(spec: TuneSpec, params: dict[str, Any]) -> Settings:
    out: dict[str, SettingValue] = {}
    for d in spec.space:
        raw = params[d.key]
        if d.key == PATCHSETS and isinstance(d, Choices):
            out[d.key] = next(v for v in d.values if _encode(v) == raw)
        else:
            out[d.key] = raw
    return out


def _tell(study: optuna.Study, trial: optuna.trial.Trial, value: float | None = None,
          state: optuna.trial.TrialState | None = None) -> None:
    """``study.tell``, where the grid sampler's "grid exhausted" is not a crash: its
    ``after_trial`` calls ``study.stop()``, which outside ``study.optimize`` raises
    RuntimeError — after the trial is stored (Optuna stores it in a ``finally``). The
    search loop ends on its own when every grid point was seen."""
    try:
        study.tell(trial, value, state=state)
    except RuntimeError as exc:
        if "Study.stop" not in str(exc):
            raise


def _sampler(spec: TuneSpec, explore: int) -> optuna.samplers.BaseSampler:
    import optuna

    kind = choose_sampler(spec)
    if kind == "grid":
        grid: dict[str, Any] = {}
        for d in spec.space:
            grid[d.key] = ([_encode(v) for v in d.values] if isinstance(d, Choices)
                           else list(d.values()))
        return optuna.samplers.GridSampler(grid, seed=spec.seed)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=spec.seed)
    # a third of the exploring launches at random before TPE models them (Optuna's
    # default of 10 would spend a small budget on random proposals alone)
    return optuna.samplers.TPESampler(seed=spec.seed, n_startup_trials=_startup(explore))


def _startup(explore: int) -> int:
    return max(3, min(10, explore // 3))


def _ordered(d: Dimension) -> tuple[SettingValue, ...] | None:
    """A list of choices whose order means something (numbers), in order; None for
    other choices and for ranges (TPE models a range's order itself)."""
    if not isinstance(d, Choices) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in d.values):
        return None
    return tuple(sorted(d.values, key=lambda v: float(v)))  # type: ignore[arg-type]


def _compass_step(spec: TuneSpec, log: SearchLog, seen: Mapping[str, Candidate],
                  startup: int) -> dict[str, Any] | None:
    """After the startup proposals: the first untried neighbour of the best candidate
    measured so far (one step along one list of numeric choices), or None (TPE
    proposes). A small budget leaves TPE few proposals, and on a 5 × 5 space they often
    stop one step short of the optimum; a compass step around the incumbent (pattern
    search) closes that gap. It is handed to Optuna as an enqueued trial, so the study
    still records and is told every proposal (benchmarks/bench_tune_search.py measures
    the difference)."""
    measured = [c for c in log.candidates if not c.is_base and c.mean() is not None]
    if len(measured) < startup:
        return None
    best = max(measured, key=lambda c: c.mean() or 0.0) if spec.objective.maximize \
        else min(measured, key=lambda c: c.mean() or 0.0)
    for d in spec.space:
        order = _ordered(d)
        if order is None or best.settings.get(d.key) not in order:
            continue
        i = order.index(best.settings[d.key])
        for j in (i - 1, i + 1):
            if 0 <= j < len(order):
                settings = dict(best.settings)
                settings[d.key] = order[j]
                if repr(sorted(settings_json(settings).items())) not in seen:
                    return {k: _encode(v) for k, v in settings.items()}
    return None


def run_search(spec: TuneSpec, lab: Lab, *, hosts: int = 1,
               clock: Callable[[], float] = time.monotonic) -> SearchLog:
    """Measure the base variant, explore with one probe launch per new candidate, then
    confirm the best (and the base) with repeated launches, within the budget."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    maximize = spec.objective.maximize
    st = spec.stages
    budget = spec.budget.launches
    deadline = None if spec.budget.minutes is None else clock() + 60.0 * spec.budget.minutes
    reserve = 2 * (st.repeats - 1)  # the best's and the base's repeats
    explore = (budget - 1 - reserve) if budget is not None else 10 ** 6
    dists = distributions(spec)
    study = optuna.create_study(direction="maximize" if maximize else "minimize",
                                sampler=_sampler(spec, max(explore, 1)))
    log = SearchLog()
    seen: dict[str, Candidate] = {}

    def left() -> int:
        if deadline is not None and clock() >= deadline:
            return 0
        return (budget - log.spent) if budget is not None else 10 ** 6

    def better(a: float, b: float) -> bool:
        return a > b if maximize else a < b

    def record_best() -> None:
        means = [m for c in log.candidates if (m := c.mean()) is not None]
        if means:
            log.trace.append(max(means) if maximize else min(means))

    def launch(batch: list[Candidate]) -> None:
        results = lab.launch([c.settings for c in batch])
        for c, r in zip(batch, results, strict=True):
            log.launches += 1
            log.spent += 1
            if r.value is None:
                c.state, c.reason = FAILED, r.reason
            else:
                c.runs.append((r.run_id or "", r.value))

    # the base variant: what a winner must beat
    base = Candidate(0, {}, MEASURED, is_base=True)
    screened = lab.screen({})
    by_config: dict[str, Candidate] = {screened.config: base} if screened.config else {}
    base.runs.extend(screened.reused)
    log.spent += len(screened.reused)
    log.candidates.append(base)
    if not base.runs and left() > 0:
        launch([base])
    repeated = 0
    grid = choose_sampler(spec) == "grid"
    tpe = choose_sampler(spec) == "tpe"
    startup = _startup(max(explore, 1))
    while left() > reserve and repeated < MAX_REPEATED_PROPOSALS:
        if grid and len(seen) >= spec.grid_size:
            break
        batch: list[Candidate] = []
        asked: list[tuple[optuna.trial.Trial, Candidate]] = []
        while len(batch) < hosts and left() - len(batch) > reserve \
                and repeated < MAX_REPEATED_PROPOSALS:
            step = _compass_step(spec, log, seen, startup) if tpe else None
            if step is not None:
                study.enqueue_trial(step)
            trial = study.ask(dists)
            settings = _decode(spec, trial.params)
            key = repr(sorted(settings_json(settings).items()))
            if key in seen:  # told what it got before; no launch
                old = seen[key]
                m = old.mean()
                _tell(study, trial, m if m is not None else None,
                           state=None if m is not None else optuna.trial.TrialState.FAIL)
                repeated += 1
                continue
            s = lab.screen(settings)
            same = by_config.get(s.config) if s.config else None
            if same is not None:  # the same server as an earlier candidate: its result
                seen[key] = same
                m = same.mean()
                _tell(study, trial, m if m is not None else None,
                           state=None if m is not None else optuna.trial.TrialState.FAIL)
                repeated += 1
                continue
            repeated = 0
            cand = Candidate(len(log.candidates), settings, MEASURED)
            seen[key] = cand
            if s.config:
                by_config[s.config] = cand
            log.candidates.append(cand)
            if s.state is not None:
                cand.state, cand.reason = s.state, s.reason
                _tell(study, trial, state=optuna.trial.TrialState.FAIL)
                continue
            if s.reused:
                cand.state, cand.reason = REUSED, f"measured before: run {s.reused[0][0]}"
                cand.runs.extend(s.reused)
                log.spent += len(s.reused)
                # its probe (the first launch), as the optimiser was told the first
                # time: a rerun then proposes what the interrupted run proposed
                _tell(study, trial, cand.values[0])
                continue
            batch.append(cand)
            asked.append((trial, cand))
        if batch:
            launch(batch)
        for trial, cand in asked:
            m = cand.mean()
            if m is None:
                _tell(study, trial, state=optuna.trial.TrialState.FAIL)
            else:
                _tell(study, trial, m)
        record_best()
    _confirm(spec, log, base, left, launch, better, hosts)
    record_best()
    _importance(study, log)
    return log


def _importance(study: optuna.Study, log: SearchLog) -> None:
    """Each setting's effect: Optuna's importance over the measured trials (the base
    variant is not a trial of the study), or why it cannot be computed. PED-ANOVA (how
    the settings of the best trials differ from all of them) rather than Optuna's default
    fANOVA, which needs scikit-learn for its random forest."""
    import optuna

    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    distinct = {repr(sorted(t.params.items())) for t in done}
    if len(distinct) < 2:
        log.importance_note = (f"{len(distinct)} configuration(s) of the space measured: "
                               "the importance needs at least 2")
        return
    if len({t.value for t in done}) < 2:
        log.importance_note = "every measured configuration gave the same objective"
        return
    try:
        got = optuna.importance.get_param_importances(
            study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
    except (ValueError, RuntimeError) as exc:  # e.g. a setting that never varied
        log.importance_note = f"Optuna could not compute it: {exc}"
        return
    log.importance = {k: float(v) for k, v in got.items()}


def _confirm(spec: TuneSpec, log: SearchLog, base: Candidate, left: Callable[[], int],
             launch: Callable[[list[Candidate]], None],
             better: Callable[[float, float], bool], hosts: int) -> None:
    """Repeat launches of the best, the base and those within reach of the best."""
    from variantctl.bench import stats

    st = spec.stages
    while left() > 0:
        live = [c for c in log.candidates if c.values and c.state != FAILED]
        if not live:
            return
        best = live[0]
        for c in live[1:]:
            mc, mb = c.mean(), best.mean()
            if mc is not None and mb is not None and better(mc, mb):
                best = c
        top = best.mean() or 0.0
        # first every launch the comparison needs (the best, the base, those within
        # reach, up to ``repeats``), then more of the best while its interval is wide
        need: list[Candidate] = []
        for c in [best, base, *live]:
            if c in need or not c.values or c.state == FAILED:
                continue
            m = c.mean() or 0.0
            within = abs(m - top) <= abs(top) * st.reach_pct / 100.0
            if len(c.values) < st.repeats and (c is best or c is base or within):
                need.append(c)
        if not need:
            need += _undecided(best, base, st.max_repeats)
        # one launch has no interval: as wide as can be
        if not need and st.repeats <= len(best.values) < st.max_repeats and (
                len(best.values) < 2
                or stats.t_interval(best.values).half_width_pct > st.ci_pct):
            need.append(best)
        if not need:
            break
        launch(need[:max(1, min(hosts, left()))])
    for c in log.candidates:
        if c.state == MEASURED and len(c.values) < spec.stages.repeats and not c.is_base:
            c.state = PRUNED
            c.reason = "its probe was not within reach of the best"


def _undecided(best: Candidate, base: Candidate, max_repeats: int) -> list[Candidate]:
    """While Welch's test cannot yet tell the best from the base, the next launch goes to
    whichever of the two has the less certain mean (the larger variance of its mean,
    s²/n), up to ``max_repeats`` each; [] when told apart, or when neither may launch.

    Why: the verdict rests on that one test, and with two launches a side its degrees of
    freedom fall towards 1 when one side's spread dominates (t > 12.7 needed): more
    launches of the best alone (the interval stage below) cannot help when the base is
    the noisy side, as on a loaded machine where the slow configuration swings as much as
    the fast one (tests/vllm/test_tune_real.py). The verdict is taken once the budget or
    ``max_repeats`` ends the confirmation, over every launch; but the base stops getting
    launches once the test tells the two apart, and looking after each launch makes a
    false "beats the base" a little likelier than 5 % (at most ``max_repeats − repeats``
    extra looks)."""
    from variantctl.bench import stats

    if best is base or base.state == FAILED or len(best.values) < 2 \
            or len(base.values) < 2 or stats.welch(base.values, best.values).significant:
        return []
    sides = sorted((best, base), key=lambda c: -stats.sample_var(c.values) / len(c.values))
    return [c for c in sides if len(c.values) < max_repeats][:1]
