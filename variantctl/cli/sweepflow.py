"""The ``sweep`` command's flow: load, plan, print the plan; run it with live progress;
print the outcome and pick the exit code."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.logs.bounded import visible_lines
from variantctl.project.loaded import Project
from variantctl.sweeps.plan import Plan, PlannedPoint

if TYPE_CHECKING:
    from variantctl.hostmodel import Host
    from variantctl.runs.sweepstate import SweepDoc
    from variantctl.sweeps.executor import SweepUI
    from variantctl.targets.base import Target


def load_plan(project: Project, name: str, *, hosts: str | None, include_predicted: bool,
              previous: SweepDoc | None, resume: bool = False) -> Plan:
    """The plan of sweep ``name`` (reads YAML and the run store; connects nowhere);
    with ``resume``, the points ``previous`` finished are marked done."""
    from variantctl.config.hosts import get_host
    from variantctl.errors import NotFoundError
    from variantctl.runs.run import RunFileError
    from variantctl.sweeps.history import History
    from variantctl.sweeps.plan import make_plan
    from variantctl.sweeps.state import kept_on_resume

    spec = project.sweep(name)
    bases = {}
    for base in spec.bases:
        try:
            bases[base] = project.resolve(base)
        except NotFoundError as exc:
            raise NotFoundError(f"{spec.source}: base {exc.message}", hint=exc.hint) from None
    known = project.hosts
    names: tuple[str, ...] = spec.hosts
    if hosts is not None:
        names = tuple(dict.fromkeys(n.strip() for n in hosts.split(",") if n.strip()))
        if not names:
            from variantctl.errors import VariantctlError

            raise VariantctlError("--hosts needs a comma-separated list of host names",
                                  exit_code=ExitCode.USAGE)
    # the hosts the points go to (the bases' own only when no host list overrides them):
    # an unknown one is one error naming it, before anything runs
    for n in names or tuple(b.host for b in bases.values()):
        get_host(known, n)
    records = [rec for _, rec in project.runs.records() if not isinstance(rec, RunFileError)]
    bench_seconds = {}
    for entry in previous.points if previous is not None else ():
        bench_s = entry.timings.get("bench_s")
        if entry.status == "measured" and bench_s is not None and entry.point_key:
            bench_seconds[entry.point_key] = bench_s
    known_patchsets = project.patchset_names
    # the definitions of the patchsets the points require (an edited one makes a failed
    # run of the old one no reason to skip); one that does not load is the pre-flight's
    fingerprints = {}
    for name in sorted({r for b in bases.values() for r in b.requires}):
        if known_patchsets is not None and name in known_patchsets:
            fingerprints[name] = project.patchset(name).fingerprint
    return make_plan(spec, bases, known,
                     on_hosts=names, known_patchsets=known_patchsets,
                     patchset_fingerprints=fingerprints,
                     history=History.from_records(records), bench_seconds=bench_seconds,
                     include_predicted=include_predicted,
                     done={k: f"{e.status}, run {e.run_id}"
                           for k, e in kept_on_resume(previous if resume else None).items()})


class ProgressPrinter:
    """Live progress on stderr, one line per phase change: point i/N per host, ETA."""

    def __init__(self, env: Environment, plan: Plan, clock: Callable[[], float] = time.monotonic):
        self.env, self.clock = env, clock
        self.lock = threading.Lock()
        self.by_host: dict[str, list[PlannedPoint]] = {}
        for p in plan.to_run:
            self.by_host.setdefault(p.host, []).append(p)
        self.started = {h: clock() for h in self.by_host}
        self.done: dict[str, set[str]] = {h: set() for h in self.by_host}
        self.spent: dict[str, float] = {h: 0.0 for h in self.by_host}

    def _eta(self, point: PlannedPoint) -> float:
        """What the host still has to do: this point and the next ones, each as its
        estimate, scaled by how the finished points compared with theirs."""
        points = self.by_host[point.host]
        done = [p for p in points if p.name in self.done[point.host]]
        scale = 1.0
        estimated = sum(p.eta_s for p in done)
        if done and estimated > 0:
            scale = self.spent[point.host] / estimated
        rest = [p for p in points if p.name not in self.done[point.host]]
        return scale * sum(p.eta_s for p in rest)

    def phase(self, point: PlannedPoint, phase: str, detail: str = "") -> None:
        from variantctl.render.sweep import progress_line

        with self.lock:
            points = self.by_host.get(point.host, [point])
            i = next((k for k, p in enumerate(points, 1) if p.name == point.name), 1)
            if phase in ("measured", "failed", "error", "interrupted"):
                self.done.setdefault(point.host, set()).add(point.name)
                self.spent[point.host] = self.clock() - self.started.get(point.host,
                                                                          self.clock())
            eta = self._eta(point) if point.host in self.by_host else None
            line = progress_line(point.host, i, len(points), point, phase, detail, eta)
            # a detail can quote the server (an error body, a log line): filtered
            self.env.stderr.print(visible_lines(line), markup=False, highlight=False,
                                  soft_wrap=True)

    def note(self, text: str) -> None:
        with self.lock:
            self.env.stderr.print(visible_lines(text), markup=False, highlight=False,
                                  soft_wrap=True)


def run_sweep_command(env: Environment, name: str, *, dry_run: bool, resume: bool,
                      hosts: str | None, include_predicted: bool, grace: float,
                      as_json: bool) -> int:
    """Plan (``--dry-run``: only that) or run sweep ``name``; a run holds the sweep's
    lock from reading its state to its last write (a second run is refused, exit 3)."""
    if dry_run:
        return _run_sweep(env, name, dry_run=True, resume=resume, hosts=hosts,
                          include_predicted=include_predicted, grace=grace, as_json=as_json)
    from variantctl.sweeps.lock import sweep_lock

    with sweep_lock(env.runs_dir, name, started_at=env.now().isoformat()), _term_as_interrupt():
        return _run_sweep(env, name, dry_run=False, resume=resume, hosts=hosts,
                          include_predicted=include_predicted, grace=grace, as_json=as_json)


@contextlib.contextmanager
def _term_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, a scheduler ending the session) and SIGHUP (the terminal
    closed) stop a sweep as Ctrl-C does: the running points' servers are stopped and
    the state says ``interrupted``, instead of dying with servers left holding GPUs.
    Only where signals can be handled (the main thread)."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    saved = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _run_sweep(env: Environment, name: str, *, dry_run: bool, resume: bool,
               hosts: str | None, include_predicted: bool, grace: float,
               as_json: bool) -> int:
    from variantctl.cli.output import emit, print_json
    from variantctl.render.sweep import host_error_blocks, plan_blocks, plan_json, result_blocks
    from variantctl.sweeps.state import read_state

    project = Project(env)
    path = project.runs.sweep_state_path(name)
    previous = read_state(path)
    plan = load_plan(project, name, hosts=hosts, include_predicted=include_predicted,
                     previous=previous, resume=resume)
    if dry_run:
        if as_json:
            print_json(env, {"plan": plan_json(plan, project.secrets), "dry_run": True})
        else:
            emit(env, plan_blocks(plan, dry_run=True))
        return ExitCode.OK
    if not as_json:
        emit(env, [b for b in plan_blocks(plan, dry_run=False)])
    doc, host_errors, interrupted = execute_plan(env, project, plan, name, previous=previous,
                                                 resume=resume,
                                                 include_predicted=include_predicted,
                                                 grace=grace)
    if as_json:
        print_json(env, {"sweep": name, "state_file": str(path), "status": doc["status"],
                         "points": doc["points"],
                         "host_errors": {h: e.to_json() for h, e in host_errors.items()}})
    else:
        emit(env, result_blocks(doc, str(path)))
        emit(env, host_error_blocks(sorted(host_errors.items())))
    return exit_code(doc, host_errors, interrupted)


def execute_plan(env: Environment, project: Project, plan: Plan, name: str, *,
                 previous: SweepDoc | None, resume: bool, include_predicted: bool,
                 grace: float) -> tuple[dict[str, Any], Mapping[str, Any], bool]:
    """Run ``plan`` as sweep ``name`` (its state in the run store; with ``resume`` the
    points ``previous`` finished are kept): launch, bench and stop every point with live
    progress on stderr. Returns the final state document, the host errors and whether it
    was interrupted. ``sweep`` and ``bisect`` both run their points through here."""
    from variantctl.sweeps.executor import TargetPointRunner, run_sweep
    from variantctl.sweeps.state import SweepState
    from variantctl.targets.connect import open_target

    path = project.runs.sweep_state_path(name)
    if previous is not None and not resume and previous.status != "done":
        env.stderr.print(f"the last run of sweep {name} did not finish ({path}); starting "
                         "afresh (--resume continues it instead)", markup=False,
                         highlight=False, soft_wrap=True)
    if resume and previous is None:
        env.stderr.print(f"no earlier run of sweep {name} to resume ({path}); starting it",
                         markup=False, highlight=False, soft_wrap=True)
    state = SweepState.begin(path, plan, env.now, previous if resume else None,
                             store=project.runs)
    # the catalog load_plan read: its hosts, and every patchset a point requires
    known = project.hosts
    ctx = project.launch_context(r for p in plan.points for r in p.variant.requires)
    ui = ProgressPrinter(env, plan, env.clock)

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
        e["status"] == "interrupted" for e in state.snapshot()["points"])
    try:
        if interrupted:
            for e in state.snapshot()["points"]:
                if e["status"] == "running":
                    state.update(e["name"], status="interrupted", phase=None)
        state.finish("interrupted" if interrupted else "done")
    except (VariantctlError, OSError) as exc:
        # e.g. a full disk: the points' servers were stopped (or named as leftovers)
        # by then; the state keeps the last phase it could write
        raise VariantctlError(
            f"could not write the sweep state {path}: {exc}",
            hint=f"make room, then `variantctl sweep {name} --resume` continues from the "
            "last state written", exit_code=ExitCode.FAILED) from None
    return dict(state.snapshot()), outcome.host_errors, interrupted


def exit_code(doc: Mapping[str, Any], host_errors: Mapping[str, VariantctlError], interrupted: bool
              ) -> int:
    """130 interrupted; else the worst host error's code (4 unreachable); else 1 when a
    point that ran was not measured (failed start, server died, error); else 0."""
    if interrupted:
        return ExitCode.INTERRUPTED
    if host_errors:
        return max(int(e.exit_code) for e in host_errors.values())
    if any(e["status"] in ("failed", "error") for e in doc.get("points", ())):
        return ExitCode.FAILED
    return ExitCode.OK
