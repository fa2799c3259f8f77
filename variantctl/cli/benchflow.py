"""The ``bench`` command's flow: for each VARIANT (or the --url) find the server, reach
it, measure, store; then print tables or JSON, export, and pick the exit code.

Kept out of ``cli/bench.py`` so that module stays the option list; the measuring
itself is :mod:`variantctl.bench.session`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from variantctl.bench.session import Measurement, RunOutcome
from variantctl.benchparams import BenchParams
from variantctl.env import Environment
from variantctl.exitcodes import ExitCode
from variantctl.project.loaded import Project


def run_bench(env: Environment, params: BenchParams, *, variants: Sequence[str],
              host: str | None, url: str | None, as_json: bool, export: Path | None,
              store: bool, profile: bool = False, profile_trace: Path | None = None) -> int:
    """Measure every target, print, export; the exit code."""
    from variantctl.cli.benchview import LiveView
    from variantctl.errors import VariantctlError

    project = Project(env)  # the one signature catalog and host list of this command
    started_at = env.now().isoformat()
    outcomes: list[RunOutcome] = []
    #: several variants: one that cannot be measured (not running, host down) is
    #: reported and the others still run; a single one fails the command as a whole
    errors: list[tuple[str, VariantctlError]] = []
    with LiveView(env) as view:
        if url is not None:
            outcomes.append(_bench_url(project, params, url, host, view, started_at))
        for variant in variants:
            try:
                outcome = _bench_variant(project, params, variant, host, view, started_at, store,
                                         profile=profile, trace=profile_trace,
                                         several=len(variants) > 1)
            except VariantctlError as exc:
                if len(variants) == 1:
                    raise
                errors.append((variant, exc))
                env.stderr.print(f"error: {exc.message}", markup=False, highlight=False,
                                 soft_wrap=True)
                if exc.hint:
                    env.stderr.print(f"hint: {exc.hint}", markup=False, highlight=False,
                                     soft_wrap=True)
                continue
            outcomes.append(outcome)
            if outcome.interrupted:
                break
        view.done()
    _print(env, outcomes, errors, as_json)
    if export is not None:
        _export(env, outcomes, export)
    codes = [o.exit_code for o in outcomes] + [e.exit_code for _, e in errors]
    if ExitCode.INTERRUPTED in codes:
        return ExitCode.INTERRUPTED
    return max(codes, default=0)


def _measurement(project: Project, params: BenchParams, label: str, base_url: str,
                 view: Any, **where: Any) -> Measurement:
    return Measurement(label=label, base_url=base_url, params=params,
                       on_progress=lambda p: view.progress(label, p), on_note=view.note,
                       clock=project.env.clock, signatures=project.signatures, **where)


def _bench_variant(project: Project, params: BenchParams, variant: str, host_name: str | None,
                   view: Any, started_at: str, store: bool, *, profile: bool = False,
                   trace: Path | None = None, several: bool = False) -> RunOutcome:
    from variantctl.bench.session import find_server, measure, reach, store_result
    from variantctl.errors import VariantctlError
    from variantctl.launch.launcher import launcher_for
    from variantctl.project.selection import select_hosts, variant_host
    from variantctl.targets.connect import open_target

    env = project.env
    default = variant_host(project, variant) or "local"
    (host,) = select_hosts(env, host_name, None, default=default)
    with open_target(host) as target:
        collector = None
        if profile:  # variantctl.bench.profile: the server with VARIANTCTL_PROFILE set
            from variantctl.bench.profile import Collector
            from variantctl.cli.profileflow import ensure_profiled_server

            record, where = ensure_profiled_server(project, target, host, variant, view.note)
            collector = Collector(target, where)
        else:
            record = find_server(target, host, variant)
        with reach(target, record.port, launcher_for(host).address(target, record)) as base_url:
            m = _measurement(project, params, variant, base_url, view, target=target, host=host,
                             record=record, profile=collector)
            outcome = asyncio.run(measure(m, started_at))
    if collector is not None:
        from variantctl.cli.profileflow import after_profiled_run

        outcome = after_profiled_run(env, collector, outcome, record, runs=project.runs,
                                     store=store,
                                     trace=trace, several=several)
    if store:
        try:
            stored = store_result(outcome, record, env.now(), runs=project.runs)
        except VariantctlError as exc:  # a full disk: the measured figures are still shown
            return replace(outcome, store_error=exc)
        if stored is not None:
            return replace(outcome, stored=stored)
        from variantctl.launch.servers import foreign_owner

        where = foreign_owner(record, env.runs_dir) or (
            f"its launch's run directory {record.run_dir} is not on this machine"
            if record.run_dir else "its record names no run directory")
        env.stderr.print(f"{variant}: result not stored: {where} (use --json or "
                         "--export-vllm to keep it)", markup=False, highlight=False)
    return outcome


def _bench_url(project: Project, params: BenchParams, url: str, host_name: str | None,
               view: Any, started_at: str) -> RunOutcome:
    from variantctl.bench.session import is_loopback_url, measure
    from variantctl.benchparams import parse_url
    from variantctl.project.selection import select_hosts
    from variantctl.targets.connect import open_target
    from variantctl.targets.local import LocalTarget

    base = parse_url(url)  # checked by the command already; the base URL
    if host_name is not None:
        (host,) = select_hosts(project.env, host_name, None)
        with open_target(host) as target:
            m = _measurement(project, params, url, base, view, target=target, host=host)
            return asyncio.run(measure(m, started_at))
    # a server on this machine: its GPUs are this machine's
    local = LocalTarget() if is_loopback_url(base) else None
    m = _measurement(project, params, url, base, view, target=local)
    return asyncio.run(measure(m, started_at))


def _print(env: Environment, outcomes: Sequence[RunOutcome],
           errors: Sequence[tuple[str, Any]], as_json: bool) -> None:
    """One target: its ``variantctl.bench/1`` object; several: ``{"results": [...],
    "errors": [{"variant", "error"}]}`` (the README's --json convention)."""
    from variantctl.bench.uncertainty import levels_json
    from variantctl.cli.output import emit, print_json
    from variantctl.render.bench import death_blocks, result_blocks

    if as_json:
        docs = []
        for o in outcomes:
            doc = o.result.to_json()
            doc["intervals"] = levels_json(o.result.levels, o.result.params.until_ci)
            doc["stored"] = None if o.stored is None else str(o.stored)
            if o.store_error is not None:
                doc["store_error"] = o.store_error.to_json()
            doc["server_death"] = None if o.death is None else o.death.to_json()
            if o.profile is not None:
                doc["profile"] = o.profile
            docs.append(doc)
        if len(docs) == 1 and not errors:
            print_json(env, docs[0])
        else:
            print_json(env, {"results": docs, "errors": [
                {"variant": name, "error": exc.to_json()} for name, exc in errors]})
    elif outcomes:
        emit(env, result_blocks([(o.label, o.result) for o in outcomes]))
        from variantctl.cli.profileflow import print_profiles

        print_profiles(env, outcomes)
        for o in outcomes:
            if o.stored is not None:
                env.stderr.print(f"{o.label}: stored {o.stored}", markup=False,
                                 highlight=False, soft_wrap=True)
    for o in outcomes:
        if o.death is not None:
            emit(env, death_blocks(o.death))
        for lv in o.failed_levels:
            env.stderr.print(
                f"error: {o.label}: every request of the level at concurrency "
                f"{lv.concurrency} failed ({', '.join(lv.errors) or 'no reason'})",
                markup=False, highlight=False)
        if o.interrupted:
            env.stderr.print(f"{o.label}: interrupted; partial results kept", markup=False,
                             highlight=False)
        if o.store_error is not None:  # after the figures, which are the user's to keep
            env.stderr.print(f"error: {o.label}: result not stored: {o.store_error.message}",
                             markup=False, highlight=False, soft_wrap=True)


def _export(env: Environment, outcomes: Sequence[RunOutcome], base: Path) -> None:
    """``--export-vllm FILE``: vLLM's result JSON; one level = FILE, a ladder = one file per
    level (``FILE-c<C>``), several variants = ``FILE-<variant>[-c<C>]``."""
    from variantctl.bench.export import export_paths, vllm_result
    from variantctl.errors import VariantctlError
    from variantctl.runs.store import write_local_atomic

    several = len(outcomes) > 1
    for o in outcomes:
        levels = o.result.levels
        own = base.with_name(f"{base.stem}-{o.label}{base.suffix or '.json'}") if several else base
        for path, level in zip(export_paths(own, levels), levels, strict=True):
            data = vllm_result(level, o.result.params, model=o.result.target.model or "")
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_local_atomic(path, text.encode())
            except OSError as exc:
                raise VariantctlError(f"--export-vllm {path}: {exc.strerror or exc}",
                                      exit_code=ExitCode.FAILED) from None
            env.stderr.print(f"exported {path}", markup=False, highlight=False,
                             soft_wrap=True)
