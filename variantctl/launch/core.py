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
)
from variantctl.launch.watch import (
    EXITED,
    FAILED,
    HANG,
    READY,
    TIMEOUT,
    Progress,
    WatchOutcome,
    watch,
)
from variantctl.logs.expect import Mismatch
from variantctl.runs.identity import (
    Measured,
    PatchState,
    host_identity,
    launch_key,
    unresolved_launch_key,
)
from variantctl.runs.record import HostLayout, ServerRecord, stamp_of
from variantctl.runs.run import Evidence, RunFileError, RunRecord, RunVerdict
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
    variant: str
    host: str
    record: ServerRecord | None = None
    run_id: str | None = None
    run_dir: Path | None = None
    outcome: WatchOutcome | None = None
    #: what the log contradicts of the variant's ``expect`` and flags (logs.expect)
    expect: tuple[Mismatch, ...] = ()
    stopped: StopOutcome | None = None
    findings: tuple[Finding, ...] = ()
    patches: tuple[PatchState, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        return self.outcome.verdict if self.outcome else "started"

    @property
    def expect_ok(self) -> bool:
        return not self.expect


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


@dataclass
class _Draft:
    """The result while the launch builds it (frozen into a LaunchResult for callers)."""

    variant: str
    host: str
    record: ServerRecord | None = None
    run: RunDir | None = None
    outcome: WatchOutcome | None = None
    expect: tuple[Mismatch, ...] = ()
    stopped: StopOutcome | None = None
    findings: tuple[Finding, ...] = ()
    patches: tuple[PatchState, ...] = ()
    notes: list[str] = field(default_factory=list)
    script: str = ""
    #: when each step happened (ISO times) and how long it took (seconds, counts); run.json
    timings: dict[str, str | float | int | None] = field(default_factory=dict)
    key: str = ""
    created_at: str = ""
    #: the launch's classifier and the clock reading at its start (launch_variant)
    classifier: ClassifierAdapter | None = None
    started_clock: float | None = None

    def freeze(self) -> LaunchResult:
        return LaunchResult(
            variant=self.variant, host=self.host, record=self.record,
            run_id=self.run.run_id if self.run else None,
            run_dir=self.run.path if self.run else None,
            outcome=self.outcome, expect=self.expect, stopped=self.stopped,
            findings=self.findings, patches=self.patches, notes=tuple(self.notes),
        )


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
    draft = _Draft(variant.name, host.name)
    try:
        record = _prepare_and_start(target, host, layout, variant, opts, ctx, ui, launcher,
                                    draft)
    except BaseException:
        if draft.record is None:
            # refused before a server was recorded (pre-flight, patches, the port, a
            # refused sbatch): what place() reserved (a SLURM port claim) goes back
            with contextlib.suppress(VariantctlError, OSError):
                launcher.unplace(target, layout, variant)
        raise
    started_clock, classifier = draft.started_clock, draft.classifier
    ui.note(f"started {variant.name} on {host.name}: {record.ident}, port {record.port}, "
            f"log {record.log}")
    if classifier is None:
        return draft.freeze()
    try:
        follow(target, host, layout, variant, record, opts, ctx, ui, draft,
               started=started_clock, classifier=classifier)
    except TargetError as exc:
        if exc.kind == "unreachable":
            raise  # the host is gone: the server keeps running there; watch re-attaches
        _stop_after_error(target, host, layout, record, opts, ui)
        raise
    except BaseException:  # interrupted or a bug: leave no orphan server behind
        _stop_after_error(target, host, layout, record, opts, ui)
        raise
    return draft.freeze()


def _prepare_and_start(target: Target, host: Host, layout: HostLayout,
                       variant: ResolvedVariant, opts: LaunchOptions, ctx: LaunchContext,
                       ui: LaunchUI, launcher: Launcher, draft: _Draft) -> ServerRecord:
    """Pre-flight, patches, the way cleared, the server started and recorded."""
    from variantctl.targets.modelfacts import read_model_info
    from variantctl.variants.check import has_errors
    from variantctl.variants.render import render_script

    draft.script = render_script(variant, host)
    # the model's config.json as the host sees it (pre-flight needs its head count
    # and length limit); nothing has been started yet when pre-flight refuses
    draft.findings = tuple(preflight(variant, ctx, read_model_info(target, variant.model)))
    for f in draft.findings:
        ui.note(f"pre-flight {f.severity}: {f.message}"
                + (f" (would fail as {f.signature})" if f.signature else ""))
    if has_errors(list(draft.findings)) and not opts.force:
        raise VariantctlError(
            f"pre-flight check of {variant.name} found errors; not launching",
            hint="fix the variant, or launch with --force to try anyway",
            exit_code=ExitCode.FAILED,
        )
    if launcher.check_patches(variant):
        draft.patches = ensure_patches(target, host, variant, ctx, apply=opts.apply_patches,
                                       now=ctx.now(), ui=ui)
    _clear_the_way(target, host, layout, variant, replace=opts.replace, grace=opts.grace,
                   ui=ui)
    # built before the start, so a broken signature catalog cannot orphan a server
    draft.classifier = make_classifier(ctx, variant, opts) if opts.wait else None
    draft.started_clock = ctx.clock()
    return start(target, host, layout, variant, ctx, draft, opts)


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
    ctx: LaunchContext, draft: _Draft, opts: LaunchOptions,
) -> ServerRecord:
    """Upload the script, start it detached, record it; open the local run directory."""
    when = ctx.now()
    stamp = stamp_of(when)
    for d in (layout.logs, layout.run, layout.scripts):
        target.makedirs(d)
    script_path = layout.script(variant.name, stamp)
    log_path = layout.log(variant.name, stamp)
    target.write_atomic(script_path, draft.script.encode())
    draft.key = launch_key(variant, host, draft.patches, opts.measured)
    draft.created_at = when.isoformat()
    run = ctx.runs.create(key=draft.key, variant=variant.name, when=when)
    draft.run = run
    ctx.runs.write_file(run.path, "launch.sh", draft.script.encode())
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
    draft.record = record
    save_record(target, layout, record)
    draft.timings = {"started_at": record.started_at}
    ctx.runs.write(run.path, _run_record(variant_json(variant), host, draft))
    return record


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
    draft: _Draft, *, started: float | None = None, classifier: ClassifierAdapter | None = None,
) -> None:
    """Watch a started server to its verdict, stop it if it failed, archive."""
    assert draft.run is not None
    timeout = opts.timeout or (variant.startup.ready_timeout if variant else 600.0)
    classifier = classifier or make_classifier(ctx, variant, opts)
    launcher = launcher_for(host)
    t_watch = time.time()
    outcome = watch(target, record, classifier, timeout=timeout, clock=ctx.clock,
                    on_progress=ui.progress, started=started, launcher=launcher)
    verdict_wall = time.time()
    if outcome.verdict in (HANG, TIMEOUT) and outcome.decision is not None:
        # told for the machine it happened on: its GPUs (no NCCL advice without), its load
        decision = on_host(outcome.decision, launcher.conditions(target, record),
                           ctx.signatures)
        outcome = replace(outcome, decision=decision)
    extra = launcher.facts(target, record)
    if extra:  # what the launcher knows beside the log (e.g. the SLURM job and node)
        outcome = replace(outcome, facts={**outcome.facts, **extra})
    draft.outcome = outcome
    if outcome.verdict == READY and variant is not None:
        draft.expect = expect_mismatches(variant, outcome.decision)
    ui.decided(draft.freeze())
    printed_wall = time.time()
    if outcome.verdict in (FAILED, HANG, TIMEOUT, EXITED) and not opts.keep:
        draft.stopped = launcher.stop(target, layout, record, grace=opts.grace)
    try:
        log = target.read_bytes(record.log)
        ctx.runs.write_file(draft.run.path, "server.log", log)
    except TargetError as exc:
        draft.notes.append(f"could not copy the log: {exc.message}")
    draft.timings.update({
        "watch_started_at": t_watch,
        "verdict_at": verdict_wall,
        "verdict_printed_at": printed_wall,
        "seconds_to_verdict": round(outcome.time_to_verdict, 3),
        "time_to_ready_s": round(outcome.time_to_verdict, 3) if outcome.verdict == READY
        else None,
        "reconnects": outcome.reconnects,
    })
    ctx.runs.write(draft.run.path, _run_record(
        variant_json(variant) if variant is not None else {}, host, draft))


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
    draft = _Draft(name, host.name, record=record)
    previous = None
    if record.run_dir:
        run_dir = Path(record.run_dir)
        try:
            previous = ctx.runs.read(run_dir)
            draft.run = RunDir(run_dir, previous.run_id, previous.key, previous.seq, name)
        except RunFileError as exc:
            draft.notes.append(f"the launch's run record is unreadable ({exc.message}); "
                               "recording this watch as a new run")
    if previous is not None:
        draft.key, draft.created_at = previous.key, previous.created_at
        draft.script = previous.script
        draft.timings = dict(previous.timings)
        draft.findings = previous.preflight
        draft.patches = tuple(PatchState.from_json(n, p) for n, p in previous.patches.items())
    else:
        when = ctx.now()
        draft.key = (launch_key(variant, host) if variant
                     else unresolved_launch_key(name, host))
        draft.created_at = when.isoformat()
        draft.run = ctx.runs.create(key=draft.key, variant=name, when=when)
        draft.timings = {"started_at": record.started_at}
    follow(target, host, layout, variant, record, opts, ctx, ui, draft)
    if variant is None and previous is not None:
        # keep the variant as the launch recorded it
        rec = ctx.runs.read(draft.run.path) if draft.run else None
        if rec is not None and draft.run is not None:
            ctx.runs.write(draft.run.path, replace(rec, variant=previous.variant))
    return draft.freeze()


def variant_json(variant: ResolvedVariant) -> JsonObject:
    """The variant as run.json keeps it: every value and where it came from."""
    return {**variant.to_dict(), "origins": dict(variant.origins)}


def _run_record(variant: JsonMapping, host: Host, draft: _Draft) -> RunRecord:
    outcome = draft.outcome
    verdict = RunVerdict(kind=outcome.verdict if outcome else "started")
    facts: JsonMapping = {}
    if outcome is not None:
        d = outcome.decision
        classifier = None
        if d is not None and d.result is not None:
            classifier = d.result.to_json()
        verdict = RunVerdict(
            kind=outcome.verdict,
            signature=d.signature if d else None,
            title=d.title if d else "",
            message=d.message if d else "",
            remediation=d.remediation if d else "",
            phase=d.phase if d else None,
            evidence=tuple(Evidence(n, t) for n, t in (d.evidence if d else [])),
            decisive_line=outcome.decisive_line,
            last_lines=tuple(outcome.last_lines[-15:]),
            lines=outcome.lines,
            health=outcome.health,
            classifier=classifier,
        )
        facts = outcome.facts
    stopped = None
    if draft.stopped is not None:
        from variantctl.launch.servers import stop_dict

        stopped = stop_dict(host.name, draft.stopped)
    assert draft.run is not None and draft.record is not None
    return RunRecord(
        run_id=draft.run.run_id,
        key=draft.key,
        variant_name=draft.variant,
        created_at=draft.created_at,
        variant=variant,
        host=host_identity(host),
        script=draft.script,
        server=draft.record.to_dict(),
        patches={p.name: p.to_json() for p in draft.patches},
        preflight=draft.findings,
        verdict=verdict,
        facts=facts,
        expect=draft.expect,
        expect_ok=not draft.expect,
        timings=dict(draft.timings),
        stopped=stopped,
        log_file="server.log" if outcome is not None else None,
    )
