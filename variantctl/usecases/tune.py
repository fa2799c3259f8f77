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
from variantctl.jsontypes import JsonObject
from variantctl.project.loaded import Project
from variantctl.tune.model import PATCHSETS, SEARCH, Settings, TuneSpec
from variantctl.tune.search import HISTORICAL, PREDICTED, Launched, Screened

if TYPE_CHECKING:
    from variantctl.benchparams import BenchParams
    from variantctl.report.model import RunInput
    from variantctl.sweeps.executor import SweepUI
    from variantctl.sweeps.model import GridValue, SweepSpec
    from variantctl.sweeps.plan import Plan
    from variantctl.tune.preflight import SpacePlan
    from variantctl.tune.search import SearchLog
    from variantctl.tune.verdict import Recommendation, Verdict
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
    #: called after a batch's sweep round is named, before it launches (the tune's state)
    on_round: Callable[[int], None] = lambda _rounds: None

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
            return Screened(state, reason, config=point.config_key)
        reused: list[tuple[str, float]] = []
        for run_id in self.measured.get(point.config_key, ()):
            run = load_run(self.project.runs, run_id)
            if run.results and _same_bench(run.results[0][1].params, self.spec.bench[0]):
                value = objective_of(run, self.spec)
                if value is not None:
                    reused.append((run_id, value))
        return Screened(None, reused=tuple(reused), config=point.config_key)

    def launch(self, batch: Sequence[Settings]) -> list[Launched]:
        from variantctl.report.load import load_run
        from variantctl.sweeps.signals import term_as_interrupt
        from variantctl.usecases.sweep import execute_plan

        self.rounds += 1
        self.on_round(self.rounds)
        env = self.project.env
        name = round_name(self.spec.name, self.rounds)
        _, plan = self._sweep(name, batch)
        with self.project.runs.sweep_lock(name, started_at=env.now().isoformat()), \
                term_as_interrupt():
            swept = execute_plan(self.project, plan, name, self.start(plan), previous=None,
                                 resume=False, include_predicted=False, grace=self.grace)
        if swept.interrupted:
            raise VariantctlError(f"tune {self.spec.name} interrupted",
                                  hint=f"variantctl tune {self.spec.name} --resume "
                                  "continues it without re-measuring",
                                  exit_code=ExitCode.INTERRUPTED)
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
    #: the cheapest configuration within the noise of the best, when cheaper than it
    recommended: Recommendation | None = None
    #: this run continued an interrupted one (``--resume``)
    resumed: bool = False
    #: servers the interrupted run left, stopped before resuming
    stopped: tuple[str, ...] = ()


def round_name(tune: str, number: int) -> str:
    """The sweep a tune's batch ``number`` runs as (its points ``BASE@tune-NAME-rNNN-II``)."""
    return f"tune-{tune}-r{number:03d}"


def spec_fingerprint(spec: TuneSpec) -> str:
    """What makes two runs of a tune the same search (space, objective, budget, bench,
    seed, sampler, stages, variant, hosts), not where the lines of the file are."""
    import hashlib

    space = [replace(d, origin="") for d in spec.space]
    text = repr((spec.variant, spec.hosts, space, spec.objective, spec.budget,
                 [b.to_json() for b in spec.bench], spec.seed, spec.sampler, spec.stages))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


RUNNING, FINISHED = "running", "finished"


def check_resume(spec: TuneSpec, state: Mapping[str, object] | None, *, resume: bool,
                 path: str) -> int:
    """The sweep rounds an interrupted run of the tune started (0 for a fresh run), or
    the error that refuses this run: a plain rerun of an interrupted tune (``--resume``
    says continue it), ``--resume`` with nothing interrupted, or with a changed spec."""
    interrupted = state is not None and state.get("status") != FINISHED
    if not resume:
        if interrupted and state is not None:
            raise VariantctlError(
                f"tune {spec.name} was interrupted ({path}: started "
                f"{state.get('started_at')}, {state.get('rounds')} round(s) launched)",
                hint=f"`variantctl tune {spec.name} --resume` continues it without "
                "re-measuring; delete that file to start the search over (stored "
                "measurements of the same configurations are still reused)",
                exit_code=ExitCode.CONFLICT)
        return 0
    if not interrupted or state is None:
        raise VariantctlError(
            f"tune {spec.name} has nothing to resume ({path}: "
            + ("no earlier run" if state is None else "its last run finished") + ")",
            hint=f"run `variantctl tune {spec.name}` without --resume",
            exit_code=ExitCode.USAGE)
    if state.get("spec") != spec_fingerprint(spec):
        raise VariantctlError(
            f"tunes/{spec.name}.yaml changed since the interrupted run: resuming would mix "
            "two searches in one budget",
            hint=f"restore the spec, or delete {path} to start the search over",
            exit_code=ExitCode.CONFLICT)
    rounds = state.get("rounds")
    return rounds if isinstance(rounds, int) and rounds >= 0 else 0


def plan_tune(project: Project, name: str) -> SpacePlan:
    """``tune --dry-run``: tunes/NAME.yaml's space checked with the pre-flight rules
    against its variant (what they prune, the sampler, the budget); nothing launched."""
    from variantctl.tune.preflight import plan_space

    spec = project.tune(name)
    return plan_space(spec, project.resolve(spec.variant), project.hosts,
                      project.patchset_names)


def run_tune(project: Project, name: str, start: Callable[[Plan], SweepUI], *,
             grace: float, resume: bool = False) -> TuneOutcome:
    """Search, decide, write the winner (``start(plan)`` is called before each batch).

    The tune's state (``runs/tunes/NAME.json``) says whether its last run finished: a
    rerun of an interrupted tune is refused unless ``resume``; resumed, the servers the
    interrupted batch left are stopped and every measurement in the store is reused
    (the optimiser replays them), so nothing measured is launched again."""
    from variantctl.tune.preflight import plan_space
    from variantctl.tune.result import result_json
    from variantctl.tune.search import run_search
    from variantctl.tune.verdict import decide, recommend

    env = project.env
    spec = project.tune(name)
    base = project.resolve(spec.variant)
    plan_space(spec, base, project.hosts, project.patchset_names)
    store = project.runs
    # one run of a tune at a time (a second is refused, exit 3, as a sweep's is)
    with store.sweep_lock(f"tune-{spec.name}", started_at=env.now().isoformat()):
        state = store.read_tune_state(spec.name)
        rounds = check_resume(spec, state, resume=resume,
                              path=str(store.tune_state_path(spec.name)))
        started = env.now().isoformat()
        doc: JsonObject = {"tune": spec.name, "spec": spec_fingerprint(spec),
                                  "status": RUNNING, "started_at": started,
                                  "rounds": rounds, "resumed": resume}

        def on_round(number: int) -> None:  # written before the batch launches
            doc["rounds"] = number
            store.write_tune_state(spec.name, doc)

        lab = TuneLab(project, spec, base, grace, start, rounds=rounds, on_round=on_round)
        store.write_tune_state(spec.name, doc)
        stopped = _stop_interrupted(project, lab, rounds, grace) if rounds else []
        log = run_search(spec, lab, hosts=len(lab.hosts), clock=env.clock)
        verdict = decide(log, maximize=spec.objective.maximize)
        recommended = recommend(verdict, log, base.args, maximize=spec.objective.maximize)

        def result(written: str | None) -> JsonObject:
            return result_json(spec, log, verdict, recommended, written=written,
                               resumed=resume, stopped=stopped, host_errors=lab.host_errors)

        # finished, with its result (what `report --tune` shows), before the variant is
        # written: a variant file that cannot be replaced must not leave the tune looking
        # interrupted
        doc.update(status=FINISHED, finished_at=env.now().isoformat(),
                   launches=log.launches, result=result(None))
        store.write_tune_state(spec.name, doc)
        written: str | None = None
        if verdict.best is not None and verdict.beats_base:
            written = _write_best(project, spec, base, verdict.best.settings,
                                  f"{spec.objective.label()} {verdict.best.mean():.4g}")
            doc["result"] = result(written)
            store.write_tune_state(spec.name, doc)
    return TuneOutcome(spec, log, verdict, written, dict(lab.host_errors), recommended,
                       resumed=resume, stopped=tuple(stopped))


def _stop_interrupted(project: Project, lab: TuneLab, rounds: int, grace: float) -> list[str]:
    """Stop the servers the interrupted run's last batch left running (a SIGKILLed
    variantctl cannot stop its server; the next candidate may need its port)."""
    from variantctl.sweeps.executor import stop_leftovers
    from variantctl.targets.connect import open_target

    hosts = project.hosts
    stopped: list[str] = []
    for name in lab.hosts:
        host = hosts[name]
        with open_target(host) as target:
            stopped += stop_leftovers(target, host, round_name(lab.spec.name, rounds),
                                      grace=grace, runs_root=project.runs.root)
    return stopped


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
