"""``bench --profile`` in the CLI: keep the events, export the trace, print the breakdown.

The collecting is :mod:`variantctl.bench.profile`; this module finds (or relaunches)
the profiled server — it loads the variant catalog, which only the CLI layer does —
and decides what is said where (stderr notes, tables on stdout), so
``cli/benchflow.py`` needs a few calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.env import Environment
from variantctl.hostmodel import Host
from variantctl.project.loaded import Project
from variantctl.runs.record import ServerRecord
from variantctl.targets.base import Target

if TYPE_CHECKING:
    from variantctl.bench.profile import Collector
    from variantctl.bench.session import RunOutcome
    from variantctl.targets.profilepoints import Missing
    from variantctl.variants.model import ResolvedVariant
    from variantctl.variants.rules import Finding


def _say(env: Environment, line: str) -> None:
    env.stderr.print(line, markup=False, highlight=False, soft_wrap=True)


def ensure_profiled_server(project: Project, target: Target, host: Host, variant: str,
                           note: Callable[[str], None]) -> tuple[ServerRecord, str]:
    """The running server of ``variant`` with profiling on (relaunching it if needed)."""
    from variantctl.bench.profile import ENV, server_profile_dir
    from variantctl.bench.session import find_server
    from variantctl.errors import TargetError, VariantctlError
    from variantctl.exitcodes import ExitCode

    try:
        record = find_server(target, host, variant)
    except TargetError:
        raise  # the host itself is the problem: a launch would not fare better
    except VariantctlError as exc:  # not running, still starting, not answering
        if exc.exit_code == ExitCode.CONFLICT:
            raise  # another process serves its port: a relaunch would not get it back
        note(f"{variant}: {exc.message}; launching it with profiling on")
        return _relaunch(project, target, host, variant, note)
    directory = server_profile_dir(target, record)
    if directory:
        return record, directory
    note(f"{variant}: its server ({record.ident}) runs without {ENV}; relaunching it "
         "with profiling on")
    return _relaunch(project, target, host, variant, note)


def _relaunch(project: Project, target: Target, host: Host, variant: str,
              note: Callable[[str], None]) -> tuple[ServerRecord, str]:
    from variantctl.bench.profile import ENV, profile_dir
    from variantctl.errors import VariantctlError
    from variantctl.exitcodes import ExitCode
    from variantctl.launch.core import LaunchOptions, QuietUI, launch_variant
    from variantctl.project.context import prepare

    resolved, _, ctx = prepare(project, variant, host=host.name)
    directory = profile_dir(target, host, variant)
    profiled = resolved.with_args({}, env={ENV: directory}, origin="bench --profile")

    class _UI(QuietUI):
        def note(self, text: str) -> None:
            note(text)

    result = launch_variant(target, host, profiled,
                            LaunchOptions(replace=True, keep=True, wait=True), ctx, _UI())
    if result.verdict != "ready" or result.record is None:
        decision = result.outcome.decision if result.outcome is not None else None
        message = decision.title if decision is not None else ""
        raise VariantctlError(
            f"{variant}: the relaunch with profiling on ended {result.verdict}"
            + (f": {message}" if message else ""),
            hint=f"variantctl runs show {result.run_id}" if result.run_id else None,
            exit_code=ExitCode.FAILED)
    note(f"{variant}: relaunched with {ENV}={directory} ({result.record.ident})")
    return result.record, directory


def after_profiled_run(env: Environment, collector: Collector, outcome: RunOutcome,
                       record: ServerRecord, *,
                       store: bool, trace: Path | None, several: bool) -> RunOutcome:
    """The outcome with its breakdowns; raw events into the run record; the trace file."""
    from variantctl.bench import profile
    from variantctl.bench.profile import empty_hint

    outcome = replace(outcome, profile=tuple(profile.summaries(collector)))
    if not any(lv.events for lv in collector.levels):
        _say(env, "warning: " + empty_hint(outcome.label, collector.directory))
    if store:
        path = profile.store(collector, record, outcome.label, env.now(),
                                 runs_root=env.runs_dir)
        if path is not None:
            _say(env, f"{outcome.label}: profile events stored {path}")
    if trace is not None:
        own = trace.with_name(f"{trace.stem}-{outcome.label}{trace.suffix or '.json'}") \
            if several else trace
        profile.write_trace(collector, own)
        _say(env, f"{outcome.label}: Chrome trace written {own}")
    return outcome


def print_profiles(env: Environment, outcomes: Sequence[RunOutcome]) -> None:
    """The breakdown tables of every profiled outcome."""
    from variantctl.render.profile import breakdown_tables

    for o in outcomes:
        if o.profile:
            for table in breakdown_tables(o.label, o.profile):
                env.stdout.print(table)


def profile_point_findings(env: Environment, target: Target, host: Host,
                           variants: Sequence[ResolvedVariant]) -> list[Finding]:
    """``check``: a warning per variant (all on ``host``, read through ``target``) whose
    ``requires`` names a profile patchset with points the host's vLLM lacks."""
    from variantctl.config.patchsets import load_patchset
    from variantctl.errors import VariantctlError
    from variantctl.targets.profilepoints import missing_points
    from variantctl.variants.rules import Finding

    out: list[Finding] = []
    seen: dict[str, list[Missing]] = {}  # one read of the host per patchset, not per variant
    for v in variants:
        for name in v.requires:
            if name not in seen:
                try:
                    patchset = load_patchset(env.patchsets_dir, name)
                except VariantctlError:
                    seen[name] = []  # the unknown-patchset rule reports it
                    continue
                seen[name] = missing_points(target, host, patchset)
            for m in seen[name]:
                what = ", ".join(m.points) if m.points else f"module {m.module}"
                where = f" in {m.root}" if m.root else ""
                out.append(Finding(
                    "warning", "profile-points-missing", v.name, None,
                    f"requires {name}, but host {host.name}'s vLLM lacks the profile "
                    f"point(s) {what}{where} ({m.reason}); apply would refuse it as "
                    "drifted: use the profile patchset of this vLLM layout"))
    return out
