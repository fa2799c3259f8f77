"""``bench --profile``'s part that needs the project: the relaunch of a server with
profiling on (it loads the variant catalog), and what follows a profiled ladder (the
breakdowns, the raw events into the run, the Chrome trace); and ``check``'s warning
for a profile patchset whose points the host's vLLM lacks.

The collecting itself is :mod:`variantctl.bench.profile`; finding the server and
recording are :mod:`variantctl.bench.step`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.hostmodel import Host
from variantctl.project.loaded import Project
from variantctl.runs.record import ServerRecord
from variantctl.targets.base import Target

if TYPE_CHECKING:
    from variantctl.bench.profile import Collector
    from variantctl.bench.session import RunOutcome
    from variantctl.bench.step import Into
    from variantctl.env import Environment
    from variantctl.targets.profilepoints import Missing
    from variantctl.variants.model import ResolvedVariant
    from variantctl.variants.rules import Finding


def relaunch_profiled(project: Project, target: Target, host: Host, variant: str,
                      note: Callable[[str], None]) -> tuple[ServerRecord, str]:
    """Launch ``variant`` again on ``host`` with VARIANTCTL_PROFILE set to its profile
    directory (replacing its running server): its record and that directory."""
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
        message = result.run_verdict.title
        raise VariantctlError(
            f"{variant}: the relaunch with profiling on ended {result.verdict}"
            + (f": {message}" if message else ""),
            hint=f"variantctl runs show {result.run_id}" if result.run_id else None,
            exit_code=ExitCode.FAILED)
    note(f"{variant}: relaunched with {ENV}={directory} ({result.record.ident})")
    return result.record, directory


def after_profiled_run(collector: Collector, outcome: RunOutcome, into: Into | None, *,
                       trace: Path | None, several: bool,
                       note: Callable[[str], None]) -> RunOutcome:
    """The outcome with its breakdowns; raw events into the run (``into``: None, not
    recorded); the trace file. What was done is said through ``note``."""
    from variantctl.bench import profile
    from variantctl.bench.profile import empty_hint
    from variantctl.bench.step import record_profile

    outcome = replace(outcome, profile=tuple(profile.summaries(collector)))
    if not any(lv.events for lv in collector.levels):
        note("warning: " + empty_hint(outcome.label, collector.directory))
    if into is not None:
        path = record_profile(into, collector, outcome.label)
        note(f"{outcome.label}: profile events stored {path}")
    if trace is not None:
        own = trace.with_name(f"{trace.stem}-{outcome.label}{trace.suffix or '.json'}") \
            if several else trace
        profile.write_trace(collector, own)
        note(f"{outcome.label}: Chrome trace written {own}")
    return outcome


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
