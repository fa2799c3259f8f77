"""The one way a sweep's points become a plan, for ``sweep`` (a sweep file) and
``bisect`` (each round a sweep built from two runs): the project's hosts checked, the
patchsets' fingerprints, the run history, and with ``--resume`` the points an earlier
run finished marked done (reads YAML and the run store; connects nowhere)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from variantctl.project.loaded import Project
from variantctl.runs.sweepstate import SweepDoc
from variantctl.sweeps.model import SweepSpec
from variantctl.sweeps.plan import Plan
from variantctl.variants.model import ResolvedVariant


def plan_points(project: Project, spec: SweepSpec, bases: Mapping[str, ResolvedVariant], *,
                on_hosts: Sequence[str], include_predicted: bool,
                previous: SweepDoc | None, resume: bool) -> Plan:
    """The plan of ``spec`` over ``bases`` on ``on_hosts`` (empty: each base's own host;
    an unknown host is one error naming it, before anything runs); ``previous`` (the
    sweep's last state) gives past benchmark times, and with ``resume`` the finished
    points."""
    from variantctl.config.hosts import get_host
    from variantctl.runs.run import RunFileError
    from variantctl.sweeps.history import History
    from variantctl.sweeps.plan import make_plan
    from variantctl.sweeps.state import kept_on_resume

    known = project.hosts
    for n in on_hosts or tuple(b.host for b in bases.values()):
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
                     on_hosts=on_hosts, known_patchsets=known_patchsets,
                     patchset_fingerprints=fingerprints,
                     history=History.from_records(records), bench_seconds=bench_seconds,
                     include_predicted=include_predicted,
                     done={k: f"{e.status}, run {e.run_id}"
                           for k, e in kept_on_resume(previous if resume else None).items()})
