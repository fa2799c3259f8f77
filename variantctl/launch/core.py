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

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from variantctl.config.hosts import Host, get_host
from variantctl.env import Environment
from variantctl.errors import NotFoundError, TargetError, VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.launch.archive import new_run_dir, read_run_json, write_file_atomic, write_run_json
from variantctl.launch.classify import ClassifierAdapter
from variantctl.launch.servers import (
    StopOutcome,
    layout_for,
    list_records,
    load_record,
    remove_record,
    save_record,
    statuses,
    stop_server,
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
from variantctl.runs.record import HostLayout, RunRecord, ServerRecord, stamp_of
from variantctl.targets.base import Target
from variantctl.targets.process import is_alive, port_in_use, spawn_detached
from variantctl.variants.model import ResolvedVariant
from variantctl.variants.modelinfo import ModelInfo


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
    host: str | None = None
    port: int | None = None
    apply_patches: bool = False
    force: bool = False
    replace: bool = False
    wait: bool = True
    timeout: float | None = None
    stall: float | None = None
    keep: bool = False
    grace: float = 10.0


@dataclass(frozen=True)
class ExpectCheck:
    fact: str
    expected: Any
    actual: Any
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {"fact": self.fact, "expected": self.expected, "actual": self.actual, "ok": self.ok}


@dataclass
class LaunchResult:
    variant: str
    host: str
    record: ServerRecord | None = None
    run_dir: Path | None = None
    outcome: WatchOutcome | None = None
    expect: list[ExpectCheck] = field(default_factory=list)
    stopped: StopOutcome | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    patches: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return self.outcome.verdict if self.outcome else "started"

    @property
    def expect_ok(self) -> bool:
        return all(e.ok for e in self.expect)

    @property
    def exit_code(self) -> int:
        verdict = self.verdict
        if verdict in ("started", READY):
            return ExitCode.OK if self.expect_ok else ExitCode.FAILED
        return {HANG: ExitCode.HANG, TIMEOUT: ExitCode.TIMEOUT}.get(verdict, ExitCode.FAILED)


# -- checks ------------------------------------------------------------------------


def fact_value(facts: dict[str, Any], name: str) -> Any:
    """A fact by name: a top-level fact, else a key of the effective configuration."""
    if name in facts and name != "config":
        return facts[name]
    config = facts.get("config") or {}
    return config.get(name)


def _same(expected: Any, actual: Any) -> bool:
    if actual is None:
        return expected is None
    if isinstance(expected, bool) or isinstance(actual, bool):
        return str(expected).lower() == str(actual).lower()
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    return str(expected) == str(actual)


def check_expect(expect: dict[str, Any], facts: dict[str, Any]) -> list[ExpectCheck]:
    """Compare the variant's ``expect`` with the facts the log reported."""
    out = []
    for name, expected in expect.items():
        actual = fact_value(facts, name)
        out.append(ExpectCheck(name, expected, actual, _same(expected, actual)))
    return out


def preflight(env: Environment, variant: ResolvedVariant, hosts: Any,
              model: ModelInfo | None = None) -> list[Any]:
    """The pre-flight rules for one variant, with its model's facts when they were read."""
    from variantctl.config.patchsets import patchset_names
    from variantctl.variants.check import check

    known = patchset_names(env.patchsets_dir) if env.patchsets_dir.is_dir() else []
    return check([variant], known, hosts, models={variant.name: model} if model else None)


def ensure_patches(
    env: Environment, target: Target, host: Host, names: tuple[str, ...], *, apply: bool,
    ui: LaunchUI,
) -> dict[str, Any]:
    """State (per root, with sha256 per file) of each required patchset; applies
    missing ones when ``apply``; refuses the launch otherwise."""
    if not names:
        return {}
    from variantctl.config.patchsets import load_patchset
    from variantctl.patching.states import APPLIED
    from variantctl.targets.patchrun import execute_apply, execute_status, roots_state
    from variantctl.targets.roots import resolve_roots

    out: dict[str, Any] = {}
    for name in names:
        patchset = load_patchset(env.patchsets_dir, name)
        roots = resolve_roots(target, host, patchset.modules)
        report = execute_status(target, roots, patchset)
        states = roots_state(report)
        if set(states.values()) != {APPLIED}:
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
            applied = execute_apply(target, roots, patchset, now=env.now())
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
        out[name] = {
            "roots": states,
            "files": [{"root": f.root, "path": f.path, "state": f.state,
                       "sha256": f.sha256_before} for f in report.files],
        }
    return out


def _clear_the_way(
    target: Target, host: Host, layout: HostLayout, variant: ResolvedVariant, *, replace: bool,
    grace: float, ui: LaunchUI,
) -> None:
    existing = load_record(target, layout, variant.name)
    if existing is not None:
        (st,) = statuses(target, [existing], probe=False)
        # a record is only stale when its leader is gone too (checked on its own, so a
        # short read of the process table can never orphan a running server)
        if not st.alive and not is_alive(target, existing.pid):
            remove_record(target, layout, existing)
            ui.note(f"removed a stale pid file of {variant.name} on {host.name} "
                    f"(pid {existing.pid} is gone)")
        elif replace:
            ui.note(f"stopping the running {variant.name} on {host.name} (pid {existing.pid})")
            _stop_or_fail(target, host, layout, existing, grace)
        else:
            raise VariantctlError(
                f"{variant.name} is already running on host {host.name} "
                f"(pid {existing.pid}, port {existing.port})",
                hint="variantctl stop " + variant.name + " first, or launch with --replace",
                exit_code=ExitCode.FAILED,
            )
    if not port_in_use(target, variant.port):
        return
    if replace:
        holders = [r for r in list_records(target, layout) if r.port == variant.port]
        for st in statuses(target, holders, probe=False):
            if st.alive:
                ui.note(f"stopping {st.record.variant} on {host.name}: it holds port "
                        f"{variant.port}")
                _stop_or_fail(target, host, layout, st.record, grace)
        if not port_in_use(target, variant.port):
            return
    raise VariantctlError(
        f"port {variant.port} is already in use on host {host.name}",
        hint="stop what listens there (variantctl ps shows variantctl's servers; --replace "
        "stops them), or pick another port with --port",
        exit_code=ExitCode.FAILED,
    )


def _stop_or_fail(target: Target, host: Host, layout: HostLayout, record: ServerRecord,
                  grace: float) -> None:
    outcome = stop_server(target, layout, record, grace=grace, python=host.python)
    if not outcome.ok:
        raise VariantctlError(
            f"could not stop {record.variant} (pid {record.pid}): "
            f"still running {list(outcome.result.remaining)}, port free: {outcome.port_free}",
            exit_code=ExitCode.FAILED,
        )


# -- launch / watch ----------------------------------------------------------------


def resolve_launch(env: Environment, name: str, opts: LaunchOptions) -> tuple[Any, Host, Any]:
    """(variant, host, catalog) for a launch."""
    from variantctl.config.variants import load_catalog
    from variantctl.variants.resolve import resolve

    catalog = load_catalog(env.variants_dir)
    variant = resolve(catalog, name, host=opts.host, port=opts.port)
    host = get_host(catalog.hosts, variant.host)
    return variant, host, catalog


def launch(env: Environment, name: str, opts: LaunchOptions, ui: LaunchUI | None = None
           ) -> LaunchResult:
    """Start variant ``name`` and (unless ``opts.wait`` is False) watch it to a verdict."""
    from variantctl.targets.connect import open_target
    from variantctl.targets.modelfacts import read_model_info
    from variantctl.variants.check import has_errors
    from variantctl.variants.render import render_script

    ui = ui or QuietUI()
    variant, host, catalog = resolve_launch(env, name, opts)
    result = LaunchResult(variant.name, host.name)
    script = render_script(variant, host)
    with open_target(host) as target:
        # the model's config.json as the host sees it (pre-flight needs its head count
        # and length limit); nothing has been started yet when pre-flight refuses
        findings = preflight(env, variant, catalog.hosts, read_model_info(target, variant.model))
        result.findings = [f.to_dict() for f in findings]
        for f in findings:
            ui.note(f"pre-flight {f.severity}: {f.message}"
                    + (f" (would fail as {f.signature})" if f.signature else ""))
        if has_errors(findings) and not opts.force:
            raise VariantctlError(
                f"pre-flight check of {variant.name} found errors; not launching",
                hint="fix the variant, or launch with --force to try anyway",
                exit_code=ExitCode.FAILED,
            )
        result.patches = ensure_patches(env, target, host, variant.requires,
                                        apply=opts.apply_patches, ui=ui)
        layout = layout_for(target, host)
        _clear_the_way(target, host, layout, variant, replace=opts.replace, grace=opts.grace,
                       ui=ui)
        # built before the start, so a broken signature catalog cannot orphan a server
        classifier = (make_classifier(env, variant, opts) if opts.wait else None)
        started_clock = env.clock()
        record, run_dir = start(env, target, host, layout, variant, script, result)
        result.record, result.run_dir = record, run_dir
        ui.note(f"started {variant.name} on {host.name}: pid {record.pid}, port {record.port}, "
                f"log {record.log}")
        if classifier is None:
            return result
        try:
            follow(env, target, host, layout, variant, record, run_dir, opts, ui, result,
                   started=started_clock, classifier=classifier)
        except TargetError as exc:
            if exc.kind == "unreachable":
                raise  # the host is gone: the server keeps running there; watch re-attaches
            _stop_after_error(target, host, layout, record, opts, ui)
            raise
        except BaseException:  # interrupted or a bug: leave no orphan server behind
            _stop_after_error(target, host, layout, record, opts, ui)
            raise
    return result


def _stop_after_error(target: Target, host: Host, layout: HostLayout, record: ServerRecord,
                      opts: LaunchOptions, ui: LaunchUI) -> None:
    if opts.keep:
        return
    try:
        stop_server(target, layout, record, grace=opts.grace, python=host.python)
        ui.note(f"stopped {record.variant} (pid {record.pid}) after the error")
    except Exception as exc:  # the original error matters more
        ui.note(f"could not stop {record.variant} (pid {record.pid}): {exc}")


def make_classifier(env: Environment, variant: ResolvedVariant | None,
                    opts: LaunchOptions) -> ClassifierAdapter:
    stall = opts.stall or (variant.startup.stall if variant else 180.0)
    return ClassifierAdapter.create(stall_seconds=stall, clock=env.clock)


def start(
    env: Environment, target: Target, host: Host, layout: HostLayout, variant: ResolvedVariant,
    script: str, result: LaunchResult,
) -> tuple[ServerRecord, Path]:
    """Upload the script, start it detached, record it; open the local run directory."""
    when = env.now()
    stamp = stamp_of(when)
    for d in (layout.logs, layout.run, layout.scripts):
        target.makedirs(d)
    script_path = layout.script(variant.name, stamp)
    log_path = layout.log(variant.name, stamp)
    target.write_atomic(script_path, script.encode())
    run_dir = new_run_dir(env.runs_dir, variant.name, when)
    write_file_atomic(run_dir / "launch.sh", script.encode())
    pid = spawn_detached(target, script_path, log_path=log_path,
                         pid_path=layout.pid_file(variant.name))
    record = ServerRecord(variant=variant.name, host=host.name, pid=pid, port=variant.port,
                          log=log_path, script=script_path,
                          pid_file=layout.pid_file(variant.name),
                          started_at=when.isoformat(), run_dir=str(run_dir))
    save_record(target, layout, record)
    write_run_json(run_dir, _run_record(variant, host, script, record, result, env,
                                        timings={"started_at": record.started_at}).to_dict())
    return record, run_dir


def follow(
    env: Environment, target: Target, host: Host, layout: HostLayout,
    variant: ResolvedVariant | None, record: ServerRecord, run_dir: Path, opts: LaunchOptions,
    ui: LaunchUI, result: LaunchResult, *, started: float | None = None,
    classifier: ClassifierAdapter | None = None,
) -> LaunchResult:
    """Watch a started server to its verdict, stop it if it failed, archive."""
    timeout = opts.timeout or (variant.startup.ready_timeout if variant else 600.0)
    classifier = classifier or make_classifier(env, variant, opts)
    t_watch = time.time()
    outcome = watch(target, record, classifier, timeout=timeout, clock=env.clock,
                    on_progress=ui.progress, started=started)
    verdict_wall = time.time()
    result.outcome = outcome
    if outcome.verdict == READY and variant is not None:
        result.expect = check_expect(dict(variant.expect), outcome.facts)
    ui.decided(result)
    printed_wall = time.time()
    if outcome.verdict in (FAILED, HANG, TIMEOUT, EXITED) and not opts.keep:
        result.stopped = stop_server(target, layout, record, grace=opts.grace,
                                     python=host.python)
    try:
        log = target.read_bytes(record.log)
        write_file_atomic(run_dir / "server.log", log)
    except TargetError as exc:
        result.notes.append(f"could not copy the log: {exc.message}")
    previous = read_run_json(run_dir) or {}
    timings = dict(previous.get("timings") or {"started_at": record.started_at})
    timings.update({
        "watch_started_at": t_watch,
        "verdict_at": verdict_wall,
        "verdict_printed_at": printed_wall,
        "seconds_to_verdict": round(outcome.time_to_verdict, 3),
        "time_to_ready_s": round(outcome.time_to_verdict, 3) if outcome.verdict == READY
        else None,
        "reconnects": outcome.reconnects,
    })
    script = previous.get("script") or ""
    write_run_json(run_dir, _run_record(variant, host, script, record, result, env,
                                        timings=timings, previous=previous).to_dict())
    return result


def watch_existing(env: Environment, name: str, host_name: str | None, opts: LaunchOptions,
                   ui: LaunchUI | None = None) -> LaunchResult:
    """``variantctl watch``: attach to a server started earlier (e.g. with --no-wait)."""
    from variantctl.launch.selection import all_hosts, variant_host
    from variantctl.targets.connect import open_target

    ui = ui or QuietUI()
    variant = None
    try:
        variant, _, _ = resolve_launch(env, name, LaunchOptions(host=host_name))
    except VariantctlError:
        variant = None
    hosts = all_hosts(env)
    host = get_host(hosts, host_name or (variant.host if variant else None)
                    or variant_host(env, name) or "local")
    with open_target(host) as target:
        layout = layout_for(target, host)
        record = load_record(target, layout, name)
        if record is None:
            raise NotFoundError(f"{name} is not running on host {host.name}",
                                hint="variantctl ps lists running variants; "
                                "variantctl launch starts one")
        result = LaunchResult(name, host.name, record=record)
        run_dir = Path(record.run_dir) if record.run_dir else new_run_dir(env.runs_dir, name,
                                                                          env.now())
        run_dir.mkdir(parents=True, exist_ok=True)
        result.run_dir = run_dir
        previous = read_run_json(run_dir) or {}
        result.patches = dict(previous.get("patches") or {})
        result.findings = list(previous.get("preflight") or [])
        follow(env, target, host, layout, variant, record, run_dir, opts, ui, result)
    return result


def _run_record(
    variant: ResolvedVariant | None, host: Host, script: str, record: ServerRecord,
    result: LaunchResult, env: Environment, *, timings: dict[str, Any],
    previous: dict[str, Any] | None = None,
) -> RunRecord:
    outcome = result.outcome
    verdict: dict[str, Any] = {"verdict": result.verdict}
    facts: dict[str, Any] = {}
    if outcome is not None:
        d = outcome.decision
        verdict.update({
            "signature": d.signature if d else None,
            "title": d.title if d else "",
            "message": d.message if d else "",
            "remediation": d.remediation if d else "",
            "phase": d.phase if d else None,
            "evidence": [{"line": n, "text": t} for n, t in (d.evidence if d else [])],
            "decisive_line": outcome.decisive_line,
            "last_lines": outcome.last_lines[-15:],
            "lines": outcome.lines,
            "health": outcome.health,
            "exit_code": int(result.exit_code),
        })
        if d is not None and d.result is not None and hasattr(d.result, "to_json"):
            verdict["classifier"] = d.result.to_json()
        facts = outcome.facts
    stopped = None
    if result.stopped is not None:
        from variantctl.launch.report import stop_dict

        stopped = stop_dict(host.name, result.stopped)
    prev_variant = (previous or {}).get("variant") or {}
    return RunRecord(
        run_id=Path(record.run_dir).name if record.run_dir else record.started_at,
        variant=variant.to_dict() if variant is not None else prev_variant,
        host={"name": host.name, "ssh": host.ssh.display if host.ssh else None,
              "python": host.python, "workdir": host.workdir, "origin": host.origin},
        script=script,
        server=record.to_dict(),
        patches=result.patches,
        preflight=result.findings,
        verdict=verdict,
        facts=facts,
        expect={"ok": result.expect_ok, "checks": [e.to_json() for e in result.expect]},
        timings=timings,
        stopped=stopped,
        log_file="server.log" if outcome is not None else None,
    )
