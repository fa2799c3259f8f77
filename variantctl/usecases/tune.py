"""``tune``: load the spec, check its space, run the search with every candidate
launched, measured and stopped as a sweep point (:func:`variantctl.usecases.sweep.
execute_plan`, the code ``sweep`` and ``bisect`` run), decide the winner, write it as a
variant.

How the search decides is :mod:`variantctl.tune.search`; the statistics
:mod:`variantctl.tune.verdict`; docs/tune.md explains both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.project.loaded import Project
from variantctl.tune.model import PATCHSETS, SEARCH, Settings, TuneSpec
from variantctl.tune.search import HISTORICAL, PREDICTED, Launched, Screened

if TYPE_CHECKING:
    from variantctl.benchparams import BenchParams
    from variantctl.report.model import RunInput
    from variantctl.sweeps.executor import SweepUI
    from variantctl.sweeps.model import GridValue, SweepSpec
    from variantctl.sweeps.plan import Plan
    from variantctl.tune.search import SearchLog
    from variantctl.tune.verdict import Verdict
    from variantctl.variants.model import ResolvedVariant


def objective_of(run: RunInput, spec: TuneSpec) -> float | None:
    """The objective one launch measured: the capacity its search found, or the metric
    at the objective's level (the ladder's last by default; repeats averaged)."""
    from variantctl.bench.uncertainty import HEADLINES

    if not run.results:
        return None
    result = run.results[0][1]
    if spec.objective.kind == SEARCH:
        if result.search is None:
            return None
        # no level met the SLO: a capacity of 0, measured (not a failed launch)
        return result.search.best_level or 0.0
    level = spec.objective.level or spec.bench[0].concurrency[-1]
    get = HEADLINES[spec.objective.metric].of_level
    values = [v for lv in result.levels if lv.concurrency == level
              and lv.metrics.completed > 0 and (v := get(lv)) is not None]
    return sum(values) / len(values) if values else None


def _same_bench(stored: BenchParams, wanted: BenchParams) -> bool:
    """The stored run measured the tune's bench (the model the run filled in aside)."""
    a, b = stored.to_json(), wanted.to_json()
    return {k: v for k, v in a.items() if k != "model"} == {
        k: v for k, v in b.items() if k != "model"}


@dataclass
class TuneLab:
    """Screens a candidate with the sweep plan (pre-flight, history, stored runs of the
    same configuration and bench) and launches batches as sweep rounds."""

    project: Project
    spec: TuneSpec
    base: ResolvedVariant
    grace: float
    #: called before each batch with its plan; gives the UI its points report to
    start: Callable[[Plan], SweepUI]
    rounds: int = 0
    #: the errors that stopped a host, by host, over every batch
    host_errors: dict[str, VariantctlError] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from variantctl.runs.identity import record_config_key
        from variantctl.runs.run import RunFileError
        from variantctl.sweeps.history import History

        records = [rec for _, rec in self.project.runs.records()
                   if not isinstance(rec, RunFileError)]
        self.history = History.from_records(records)
        self.measured: dict[str, list[str]] = {}
        for rec in records:
            if rec.verdict.kind == "ready" and rec.benchmarks:
                self.measured.setdefault(record_config_key(rec), []).append(rec.run_id)
        self.hosts = self.spec.hosts or (self.base.host,)

    def _sweep(self, name: str, batch: Sequence[Settings]) -> tuple[SweepSpec, Plan]:
        from variantctl.sweeps.model import SweepSpec
        from variantctl.usecases.planning import plan_points

        bases: dict[str, ResolvedVariant] = {}
        by_requires: dict[tuple[str, ...], str] = {}
        include: list[dict[str, GridValue]] = []
        for settings in batch:
            extra = settings.get(PATCHSETS, ())
            names = extra if isinstance(extra, tuple) else ()
            req = tuple(dict.fromkeys((*self.base.requires, *names)))
            if req not in by_requires:
                bname = (self.base.name if not by_requires
                         else f"{self.base.name}-p{len(by_requires)}")
                by_requires[req] = bname
                bases[bname] = replace(self.base, name=bname, requires=req)
            values: dict[str, GridValue] = {"base": by_requires[req]}
            for k, v in settings.items():
                if k != PATCHSETS and not isinstance(v, tuple):
                    values[k] = v
            include.append(values)
        sweep = SweepSpec(name=name, source=f"tune {self.spec.name} ({self.spec.source})",
                          bases=tuple(bases), include=tuple(include), bench=self.spec.bench,
                          hosts=self.hosts)
        plan = plan_points(self.project, sweep, bases, on_hosts=self.hosts,
                           include_predicted=False, previous=None, resume=False)
        return sweep, plan

    def screen(self, settings: Settings) -> Screened:
        from variantctl.report.load import load_run

        _, plan = self._sweep(f"tune-{self.spec.name}-screen", [settings])
        point = plan.points[0]
        if point.skip is not None:
            state = HISTORICAL if point.skip.reason == "history" else PREDICTED
            reason = (f"{point.skip.signature}: " if point.skip.signature else "") \
                + point.skip.message
            return Screened(state, reason)
        reused: list[tuple[str, float]] = []
        for run_id in self.measured.get(point.config_key, ()):
            run = load_run(self.project.runs, run_id)
            if run.results and _same_bench(run.results[0][1].params, self.spec.bench[0]):
                value = objective_of(run, self.spec)
                if value is not None:
                    reused.append((run_id, value))
        return Screened(None, reused=tuple(reused))

    def launch(self, batch: Sequence[Settings]) -> list[Launched]:
        from variantctl.report.load import load_run
        from variantctl.sweeps.signals import term_as_interrupt
        from variantctl.usecases.sweep import execute_plan

        self.rounds += 1
        env = self.project.env
        name = f"tune-{self.spec.name}-r{self.rounds:03d}"
        _, plan = self._sweep(name, batch)
        with self.project.runs.sweep_lock(name, started_at=env.now().isoformat()), \
                term_as_interrupt():
            swept = execute_plan(self.project, plan, name, self.start(plan), previous=None,
                                 resume=False, include_predicted=False, grace=self.grace)
        if swept.interrupted:
            raise VariantctlError(f"tune {self.spec.name} interrupted",
                                  hint=f"variantctl tune {self.spec.name} reuses what was "
                                  "measured", exit_code=ExitCode.INTERRUPTED)
        self.host_errors.update(swept.host_errors)
        by_index = {e.index: e for e in swept.doc.points}
        out: list[Launched] = []
        for i in range(1, len(batch) + 1):
            entry = by_index.get(i)
            if entry is None:
                out.append(Launched(None, None, "not run"))
            elif entry.status == "measured" and entry.run_id:
                value = objective_of(load_run(self.project.runs, entry.run_id), self.spec)
                out.append(Launched(entry.run_id, value,
                                    "" if value is not None else "no objective measured"))
            else:
                sig = entry.signature
                msg = entry.message or entry.status
                out.append(Launched(entry.run_id, None, (f"{sig}: " if sig else "") + msg))
        return out


@dataclass(frozen=True)
class TuneOutcome:
    """What a tune searched, measured and decided (the renderers' input)."""

    spec: TuneSpec
    log: SearchLog
    verdict: Verdict
    #: the winner's variant file, when one was named beyond the noise
    written: str | None
    host_errors: Mapping[str, VariantctlError]


def run_tune(project: Project, name: str, start: Callable[[Plan], SweepUI], *,
             grace: float) -> TuneOutcome:
    """Search, decide, write the winner (``start(plan)`` is called before each batch)."""
    from variantctl.tune.preflight import plan_space
    from variantctl.tune.search import run_search
    from variantctl.tune.verdict import decide

    env = project.env
    spec = project.tune(name)
    base = project.resolve(spec.variant)
    plan_space(spec, base, project.hosts, project.patchset_names)
    lab = TuneLab(project, spec, base, grace, start)
    # one run of a tune at a time (a second is refused, exit 3, as a sweep's is)
    with project.runs.sweep_lock(f"tune-{spec.name}", started_at=env.now().isoformat()):
        log = run_search(spec, lab, hosts=len(lab.hosts), clock=env.clock)
    verdict = decide(log, maximize=spec.objective.maximize)
    written: str | None = None
    if verdict.best is not None and verdict.beats_base:
        written = _write_best(project, spec, base, verdict.best.settings,
                              f"{spec.objective.label()} {verdict.best.mean():.4g}")
    return TuneOutcome(spec, log, verdict, written, dict(lab.host_errors))


def _write_best(project: Project, spec: TuneSpec, base: ResolvedVariant, settings: Settings,
                summary: str) -> str:
    """``variants/NAME-best.yaml``: extends the base with only the settings that differ;
    a file tune did not write is never replaced."""
    from variantctl.config.tunes import MARK, best_variant_text
    from variantctl.targets.local import LocalTarget

    args: dict[str, object] = {}
    env_vars: dict[str, str | None] = {}
    requires: tuple[str, ...] | None = None
    for key, value in settings.items():
        if key == PATCHSETS:
            names = value if isinstance(value, tuple) else ()
            if set(names) - set(base.requires):
                requires = names
        elif key.startswith("args."):
            flag = key.split(".", 1)[1]
            if base.args.get(flag) != value:
                args[flag] = value
        else:
            var = key.split(".", 1)[1]
            text = None if value is None else str(value)
            if base.env.get(var) != text:
                env_vars[var] = text
    name = f"{spec.variant}-best"
    path = project.root / "variants" / f"{name}.yaml"
    if path.exists() and MARK not in path.read_text(errors="replace")[:200]:
        raise VariantctlError(f"{path} exists and was not written by tune: not replaced",
                              hint="move it away, then run the tune again",
                              exit_code=ExitCode.CONFLICT)
    text = best_variant_text(name, spec.variant, spec.name, args, env_vars, requires, summary)
    LocalTarget().write_atomic(str(path), text.encode())
    return str(path)
