"""``bisect``: check the two runs, build the configurations between them, run each
round as a sweep (:func:`variantctl.usecases.sweep.execute_plan`: the same launch,
bench and stop, resumable, predicted and historical skips applied), decide.

How it decides is :mod:`variantctl.sweeps.bisect`; docs/report.md "bisect" explains it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.jsontypes import JsonMapping
from variantctl.project.loaded import Project
from variantctl.sweeps.bisect import (
    Subset,
    cost,
    decide,
    effect,
    first_round,
    include_of,
    level_of,
    requires_of,
    settings_between,
)
from variantctl.sweeps.bisectmodel import Bisection, BisectResult, Measured

if TYPE_CHECKING:
    from variantctl.bench.model import LevelResult
    from variantctl.report.model import RunInput
    from variantctl.sweeps.executor import SweepUI
    from variantctl.sweeps.model import GridKey, GridValue
    from variantctl.sweeps.plan import Plan
    from variantctl.variants.model import ResolvedVariant


@dataclass(frozen=True)
class BisectRequest:
    """``bisect RUN_A RUN_B``'s options."""

    run_a: str
    run_b: str
    resume: bool = False
    include_predicted: bool = False
    grace: float = 10.0


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
    from variantctl.sweeps.model import SweepSpec
    from variantctl.sweeps.state import read_state
    from variantctl.usecases.planning import plan_points

    bases: dict[str, ResolvedVariant] = {}
    by_requires: dict[tuple[str, ...], str] = {}
    include = []
    for subset in subsets:
        req = requires_of(subset, bis.settings, bis.base.requires)
        if req not in by_requires:
            name = bis.base.name if not by_requires else f"{bis.base.name}-p{len(by_requires)}"
            by_requires[req] = name
            bases[name] = replace(bis.base, name=name, requires=req)
        # B's recorded values: JSON scalars, or a list for a list-valued flag, which the
        # grid carries into the point's variant unchanged (GridValue names the scalars)
        include.append(cast("Mapping[GridKey, GridValue]",
                            {"base": by_requires[req], **include_of(subset, bis.settings)}))
    spec = SweepSpec(name=bis.round_name(n),
                     source=f"bisect {bis.a.run_id} {bis.b.run_id} round {n}",
                     bases=tuple(bases), include=tuple(include), bench=(bis.bench,),
                     hosts=(bis.host,))
    previous = (read_state(project.runs, project.runs.sweep_state_path(spec.name))
                if resume else None)
    return plan_points(project, spec, bases, on_hosts=(bis.host,),
                       include_predicted=include_predicted, previous=previous, resume=resume)


@dataclass(frozen=True)
class BisectPlan:
    """``--dry-run``: the bisection, its first round's plan and what it will cost."""

    bisection: Bisection
    plan: Plan
    first_launches: int
    at_most: int


def plan_bisect(project: Project, req: BisectRequest) -> BisectPlan:
    """The checked runs and the first round's plan; nothing is launched."""
    bis = load_bisection(project, req.run_a, req.run_b)
    plan = round_plan(project, bis, 1, first_round(len(bis.settings)),
                      include_predicted=req.include_predicted, resume=req.resume)
    return BisectPlan(bis, plan, *cost(len(bis.settings)))


def run_bisect(project: Project, req: BisectRequest,
               start: Callable[[Plan], SweepUI]) -> BisectResult:
    """Run the bisect round by round until it decides; ``start(plan)`` is called before
    each round with its plan and gives the UI its points report to."""
    planned = plan_bisect(project, req)
    bis, plan = planned.bisection, planned.plan
    k = len(bis.settings)
    rounds = [first_round(k)]
    measured: dict[Subset, Measured] = {}
    n = 1
    while True:
        measured.update(_run_round(project, req, bis, n, plan, rounds[-1], start))
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
        plan = round_plan(project, bis, n, todo, include_predicted=req.include_predicted,
                          resume=req.resume)
    return BisectResult(bis, level, total, effects, measured, decision.found,
                        decision.reason, n, planned.first_launches, planned.at_most)


def _run_round(project: Project, req: BisectRequest, bis: Bisection, n: int, plan: Plan,
               subsets: tuple[Subset, ...], start: Callable[[Plan], SweepUI]
               ) -> dict[Subset, Measured]:
    """Run round ``n``'s plan as a sweep (under its lock) and read back each point's
    levels; a point not measured (skipped, failed) has none."""
    from variantctl.report.load import load_run
    from variantctl.sweeps.signals import term_as_interrupt
    from variantctl.sweeps.state import read_state
    from variantctl.usecases.sweep import execute_plan

    env = project.env
    name = bis.round_name(n)
    ui = start(plan)
    with project.runs.sweep_lock(name, started_at=env.now().isoformat()), \
            term_as_interrupt():
        previous = read_state(project.runs, project.runs.sweep_state_path(name))
        swept = execute_plan(project, plan, name, ui, previous=previous, resume=req.resume,
                             include_predicted=req.include_predicted, grace=req.grace)
    if swept.interrupted:
        raise VariantctlError(f"bisect interrupted in round {n}",
                              hint="variantctl bisect ... --resume continues it",
                              exit_code=ExitCode.INTERRUPTED)
    for host, err in swept.host_errors.items():
        raise VariantctlError(f"bisect round {n}: host {host}: {err.message}",
                              exit_code=err.exit_code)
    out: dict[Subset, Measured] = {}
    by_index = {e.index: e for e in swept.doc.points}
    for i, subset in enumerate(subsets, start=1):
        entry = by_index.get(i)
        run_id = entry.run_id if entry is not None else None
        status = entry.status if entry is not None else "not run"
        levels: tuple[LevelResult, ...] = ()
        if status == "measured" and run_id:
            run = load_run(project.runs, run_id)
            levels = tuple(lv for _, r in run.results for lv in r.levels)
        out[subset] = Measured(subset, n, status, run_id or None, levels)
    return out
