"""``launch`` and ``watch``: facts and pre-checks, start, watch, verdict, stop, archive.

Order of a launch (each step can refuse with a clear message, before anything
runs on the host):

1. resolve the variant and its host, run the pre-flight rules (errors stop the
   launch unless ``force``), render the launch script;
2. on the host (one connection): the variant's ``requires`` patchsets must be
   applied to every root (or get applied with ``apply_patches``); a server of
   the same variant or anything on its port refuses the launch (``replace``
   stops the variantctl server holding them; a stale pid file is cleaned up);
3. upload the script, start it detached, record it, open the local archive;
4. watch to a verdict; a failed, hung, exited or timed-out server is stopped
   (whole process group) unless ``keep``; the log and ``run.json`` are archived.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from variantctl.errors import NotFoundError, TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.hostmodel import Host
from variantctl.jsontypes import JsonMapping, JsonObject
from variantctl.launch.classify import ClassifierAdapter, Decision, on_host
from variantctl.launch.launcher import Launcher, launcher_for
from variantctl.launch.servers import (
    StopOutcome,
    layout_for,
    list_records,
    load_record,
    project_id,
    refuse_foreign,
    remove_record,
    save_record,
    stop_dict,
)
from variantctl.launch.watch import HANG, READY, TIMEOUT, Progress, watch
from variantctl.logs.expect import Mismatch
from variantctl.logs.verdict import VerdictKind
from variantctl.runs.identity import (
    Measured,
    PatchState,
    host_identity,
    launch_key,
    unresolved_launch_key,
)
from variantctl.runs.record import HostLayout, ServerRecord, stamp_of
from variantctl.runs.run import RunFileError, RunRecord, RunVerdict, freeze_object
from variantctl.runs.store import RunDir, RunStore
from variantctl.targets.base import Target
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.modelinfo import ModelInfo
from variantctl.variants.rules import Finding

if TYPE_CHECKING:
    from variantctl.logs.model import Catalog
    from variantctl.patching.model import Patchset


class LaunchUI(Protocol):
    """What the launch tells a person while it works (the CLI prints it with rich)."""

    def note(self, text: str) -> None: ...

    def progress(self, progress: Progress) -> None: ...

    def decided(self, result: LaunchResult) -> None:
        """The verdict is known: show it now, before the (possibly slow) stop and archive."""
        ...


class QuietUI:
    def note(self, text: str) -> None:
        return None

    def decided(self, result: LaunchResult) -> None:
        return None

    def progress(self, progress: Progress) -> None:
        return None


@dataclass(frozen=True)
class LaunchOptions:
    """How to launch (the variant and host are resolved by the caller)."""

    apply_patches: bool = False
    force: bool = False
    replace: bool = False
    wait: bool = True
    timeout: float | None = None
    stall: float | None = None
    keep: bool = False
    grace: float = 10.0
    #: what the run measures, part of its launch key (a sweep's bench parameters)
    measured: Measured | None = None


@dataclass(frozen=True)
class LaunchContext:
    """What a launch needs that is not on the host: loaded by the caller (the CLI, a
    sweep) so that :func:`launch_variant` reads no YAML and resolves no names."""

    runs: RunStore
    clock: Callable[[], float]
    now: Callable[[], datetime]
    #: every configured host (pre-flight rules read their vLLM and vendor facts)
    hosts: Mapping[str, Host]
    #: every patchset of the project, loaded (the variant's ``requires`` must be among them);
    #: the state of each on the host's roots is part of what decides a run
    patchsets: Mapping[str, Patchset]
    #: names of every patchset in the project (None: the requires rule is skipped)
    known_patchsets: tuple[str, ...] | None
    #: the classifier's signature catalog: the command's one catalog (shipped signatures,
    #: the project's ``signatures/`` and any extra directories), as ``classify`` uses
    signatures: Catalog


@dataclass(frozen=True)
class LaunchResult:
    """A finished launch (or watch): the one verdict value (``run_verdict``, also what
    ``run.json`` holds), what the watch saw beside it, and how the server was left."""

    variant: str
    host: str
    record: ServerRecord | None = None
    run_id: str | None = None
    run_dir: Path | None = None
    #: the verdict with what explains it (``started`` while nobody watched)
    run_verdict: RunVerdict = field(default_factory=RunVerdict)
    #: seconds from the start of watching to the verdict (None: not watched)
    seconds: float | None = None
    #: the classifier's facts and what the launcher knows beside them (``run.json`` facts)
    facts: JsonMapping = field(default_factory=lambda: MappingProxyType({}))
    reconnects: int = 0
    #: what the log contradicts of the variant's ``expect`` and flags (logs.expect)
    expect: tuple[Mismatch, ...] = ()
    stopped: StopOutcome | None = None
    findings: tuple[Finding, ...] = ()
    patches: tuple[PatchState, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> VerdictKind:
        return self.run_verdict.kind

    @property
    def watched(self) -> bool:
        return self.seconds is not None

    @property
    def expect_ok(self) -> bool:
        return not self.expect

    @property
    def exit_code(self) -> ExitCode:
        """What the verdict means as an exit code (:meth:`VerdictKind.exit_code`)."""
        return self.verdict.exit_code(expect_ok=self.expect_ok)


def preflight(variant: ResolvedVariant, ctx: LaunchContext,
              model: ModelInfo | None = None) -> list[Finding]:
    """The pre-flight rules for one variant, with its model's facts when they were read."""
    from variantctl.variants.check import check

    return check([variant], ctx.known_patchsets, ctx.hosts,
                 models={variant.name: model} if model else None)


def ensure_patches(
    target: Target, host: Host, variant: ResolvedVariant, ctx: LaunchContext, *, apply: bool,
    now: datetime, ui: LaunchUI,
) -> tuple[PatchState, ...]:
    """The state (per root, with sha256 per file) of every patchset of the project on the
    host. The variant's ``requires`` must be applied everywhere (applied now when
    ``apply``, else the launch is refused); the others are recorded as they are, so a
    hand-applied patch (the seed's story) makes a different run key."""
    from variantctl.patching.states import APPLIED
    from variantctl.targets.patchrun import execute_apply, execute_status, roots_state
    from variantctl.targets.roots import resolve_roots

    for name in variant.requires:
        if name not in ctx.patchsets:
            raise NotFoundError(f"variant {variant.name} requires patchset {name}, "
                                "which was not loaded")
    out: list[PatchState] = []
    for name in sorted(ctx.patchsets):
        patchset = ctx.patchsets[name]
        required = name in variant.requires
        try:
            roots = resolve_roots(target, host, patchset.modules)
            report = execute_status(target, roots, patchset)
        except VariantctlError as exc:
            if required:
                raise
            out.append(PatchState(name, MappingProxyType({}), (), error=exc.message,
                                  fingerprint=patchset.fingerprint))
            continue
        states = roots_state(report)
        if required and set(states.values()) != {APPLIED}:
            listing = ", ".join(f"{r}: {s}" for r, s in states.items())
            if not apply:
                raise VariantctlError(
                    f"variant requires patchset {name}, which is not applied on host "
                    f"{host.name} ({listing})",
                    hint=f"variantctl apply {name} --host {host.name}, or launch with "
                    "--apply-patches",
                    exit_code=ExitCode.CONFLICT,
                )
            ui.note(f"applying {name} on {host.name} ({listing})")
            applied = execute_apply(target, roots, patchset, now=now)
            if applied.exit_code != ExitCode.OK:
                problems = "; ".join(f"{f.path}: {f.message or f.action}" for f in applied.files
                                     if f.action not in ("applied", "unchanged"))
                raise VariantctlError(
                    f"applying {name} on host {host.name} failed: "
                    f"{applied.error or problems or 'see variantctl status'}",
                    exit_code=applied.exit_code,
                )
            report = execute_status(target, roots, patchset)
            states = roots_state(report)
        out.append(PatchState(
            name=name,
            roots=MappingProxyType(dict(states)),
            files=tuple(MappingProxyType({"root": f.root, "path": f.path, "state": f.state,
                                          "sha256": f.sha256_before}) for f in report.files),
            required=required,
            fingerprint=patchset.fingerprint,
        ))
    return tuple(out)


def _clear_the_way(
    target: Target, host: Host, layout: HostLayout, variant: ResolvedVariant, *, replace: bool,
    grace: float, ui: LaunchUI,
) -> None:
    launcher = launcher_for(host)
    existing = load_record(target, layout, variant.name)
    if existing is not None:
        (st,) = launcher.statuses(target, [existing], probe=False)
        # a record is only stale when its leader is gone too (checked on its own, so a
        # short read of the process table can never orphan a running server)
        if not st.alive and not launcher.probe(target, existing, health=False).alive:
            remove_record(target, layout, existing)
            ui.note(f"removed a stale pid file of {variant.name} on {host.name} "
                    f"({existing.ident} is gone)")
        elif replace:
            ui.note(f"stopping the running {variant.name} on {host.name} ({existing.ident})")
            _stop_or_fail(target, host, layout, existing, grace)
        else:
            raise VariantctlError(
                f"{variant.name} is already running on host {host.name} "
                f"({existing.ident}, port {existing.port})",
                hint="variantctl stop " + variant.name + " first, or launch with --replace",
                exit_code=ExitCode.FAILED,
            )
    if not launcher.port_in_use(target, layout, variant.port):
        return
    if replace:
        holders = [r for r in list_records(target, layout) if r.port == variant.port]
        for st in launcher.statuses(target, holders, probe=False):
            if st.alive:
                ui.note(f"stopping {st.record.variant} on {host.name}: it holds port "
                        f"{variant.port}")
                _stop_or_fail(target, host, layout, st.record, grace)
        if not launcher.port_in_use(target, layout, variant.port):
            return
    raise VariantctlError(
        f"port {variant.port} is already in use on host {host.name}",
        hint="stop what listens there (variantctl ps shows variantctl's servers; --replace "
        "stops them), or pick another port with --port",
        exit_code=ExitCode.FAILED,
    )


def _stop_or_fail(target: Target, host: Host, layout: HostLayout, record: ServerRecord,
                  grace: float) -> None:
    outcome = launcher_for(host).stop(target, layout, record, grace=grace)
    occupant = outcome.result.occupant
    if occupant is not None and not occupant.foreign:
        raise VariantctlError(
            f"could not stop {record.variant} ({record.ident}): its record has no process "
            f"identity and {occupant.describe()}, which cannot be verified as the server; "
            "nothing signalled",
            hint=f"if it is the server: kill -TERM -- -{record.pid} on {host.name}, then "
            "launch again", exit_code=ExitCode.FAILED)
    if not outcome.ok:
        raise VariantctlError(
            f"could not stop {record.variant} ({record.ident}): "
            f"still running {list(outcome.result.remaining)}, port free: {outcome.port_free}",
            exit_code=ExitCode.FAILED,
        )


# -- launch / watch ----------------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    """What pre-flight, the patch check and the cleared port leave for the start."""

    script: str
    findings: tuple[Finding, ...]
    patches: tuple[PatchState, ...]
    #: the launch's classifier (None: not waiting) and the clock reading at its start
    classifier: ClassifierAdapter | None
    started_clock: float


def launch_variant(
    target: Target, host: Host, variant: ResolvedVariant, opts: LaunchOptions,
    ctx: LaunchContext, ui: LaunchUI | None = None,
) -> LaunchResult:
    """Start ``variant`` on the open ``target`` and (unless ``opts.wait`` is False) watch
    it to a verdict. Loads no YAML, resolves no names: the caller passes everything."""
    ui = ui or QuietUI()
    launcher = launcher_for(host)
    # a SLURM job gets a port of its own (before rendering: the port is in the script)
    layout = layout_for(target, host)
    variant = launcher.place(target, layout, variant)
    try:
        prepared = _prepare(target, host, layout, variant, opts, ctx, ui, launcher)
        run, record = start(target, host, layout, variant, ctx, prepared, opts)
    except BaseException:
        # refused before a server was started (pre-flight, patches, the port, a refused
        # sbatch): what place() reserved (a SLURM port claim) goes back
        with contextlib.suppress(VariantctlError, OSError):
            launcher.unplace(target, layout, variant)
        raise
    save_record(target, layout, record)
    # the run as started: a launch that is killed leaves a run `watch` resumes
    base = RunRecord(
        run_id=run.run_id, key=run.key, variant_name=variant.name,
        created_at=record.started_at, variant=variant_json(variant), host=host_identity(host),
        script=prepared.script, server=record.to_dict(),
        patches={p.name: p.to_json() for p in prepared.patches}, preflight=prepared.findings,
        verdict=RunVerdict(), facts={}, timings={"started_at": record.started_at})
    _archive(ctx, run, base)
    started = LaunchResult(variant.name, host.name, record=record, run_id=run.run_id,
                           run_dir=run.path, findings=prepared.findings,
                           patches=prepared.patches)
    ui.note(f"started {variant.name} on {host.name}: {record.ident}, port {record.port}, "
            f"log {record.log}")
    if prepared.classifier is None:
        return started
    try:
        return follow(target, host, layout, variant, record, opts, ctx, ui, run, base, started,
                      started_clock=prepared.started_clock, classifier=prepared.classifier)
    except TargetError as exc:
        if exc.kind == "unreachable":
            raise  # the host is gone: the server keeps running there; watch re-attaches
        _stop_after_error(target, host, layout, record, opts, ui)
        raise
    except BaseException:  # interrupted or a bug: leave no orphan server behind
        _stop_after_error(target, host, layout, record, opts, ui)
        raise


def _prepare(target: Target, host: Host, layout: HostLayout, variant: ResolvedVariant,
             opts: LaunchOptions, ctx: LaunchContext, ui: LaunchUI,
             launcher: Launcher) -> _Prepared:
    """Pre-flight, patches, the way cleared: everything before the server starts."""
    from variantctl.targets.modelfacts import read_model_info
    from variantctl.variants.check import has_errors
    from variantctl.variants.render import render_script

    script = render_script(variant, host)
    # the model's config.json as the host sees it (pre-flight needs its head count
    # and length limit); nothing has been started yet when pre-flight refuses
    findings = tuple(preflight(variant, ctx, read_model_info(target, variant.model)))
    for f in findings:
        ui.note(f"pre-flight {f.severity}: {f.message}"
                + (f" (would fail as {f.signature})" if f.signature else ""))
    if has_errors(list(findings)) and not opts.force:
        raise VariantctlError(
            f"pre-flight check of {variant.name} found errors; not launching",
            hint="fix the variant, or launch with --force to try anyway",
            exit_code=ExitCode.FAILED,
        )
    patches: tuple[PatchState, ...] = ()
    if launcher.check_patches(variant):
        patches = ensure_patches(target, host, variant, ctx, apply=opts.apply_patches,
                                 now=ctx.now(), ui=ui)
    _clear_the_way(target, host, layout, variant, replace=opts.replace, grace=opts.grace,
                   ui=ui)
    # built before the start, so a broken signature catalog cannot orphan a server
    classifier = make_classifier(ctx, variant, opts) if opts.wait else None
    return _Prepared(script, findings, patches, classifier, ctx.clock())


def _stop_after_error(target: Target, host: Host, layout: HostLayout, record: ServerRecord,
                      opts: LaunchOptions, ui: LaunchUI) -> None:
    if opts.keep:
        return
    try:
        launcher_for(host).stop(target, layout, record, grace=opts.grace)
        ui.note(f"stopped {record.variant} ({record.ident}) after the error")
    except Exception as exc:  # the original error matters more
        ui.note(f"could not stop {record.variant} ({record.ident}): {exc}")


def make_classifier(ctx: LaunchContext, variant: ResolvedVariant | None,
                    opts: LaunchOptions) -> ClassifierAdapter:
    stall = opts.stall or (variant.startup.stall if variant else 180.0)
    return ClassifierAdapter.create(stall_seconds=stall, clock=ctx.clock,
                                    catalog=ctx.signatures)


def start(
    target: Target, host: Host, layout: HostLayout, variant: ResolvedVariant,
    ctx: LaunchContext, prepared: _Prepared, opts: LaunchOptions,
) -> tuple[RunDir, ServerRecord]:
    """Upload the script, open the local run directory, start the server detached: the
    run and the server's record (the caller saves the record on the host)."""
    when = ctx.now()
    stamp = stamp_of(when)
    for d in (layout.logs, layout.run, layout.scripts):
        target.makedirs(d)
    script_path = layout.script(variant.name, stamp)
    log_path = layout.log(variant.name, stamp)
    target.write_atomic(script_path, prepared.script.encode())
    key = launch_key(variant, host, prepared.patches, opts.measured)
    run = ctx.runs.create(key=key, variant=variant.name, when=when)
    ctx.runs.write_file(run.path, "launch.sh", prepared.script.encode())
    launcher = launcher_for(host)
    started = launcher.start(target, name=variant.name, script=script_path,
                             log=log_path, pid_file=layout.pid_file(variant.name),
                             cwd=layout.workdir)
    identity = launcher.identity(target, started.pid) if started.pid is not None else None
    record = ServerRecord(variant=variant.name, host=host.name, pid=started.pid,
                          job=started.job, port=variant.port,
                          log=log_path, script=script_path,
                          pid_file=layout.pid_file(variant.name),
                          started_at=when.isoformat(), run_dir=str(run.path),
                          boot_id=identity.boot_id if identity else None,
                          proc_start=identity.start if identity else None,
                          project=project_id(ctx.runs.root))
    return run, record


def expect_mismatches(variant: ResolvedVariant, decision: Decision | None) -> tuple[Mismatch, ...]:
    """What the log contradicts of the variant: the one expect engine (logs.expect), fed
    exactly as ``classify --expect`` feeds it."""
    from variantctl.logs.expect import check_log

    result = decision.result if decision is not None else None
    if result is None:
        return ()
    return tuple(check_log(result, variant.expect, variant.args))


def follow(
    target: Target, host: Host, layout: HostLayout, variant: ResolvedVariant | None,
    record: ServerRecord, opts: LaunchOptions, ctx: LaunchContext, ui: LaunchUI,
    run: RunDir, base: RunRecord, started: LaunchResult, *,
    started_clock: float | None = None, classifier: ClassifierAdapter | None = None,
) -> LaunchResult:
    """Watch a started server to its verdict, stop it if it failed, archive: ``base`` is
    the run as recorded at the start, ``started`` the launch's result so far."""
    timeout = opts.timeout or (variant.startup.ready_timeout if variant else 600.0)
    classifier = classifier or make_classifier(ctx, variant, opts)
    launcher = launcher_for(host)
    t_watch = time.time()
    outcome = watch(target, record, classifier, timeout=timeout, clock=ctx.clock,
                    on_progress=ui.progress, started=started_clock, launcher=launcher)
    verdict_wall = time.time()
    decision = outcome.decision
    if outcome.verdict in (HANG, TIMEOUT):
        # told for the machine it happened on: its GPUs (no NCCL advice without), its load
        decision = on_host(decision, launcher.conditions(target, record), ctx.signatures)
    # the one verdict value: printed now, archived and mapped to the exit code below
    verdict = RunVerdict.of(outcome.verdict, decision.result, waiting=decision.waiting,
                            decisive_line=outcome.decisive_line,
                            last_lines=outcome.last_lines[-15:], lines=outcome.lines,
                            health=outcome.health)
    # what the launcher knows beside the log (e.g. the SLURM job and node)
    facts = freeze_object({**outcome.facts, **(launcher.facts(target, record) or {})})
    expect = (expect_mismatches(variant, decision)
              if outcome.verdict == READY and variant is not None else ())
    result = replace(started, run_verdict=verdict, seconds=outcome.time_to_verdict,
                     facts=facts, reconnects=outcome.reconnects, expect=expect)
    ui.decided(result)
    printed_wall = time.time()
    if verdict.ended_badly and not opts.keep:
        result = replace(result, stopped=launcher.stop(target, layout, record,
                                                       grace=opts.grace))
    try:
        ctx.runs.write_file(run.path, "server.log", target.read_bytes(record.log))
    except TargetError as exc:
        result = replace(result, notes=(*result.notes,
                                        f"could not copy the log: {exc.message}"))
    timings = {
        **base.timings,
        "watch_started_at": t_watch,
        "verdict_at": verdict_wall,
        "verdict_printed_at": printed_wall,
        "seconds_to_verdict": round(outcome.time_to_verdict, 3),
        "time_to_ready_s": round(outcome.time_to_verdict, 3) if outcome.verdict == READY
        else None,
        "reconnects": outcome.reconnects,
    }
    _archive(ctx, run, replace(
        base, verdict=verdict, facts=facts, expect=expect, expect_ok=not expect,
        timings=timings, log_file="server.log",
        stopped=stop_dict(host.name, result.stopped) if result.stopped else None))
    return result


def _archive(ctx: LaunchContext, run: RunDir, record: RunRecord) -> None:
    """The one place a launch hands its run record to the store: as started, then with
    its verdict."""
    ctx.runs.write(run.path, record)


def watch_variant(
    target: Target, host: Host, name: str, variant: ResolvedVariant | None,
    opts: LaunchOptions, ctx: LaunchContext, ui: LaunchUI | None = None,
) -> LaunchResult:
    """``variantctl watch``: attach to a server started earlier (e.g. with --no-wait).
    ``variant`` is None when it is no longer in the catalog (its record still is)."""
    ui = ui or QuietUI()
    layout = layout_for(target, host)
    record = load_record(target, layout, name)
    if record is None:
        raise NotFoundError(f"{name} is not running on host {host.name}",
                            hint="variantctl ps lists running variants; "
                            "variantctl launch starts one")
    # two projects may share the host's workdir: never archive into another's runs/
    refuse_foreign(record, ctx.runs.root, "watched")
    notes: list[str] = []
    previous: tuple[RunDir, RunRecord] | None = None
    if record.run_dir:
        run_dir = Path(record.run_dir)
        try:
            rec = ctx.runs.read(run_dir)
            previous = RunDir(run_dir, rec.run_id, rec.key, rec.seq, name), rec
        except RunFileError as exc:
            notes.append(f"the launch's run record is unreadable ({exc.message}); "
                         "recording this watch as a new run")
    # the variant as the launch recorded it when it is no longer in the catalog
    shown = variant_json(variant) if variant is not None else None
    if previous is not None:
        run, rec = previous
        patches = tuple(PatchState.from_json(n, p) for n, p in rec.patches.items())
        base = replace(rec, variant_name=name, variant=shown or rec.variant,
                       host=host_identity(host), server=record.to_dict(),
                       patches={p.name: p.to_json() for p in patches})
    else:
        when = ctx.now()
        key = launch_key(variant, host) if variant else unresolved_launch_key(name, host)
        run = ctx.runs.create(key=key, variant=name, when=when)
        patches = ()
        base = RunRecord(
            run_id=run.run_id, key=key, variant_name=name, created_at=when.isoformat(),
            variant=shown or {}, host=host_identity(host), script="",
            server=record.to_dict(), patches={}, verdict=RunVerdict(), facts={},
            timings={"started_at": record.started_at})
    started = LaunchResult(name, host.name, record=record, run_id=run.run_id, run_dir=run.path,
                           findings=base.preflight, patches=patches, notes=tuple(notes))
    return follow(target, host, layout, variant, record, opts, ctx, ui, run, base, started)


def variant_json(variant: ResolvedVariant) -> JsonObject:
    """The variant as run.json keeps it: every value and where it came from."""
    return {**variant.to_dict(), "origins": dict(variant.origins)}
