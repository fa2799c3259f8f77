"""The ``tune`` command's flow: load the spec, check its space, run the search with every
candidate launched, measured and stopped as a sweep point (``sweepflow.execute_plan``, the
code ``sweep`` and ``bisect`` run), decide the winner, write it as a variant.

How the search decides is :mod:`variantctl.tune.search`; the statistics
:mod:`variantctl.tune.verdict`; docs/tune.md explains both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonObject
from variantctl.project.loaded import Project
from variantctl.tune.model import PATCHSETS, SEARCH, Settings, TuneSpec
from variantctl.tune.search import HISTORICAL, PREDICTED, Launched, Screened

if TYPE_CHECKING:
    from variantctl.benchparams import BenchParams
    from variantctl.report.model import RunInput
    from variantctl.sweeps.model import GridValue, SweepSpec
    from variantctl.sweeps.plan import Plan
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

    env: Environment
    project: Project
    spec: TuneSpec
    base: ResolvedVariant
    grace: float
    rounds: int = 0

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
        from variantctl.sweeps.plan import make_plan

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
        known = self.project.hosts
        known_patchsets = self.project.patchset_names
        fingerprints = {}
        for n in sorted({r for v in bases.values() for r in v.requires}):
            if known_patchsets is not None and n in known_patchsets:
                fingerprints[n] = self.project.patchset(n).fingerprint
        plan = make_plan(sweep, bases, known, on_hosts=self.hosts,
                         known_patchsets=known_patchsets, patchset_fingerprints=fingerprints,
                         history=self.history)
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
        from variantctl.cli.sweepflow import _term_as_interrupt, execute_plan
        from variantctl.report.load import load_run
        from variantctl.sweeps.lock import sweep_lock

        self.rounds += 1
        name = f"tune-{self.spec.name}-r{self.rounds:03d}"
        _, plan = self._sweep(name, batch)
        with sweep_lock(self.env.runs_dir, name, started_at=self.env.now().isoformat()), \
                _term_as_interrupt():
            doc, host_errors, interrupted = execute_plan(
                self.env, self.project, plan, name, previous=None, resume=False,
                include_predicted=False, grace=self.grace)
        if interrupted:
            raise VariantctlError(f"tune {self.spec.name} interrupted",
                                  hint=f"variantctl tune {self.spec.name} reuses what was "
                                  "measured", exit_code=ExitCode.INTERRUPTED)
        by_index = {int(e["index"]): e for e in doc["points"]}
        out: list[Launched] = []
        for i in range(1, len(batch) + 1):
            entry = by_index.get(i, {})
            run_id = entry.get("run_id")
            status = str(entry.get("status", "not run"))
            if status == "measured" and run_id:
                value = objective_of(load_run(self.project.runs, str(run_id)), self.spec)
                out.append(Launched(str(run_id), value,
                                    "" if value is not None else "no objective measured"))
            else:
                sig = entry.get("signature")
                msg = str(entry.get("message") or status)
                out.append(Launched(str(run_id) if run_id else None, None,
                                    (f"{sig}: " if sig else "") + msg))
        for host, err in host_errors.items():
            self.env.stderr.print(f"tune: host {host}: {err.message}", markup=False,
                                  highlight=False, soft_wrap=True)
        return out


def run_tune(env: Environment, name: str, *, grace: float) -> JsonObject:
    """Search, decide, write the winner: the ``--json`` document."""
    from variantctl.tune.preflight import plan_space
    from variantctl.tune.search import run_search
    from variantctl.tune.verdict import decide

    project = Project(env)
    spec = project.tune(name)
    base = project.resolve(spec.variant)
    plan_space(spec, base, project.hosts, project.patchset_names)
    from variantctl.sweeps.lock import sweep_lock

    lab = TuneLab(env, project, spec, base, grace)
    # one run of a tune at a time (a second is refused, exit 3, as a sweep's is)
    with sweep_lock(env.runs_dir, f"tune-{spec.name}", started_at=env.now().isoformat()):
        log = run_search(spec, lab, hosts=len(lab.hosts), clock=env.clock)
    verdict = decide(log, maximize=spec.objective.maximize)
    written: str | None = None
    if verdict.best is not None and verdict.beats_base:
        written = _write_best(project, spec, base, verdict.best.settings,
                              f"{spec.objective.label()} {verdict.best.mean():.4g}")
    best_json: JsonObject | None = None
    if verdict.best is not None and verdict.interval is not None:
        from variantctl.tune.model import settings_json

        iv = verdict.interval
        best_json = {"settings": settings_json(verdict.best.settings),
                     "objective": iv.estimate, "ci95": [iv.lo, iv.hi],
                     "run_id": verdict.best.runs[-1][0] if verdict.best.runs else None}
    from variantctl.tune.model import settings_json

    doc: JsonObject = {"tune": {
        "best": best_json,
        "equivalent": [settings_json(c.settings) for c in verdict.equivalent],
        "trials": [{"settings": settings_json(c.settings), "state": c.state,
                    "objective": c.mean(),
                    "run_id": c.runs[-1][0] if c.runs else None,
                    "reason": c.reason or None,
                    "launches": len(c.runs)} for c in log.candidates],
        "launches": log.launches, "best_so_far": log.trace,
        "variant_written": written, "verdict": verdict.reason}}
    return doc


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
