"""``sweep``: plan a sweep file's grid; run it (launch, bench, stop every point, under
the sweep's lock, resumable); the final state, host errors and exit code as one
:class:`SweepOutcome`. ``bisect`` runs its rounds through :func:`execute_plan` too.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.project.loaded import Project
from variantctl.runs.sweepstate import SweepDoc
from variantctl.sweeps.plan import Plan

if TYPE_CHECKING:
    from variantctl.hostmodel import Host
    from variantctl.sweeps.executor import SweepUI, TargetPointRunner
    from variantctl.targets.base import Target


@dataclass(frozen=True)
class SweepRequest:
    """``sweep NAME``'s options."""

    name: str
    dry_run: bool = False
    resume: bool = False
    #: ``--hosts a,b`` as given (None: the sweep file's, else each base's own)
    hosts: str | None = None
    include_predicted: bool = False
    grace: float = 10.0


@dataclass(frozen=True)
class SweepOutcome:
    """How a run of a sweep ended: its final state, the errors that stopped a host, and
    whether it was interrupted."""

    path: Path
    doc: SweepDoc
    host_errors: Mapping[str, VariantctlError]
    interrupted: bool

    @property
    def exit_code(self) -> int:
        """130 interrupted; else the worst host error's code (4 unreachable); else 1
        when a point that ran was not measured (failed start, server died, error);
        else 0."""
        if self.interrupted:
            return ExitCode.INTERRUPTED
        if self.host_errors:
            return max(int(e.exit_code) for e in self.host_errors.values())
        if any(e.status in ("failed", "error") for e in self.doc.points):
            return ExitCode.FAILED
        return ExitCode.OK


def load_plan(project: Project, req: SweepRequest, previous: SweepDoc | None) -> Plan:
    """The plan of sweep ``req.name`` (reads YAML and the run store; connects nowhere);
    with ``req.resume``, the points ``previous`` finished are marked done."""
    from variantctl.errors import NotFoundError
    from variantctl.usecases.planning import plan_points

    spec = project.sweep(req.name)
    bases = {}
    for base in spec.bases:
        try:
            bases[base] = project.resolve(base)
        except NotFoundError as exc:
            raise NotFoundError(f"{spec.source}: base {exc.message}", hint=exc.hint) from None
    names: tuple[str, ...] = spec.hosts
    if req.hosts is not None:
        names = tuple(dict.fromkeys(n.strip() for n in req.hosts.split(",") if n.strip()))
        if not names:
            raise VariantctlError("--hosts needs a comma-separated list of host names",
                                  exit_code=ExitCode.USAGE)
    return plan_points(project, spec, bases, on_hosts=names,
                       include_predicted=req.include_predicted, previous=previous,
                       resume=req.resume)


def plan_sweep(project: Project, req: SweepRequest) -> Plan:
    """``--dry-run``: the plan alone."""
    from variantctl.sweeps.state import read_state

    previous = read_state(project.runs, project.runs.sweep_state_path(req.name))
    return load_plan(project, req, previous)


def run_sweep(project: Project, req: SweepRequest,
              start: Callable[[Plan], SweepUI]) -> SweepOutcome:
    """Plan and run sweep ``req.name``; ``start(plan)`` is called once planned and gives
    the UI the points report their phases to. The run holds the sweep's lock from
    reading its state to its last write (a second run is refused, exit 3)."""
    from variantctl.sweeps.signals import term_as_interrupt
    from variantctl.sweeps.state import read_state

    env = project.env
    with project.runs.sweep_lock(req.name, started_at=env.now().isoformat()), \
            term_as_interrupt():
        previous = read_state(project.runs, project.runs.sweep_state_path(req.name))
        plan = load_plan(project, req, previous)
        return execute_plan(project, plan, req.name, start(plan), previous=previous,
                            resume=req.resume, include_predicted=req.include_predicted,
                            grace=req.grace)


def execute_plan(project: Project, plan: Plan, name: str, ui: SweepUI, *,
                 previous: SweepDoc | None, resume: bool, include_predicted: bool,
                 grace: float) -> SweepOutcome:
    """Run ``plan`` as sweep ``name`` (its state in the run store; with ``resume`` the
    points ``previous`` finished are kept): launch, bench and stop every point,
    reporting to ``ui``. ``sweep`` and ``bisect`` both run their points through here."""
    from variantctl.sweeps.executor import TargetPointRunner, run_sweep
    from variantctl.sweeps.state import SweepState
    from variantctl.targets.connect import open_target

    env = project.env
    path = project.runs.sweep_state_path(name)
    if previous is not None and not resume and previous.status != "done":
        ui.note(f"the last run of sweep {name} did not finish ({path}); starting "
                "afresh (--resume continues it instead)")
    if resume and previous is None:
        ui.note(f"no earlier run of sweep {name} to resume ({path}); starting it")
    state = SweepState.begin(path, plan, env.now, previous if resume else None,
                             store=project.runs)
    # the catalog load_plan read: its hosts, and every patchset a point requires
    known = project.hosts
    ctx = project.launch_context(r for p in plan.points for r in p.variant.requires)

    def make_runner(host: Host, target: Target, stop: threading.Event, point_ui: SweepUI
                    ) -> TargetPointRunner:
        return TargetPointRunner(target, host, plan.spec, ctx, ui=point_ui, stop=stop,
                                 include_predicted=include_predicted, grace=grace,
                                 clock=env.clock)

    try:
        outcome = run_sweep(plan, state, known, make_runner, ui, open_target=open_target,
                            clock=env.clock, grace=grace, runs_root=env.runs_dir)
    except BaseException:
        # a bug in a host thread, or a second Ctrl-C: the state must still say this run
        # did not finish, so the next `sweep` (or --resume) reruns what was running
        # (a state that cannot be written, e.g. a full disk, must not hide that error)
        with contextlib.suppress(VariantctlError, OSError):
            state.finish("interrupted")
        raise
    interrupted = outcome.interrupted or any(
        e.status == "interrupted" for e in state.snapshot().points)
    try:
        if interrupted:
            for e in state.snapshot().points:
                if e.status == "running" and e.name is not None:
                    state.update(e.name, lambda e: replace(e, status="interrupted", phase=None))
        state.finish("interrupted" if interrupted else "done")
    except (VariantctlError, OSError) as exc:
        # e.g. a full disk: the points' servers were stopped (or named as leftovers)
        # by then; the state keeps the last phase it could write
        raise VariantctlError(
            f"could not write the sweep state {path}: {exc}",
            hint=f"make room, then `variantctl sweep {name} --resume` continues from the "
            "last state written", exit_code=ExitCode.FAILED) from None
    return SweepOutcome(path, state.snapshot(), outcome.host_errors, interrupted)
