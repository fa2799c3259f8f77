"""The ``bisect`` command's flow: check the two runs, build the configurations between
them, run each round as a sweep (``sweepflow.execute_plan``: the same launch, bench and
stop, resumable, predicted and historical skips applied), decide, print.

How it decides is :mod:`variantctl.sweeps.bisect`; docs/report.md "bisect" explains it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonMapping
from variantctl.project.loaded import Project
from variantctl.sweeps.bisect import (
    GREEDY_MAX,
    Effect,
    Setting,
    Subset,
    cost,
    decide,
    effect,
    first_round,
    include_of,
    level_of,
    requires_of,
    settings_between,
    subset_label,
)

if TYPE_CHECKING:
    from variantctl.bench.model import LevelResult
    from variantctl.benchparams import BenchParams
    from variantctl.report.model import RunInput
    from variantctl.sweeps.plan import Plan
    from variantctl.variants.model import ResolvedVariant


@dataclass(frozen=True)
class Bisection:
    """Two checked runs and what a bisect of them varies (built before anything runs)."""

    a: RunInput
    b: RunInput
    host: str
    settings: tuple[Setting, ...]
    base: ResolvedVariant
    bench: BenchParams
    notes: tuple[str, ...]

    @property
    def strategy(self) -> str:
        return "one-at-a-time" if len(self.settings) <= GREEDY_MAX else "group-halving"

    def round_name(self, n: int) -> str:
        return f"bisect-{self.a.run_id}-{self.b.run_id}-r{n}"


def _bad(message: str, hint: str | None = None) -> VariantctlError:
    return VariantctlError(message, hint=hint, exit_code=ExitCode.USAGE)


def load_bisection(project: Project, run_a: str, run_b: str) -> Bisection:
    """Both runs read and checked: same host, benchmarked, differing only in settings
    bisect can vary; A's configuration rebuilt from its variant (an error, exit 2,
    otherwise)."""
    from variantctl.report.load import load_run

    store = project.runs
    a, b = load_run(store, run_a), load_run(store, run_b)
    if a.run_id == b.run_id:
        raise _bad(f"RUN_A and RUN_B are the same run {a.run_id}")
    for run in (a, b):
        if not run.results:
            raise _bad(f"run {run.run_id} has no benchmark: bisect explains a difference "
                       "in measured throughput",
                       hint="variantctl bench the variant, then bisect its run")
        if run.unreadable:
            raise _bad(f"run {run.run_id}: {run.unreadable[0]}")
    host_a, host_b = (str(r.record.host.get("name", "")) for r in (a, b))
    if host_a != host_b:
        raise _bad(f"run {a.run_id} ran on host {host_a} and run {b.run_id} on host {host_b}: "
                   "bisect measures both configurations on one host",
                   hint="bisect two runs of one host (variantctl runs lists them)")
    settings, other = settings_between(a.record.variant, b.record.variant, project.secrets)
    if other:
        what = ", ".join(other)
        hint = ("bisect varies args, env and patchsets on one vLLM install; compare the "
                "runs with variantctl compare")
        if "vllm_version" in other:
            hint = ("bisect launches on the host's one vLLM install and cannot switch "
                    "versions; " + hint)
        raise _bad(f"runs {a.run_id} and {b.run_id} also differ in {what}, which bisect "
                   "cannot vary", hint=hint)
    if not settings:
        raise _bad(f"runs {a.run_id} and {b.run_id} have the same configuration: there is "
                   "no setting to bisect",
                   hint="variantctl compare tells whether they differ beyond the noise")
    base = _rebuild(project, a)
    notes = []
    va, vb = (r.record.facts.get("vllm_version") for r in (a, b))
    if va != vb:
        notes.append(f"the runs ran vLLM {va} and {vb}: bisect measures every configuration "
                     "on the host's current install, so that difference is not among "
                     "what it varies")
    return Bisection(a, b, host_a, settings, base, a.results[-1][1].params, tuple(notes))


def _rebuild(project: Project, a: RunInput) -> ResolvedVariant:
    """Run A's configuration: its variant (a sweep point's base) with A's args, env and
    patchsets as run.json recorded them."""
    from variantctl.sweeps.model import sweep_of_name

    name = a.record.variant_name
    root = name.rpartition("@")[0] if sweep_of_name(name) is not None else name
    try:
        variant = project.resolve(root)
    except VariantctlError as exc:
        raise _bad(f"run {a.run_id}: its variant {root} cannot be resolved: {exc.message}",
                   hint="bisect launches the runs' variant; restore its file") from None
    stored = a.record.variant
    stored_args, stored_env = _section(stored, "args"), _section(stored, "env")
    args: dict[str, Any] = {k: None for k in variant.args if k not in stored_args}
    args.update({k: _thawed(v) for k, v in stored_args.items()})
    env: dict[str, str | None] = {k: None for k in variant.env if k not in stored_env}
    env.update({k: str(v) for k, v in stored_env.items()})
    rebuilt = variant.with_args(args, env=env, origin=f"run {a.run_id}")
    requires = stored.get("requires")
    names = requires if isinstance(requires, (list, tuple)) else ()
    rebuilt = replace(rebuilt, requires=tuple(str(r) for r in names))
    _, other = settings_between(rebuilt.to_dict(), stored)
    if other:
        raise _bad(f"run {a.run_id}: variant {root} has changed since ({', '.join(other)} "
                   "differ): bisect would not measure run A's configuration",
                   hint="restore the variant file as it was for run A")
    return rebuilt


def _section(stored: JsonMapping, key: str) -> JsonMapping:
    """``args`` or ``env`` of a recorded variant ({} when absent)."""
    value = stored.get(key)
    return value if isinstance(value, Mapping) else {}


def _thawed(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def round_plan(project: Project, bis: Bisection, n: int, subsets: tuple[Subset, ...], *,
               include_predicted: bool, resume: bool) -> Plan:
    """Round ``n`` as a sweep plan: one included point per subset, in order (a subset
    that moves a patchset gets a base variant with that patchset set as B has it)."""
    from variantctl.runs.run import RunFileError
    from variantctl.sweeps.history import History
    from variantctl.sweeps.model import SweepSpec
    from variantctl.sweeps.plan import make_plan
    from variantctl.sweeps.state import kept_on_resume, read_state

    bases: dict[str, ResolvedVariant] = {}
    by_requires: dict[tuple[str, ...], str] = {}
    include = []
    for subset in subsets:
        req = requires_of(subset, bis.settings, bis.base.requires)
        if req not in by_requires:
            name = bis.base.name if not by_requires else f"{bis.base.name}-p{len(by_requires)}"
            by_requires[req] = name
            bases[name] = replace(bis.base, name=name, requires=req)
        include.append({"base": by_requires[req], **include_of(subset, bis.settings)})
    spec = SweepSpec(name=bis.round_name(n),
                     source=f"bisect {bis.a.run_id} {bis.b.run_id} round {n}",
                     bases=tuple(bases), include=tuple(include), bench=(bis.bench,),
                     hosts=(bis.host,))
    known = project.hosts
    from variantctl.config.hosts import get_host

    get_host(known, bis.host)
    known_patchsets = project.patchset_names
    fingerprints = {}
    for name in sorted({r for v in bases.values() for r in v.requires}):
        if known_patchsets is not None and name in known_patchsets:
            fingerprints[name] = project.patchset(name).fingerprint
    records = [rec for _, rec in project.runs.records() if not isinstance(rec, RunFileError)]
    previous = read_state(project.runs.sweep_state_path(spec.name)) if resume else None
    return make_plan(spec, bases, known, on_hosts=(bis.host,),
                     known_patchsets=known_patchsets, patchset_fingerprints=fingerprints,
                     history=History.from_records(records), include_predicted=include_predicted,
                     done={k: f"{e.status}, run {e.run_id}"
                           for k, e in kept_on_resume(previous).items()})


@dataclass(frozen=True)
class Measured:
    """One configuration's outcome: its levels (empty when it was not measured)."""

    subset: Subset
    round: int
    status: str
    run_id: str | None
    levels: tuple[LevelResult, ...]


def run_bisect(env: Environment, run_a: str, run_b: str, *, dry_run: bool, resume: bool,
               include_predicted: bool, grace: float, as_json: bool) -> int:
    """Plan (``--dry-run``: print it and stop) or run the bisect of two runs."""
    from variantctl.cli.output import emit, print_json
    from variantctl.render.bisect import bisect_blocks, bisect_json, dry_run_blocks
    from variantctl.render.sweep import plan_json

    project = Project(env)
    bis = load_bisection(project, run_a, run_b)
    k = len(bis.settings)
    rounds = [first_round(k)]
    plan = round_plan(project, bis, 1, rounds[0], include_predicted=include_predicted,
                      resume=resume)
    first, at_most = cost(k)
    if dry_run:
        if as_json:
            print_json(env, {"dry_run": True, "a": bis.a.run_id, "b": bis.b.run_id,
                             "host": bis.host, "strategy": bis.strategy,
                             "settings": [s.to_json() for s in bis.settings],
                             "launches": {"first_round": first, "at_most": at_most},
                             "notes": list(bis.notes),
                             "plan": plan_json(plan, project.secrets)})
        else:
            emit(env, dry_run_blocks(bis, plan, first, at_most))
        return ExitCode.OK
    measured: dict[Subset, Measured] = {}
    n = 1
    while True:
        measured.update(_run_round(env, project, bis, n, plan, rounds[-1], resume=resume,
                                   include_predicted=include_predicted, grace=grace))
        everything = frozenset(range(k))
        a_run, b_run = measured[frozenset()], measured[everything]
        for side, m in (("A", a_run), ("B", b_run)):
            if not m.levels:
                raise VariantctlError(
                    f"bisect could not measure {side} again on {bis.host} ({m.status}"
                    + (f", run {m.run_id}" if m.run_id else "") + ")",
                    hint=f"see the sweep state runs/sweeps/{bis.round_name(n)}.json; "
                    "--resume keeps what was measured", exit_code=ExitCode.FAILED)
        level = level_of(a_run.levels, b_run.levels)
        if level is None:
            raise VariantctlError("A and B measured again share no concurrency level",
                                  exit_code=ExitCode.FAILED)
        total = effect(everything, level, a_run.levels, b_run.levels, None)
        effects = {s: effect(s, level, a_run.levels, m.levels, total.delta_pct)
                   for s, m in measured.items()}
        decision = decide(k, effects, total)
        todo = tuple(s for s in decision.next if s not in measured)
        if not todo:
            break
        n += 1
        rounds.append(todo)
        plan = round_plan(project, bis, n, todo, include_predicted=include_predicted,
                          resume=resume)
    result = BisectResult(bis, level, total, effects, measured, decision.found,
                          decision.reason, n, first, at_most)
    if as_json:
        print_json(env, bisect_json(result))
    else:
        emit(env, bisect_blocks(result))
    return ExitCode.OK if decision.found is not None else ExitCode.FAILED


@dataclass(frozen=True)
class BisectResult:
    """What a bisect measured and found (the renderers' input)."""

    bisection: Bisection
    level: int
    total: Effect
    effects: dict[Subset, Effect]
    measured: dict[Subset, Measured]
    found: Subset | None
    reason: str
    rounds: int
    first_launches: int
    at_most: int

    def label(self, subset: Subset) -> str:
        return subset_label(subset, self.bisection.settings)


def _run_round(env: Environment, project: Project, bis: Bisection, n: int, plan: Plan,
               subsets: tuple[Subset, ...], *, resume: bool, include_predicted: bool,
               grace: float) -> dict[Subset, Measured]:
    """Run round ``n``'s plan as a sweep (under its lock) and read back each point's
    levels; a point not measured (skipped, failed) has none."""
    from variantctl.cli.output import emit
    from variantctl.cli.sweepflow import _term_as_interrupt, execute_plan
    from variantctl.render.sweep import plan_blocks
    from variantctl.report.load import load_run
    from variantctl.sweeps.lock import sweep_lock
    from variantctl.sweeps.state import read_state

    name = bis.round_name(n)
    emit(env, [replace(b, err=True) for b in plan_blocks(plan, dry_run=False)])
    with sweep_lock(env.runs_dir, name, started_at=env.now().isoformat()), _term_as_interrupt():
        previous = read_state(project.runs.sweep_state_path(name))
        doc, host_errors, interrupted = execute_plan(
            env, project, plan, name, previous=previous, resume=resume,
            include_predicted=include_predicted, grace=grace)
    if interrupted:
        raise VariantctlError(f"bisect interrupted in round {n}",
                              hint="variantctl bisect ... --resume continues it",
                              exit_code=ExitCode.INTERRUPTED)
    for host, err in host_errors.items():
        raise VariantctlError(f"bisect round {n}: host {host}: {err.message}",
                              exit_code=err.exit_code)
    out: dict[Subset, Measured] = {}
    by_index = {int(e["index"]): e for e in doc["points"]}
    for i, subset in enumerate(subsets, start=1):
        entry = by_index.get(i, {})
        run_id = entry.get("run_id")
        levels: tuple[LevelResult, ...] = ()
        if entry.get("status") == "measured" and run_id:
            run = load_run(project.runs, str(run_id))
            levels = tuple(lv for _, r in run.results for lv in r.levels)
        out[subset] = Measured(subset, n, str(entry.get("status", "not run")),
                               str(run_id) if run_id else None, levels)
    return out
