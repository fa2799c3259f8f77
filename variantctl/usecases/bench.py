"""``bench``: for each VARIANT (or the --url) find the server, reach it, measure and
record it (:func:`variantctl.bench.step.measure_and_record`); the outcomes and the
per-variant errors as one :class:`BenchReport`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from variantctl.bench.session import RunOutcome
from variantctl.benchparams import BenchParams
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.project.loaded import Project

if TYPE_CHECKING:
    from variantctl.bench.runner import LiveProgress


@dataclass(frozen=True)
class BenchRequest:
    """``bench``'s options: what to measure, how, and what to record."""

    params: BenchParams
    variants: tuple[str, ...] = ()
    host: str | None = None
    url: str | None = None
    store: bool = True
    profile: bool = False
    profile_trace: Path | None = None


@dataclass(frozen=True)
class BenchReport:
    """Every target's outcome, and the variants that could not be measured (several
    variants: one that fails is reported and the others still run)."""

    outcomes: tuple[RunOutcome, ...]
    errors: tuple[tuple[str, VariantctlError], ...] = ()

    @property
    def exit_code(self) -> int:
        codes = [o.exit_code for o in self.outcomes] + [e.exit_code for _, e in self.errors]
        if ExitCode.INTERRUPTED in codes:
            return ExitCode.INTERRUPTED
        return max(codes, default=0)


class BenchUI(Protocol):
    """What the caller shows while it runs (the CLI's live view)."""

    def progress(self, label: str, p: LiveProgress) -> None: ...

    def note(self, text: str) -> None: ...

    def say(self, text: str) -> None:
        """A line on its own, outside the live view (what was stored, written)."""

    def error(self, variant: str, exc: VariantctlError) -> None: ...


def check_prompt(prompt: str) -> None:
    """``--prompt``: a dataset that loads, a file that exists, or a built-in set; an
    error naming it otherwise (before any server is reached)."""
    from variantctl.bench import datasets

    spec = datasets.parse_spec(prompt)
    if spec is not None:
        datasets.load(spec)
    elif prompt not in ("short", "tools", "random") and not Path(prompt).is_file():
        raise VariantctlError(f"--prompt {prompt!r}: not short, tools, random, a file or "
                              "sharegpt:|jsonl:|trace:FILE",
                              hint="a FILE holds one prompt per line or a JSON list")


def bench_request(
    variants: tuple[str, ...], host: str | None, url: str | None, *, endpoint: str,
    model: str | None, concurrency: str | None, requests: int | None, duration: float | None,
    prompt: str, prefix_len: int | None, prefixes: int, turns: int, input_len: int | None,
    output_len: int | None, trace_speed: float, ignore_eos: bool, temperature: float,
    seed: int, request_rate: str, ramp_up: str | None, ramp_start: float | None,
    ramp_end: float | None, burstiness: float, search: str | None, slo: str | None,
    slo_percentile: float, max_level: float, warmup: str, goodput: str | None, repeat: int,
    until_ci: float | None, max_repeat: int | None, request_timeout: float, no_store: bool,
    profile: bool, profile_trace: Path | None,
) -> BenchRequest:
    """``bench``'s options (as the CLI parsed them) checked together and made one request.

    Every refusal is raised here, before any server is reached (exit 2).
    """
    from variantctl.benchparams import (
        RATE_CAP_DEFAULT,
        parse_concurrency,
        parse_goodput,
        parse_rates,
        parse_url,
    )

    if bool(variants) == bool(url):
        raise VariantctlError("give a VARIANT (or several) or --url, not both",
                              hint="variantctl ps lists running variants")
    if url is not None:
        parse_url(url)  # before anything runs: exit 2 naming --url, never its password
    if (profile or profile_trace) and url:
        raise VariantctlError("--profile needs a VARIANT (its server's environment is set "
                              "at launch), not --url")
    if profile_trace and not profile:
        raise VariantctlError("--profile-trace needs --profile")
    if max_repeat is not None and until_ci is None:
        raise VariantctlError("--max-repeat needs --until-ci (--repeat N runs exactly N)")
    check_prompt(prompt)  # bad input is refused before any server is reached
    rate, ladder = parse_rates(request_rate)
    if search == "concurrency" and concurrency is not None:
        raise VariantctlError("--search concurrency chooses the concurrency: no --concurrency",
                              exit_code=ExitCode.USAGE)
    if concurrency is None:  # under a rate, the concurrency is only a cap
        capped = ladder or ramp_up or search == "rate"
        concurrency = str(requests or RATE_CAP_DEFAULT) if capped else "1"
    params = BenchParams(
        endpoint=endpoint, model=model, prompt=prompt, input_len=input_len,
        output_len=output_len or 128, output_len_set=output_len is not None,
        trace_speed=trace_speed, ignore_eos=ignore_eos, temperature=temperature, seed=seed,
        request_rate=rate, rate_ladder=ladder, ramp_up=ramp_up, ramp_start=ramp_start,
        ramp_end=ramp_end, burstiness=burstiness, requests=requests,
        duration=duration, warmup=warmup, goodput=parse_goodput(goodput) if goodput else {},
        concurrency=parse_concurrency(concurrency), repeat=repeat, timeout_s=request_timeout,
        prefix_len=prefix_len, prefixes=prefixes, turns=turns,
        search=search, slo=parse_goodput(slo, "--slo") if slo else {},
        slo_percentile=slo_percentile, max_level=max_level,
        until_ci=until_ci, max_repeat=10 if max_repeat is None else max_repeat,
    )
    return BenchRequest(params, variants=variants, host=host, url=url, store=not no_store,
                        profile=profile, profile_trace=profile_trace)


def run_bench(project: Project, req: BenchRequest, ui: BenchUI) -> BenchReport:
    """Measure every target one after another; a single variant's error is raised."""
    started_at = project.env.now().isoformat()
    outcomes: list[RunOutcome] = []
    errors: list[tuple[str, VariantctlError]] = []
    if req.url is not None:
        outcomes.append(_bench_url(project, req, req.url, ui, started_at))
    for variant in req.variants:
        try:
            outcome = _bench_variant(project, req, variant, ui, started_at)
        except VariantctlError as exc:
            if len(req.variants) == 1:
                raise
            errors.append((variant, exc))
            ui.error(variant, exc)
            continue
        outcomes.append(outcome)
        if outcome.interrupted:
            break
    return BenchReport(tuple(outcomes), tuple(errors))


def _progress(ui: BenchUI, label: str) -> Callable[[LiveProgress], None]:
    return lambda p: ui.progress(label, p)


def _bench_variant(project: Project, req: BenchRequest, variant: str, ui: BenchUI,
                   started_at: str) -> RunOutcome:
    from variantctl.bench.step import Into, find, measure_and_record, own_run_dir
    from variantctl.project.selection import select_hosts, variant_host
    from variantctl.targets.connect import open_target
    from variantctl.usecases.profiled import after_profiled_run, relaunch_profiled

    env = project.env
    default = variant_host(project, variant) or "local"
    (host,) = select_hosts(env, req.host, None, default=default)
    with open_target(host) as target:
        server = find(target, host, variant, profile=req.profile, note=ui.note,
                      relaunch=lambda: relaunch_profiled(project, target, host, variant,
                                                         ui.note))
        run_dir = own_run_dir(server.record, env.runs_dir) if req.store else None
        into = Into(project.runs, run_dir, env.now) if run_dir is not None else None
        outcome = measure_and_record(server, variant, req.params, started_at, into=into,
                                     signatures=project.signatures,
                                     on_progress=_progress(ui, variant), on_note=ui.note,
                                     clock=env.clock)
    if server.profile is not None:
        outcome = after_profiled_run(server.profile, outcome, into, trace=req.profile_trace,
                                     several=len(req.variants) > 1, note=ui.say)
    if req.store and into is None:
        from variantctl.launch.servers import foreign_owner

        record = server.record
        where = foreign_owner(record, env.runs_dir) or (
            f"its launch's run directory {record.run_dir} is not on this machine"
            if record.run_dir else "its record names no run directory")
        ui.say(f"{variant}: result not stored: {where} (use --json or --export-vllm to "
                "keep it)")
    return outcome


def _bench_url(project: Project, req: BenchRequest, url: str, ui: BenchUI,
               started_at: str) -> RunOutcome:
    from variantctl.bench.session import Measurement, is_loopback_url, measure
    from variantctl.benchparams import parse_url
    from variantctl.project.selection import select_hosts
    from variantctl.targets.connect import open_target
    from variantctl.targets.local import LocalTarget

    env = project.env
    base = parse_url(url)  # checked by the command already; the base URL

    def measurement(**where: object) -> Measurement:
        return Measurement(label=url, base_url=base, params=req.params,
                           on_progress=_progress(ui, url), on_note=ui.note, clock=env.clock,
                           signatures=project.signatures, **where)  # type: ignore[arg-type]

    if req.host is not None:
        (host,) = select_hosts(env, req.host, None)
        with open_target(host) as target:
            return asyncio.run(measure(measurement(target=target, host=host), started_at))
    # a server on this machine: its GPUs are this machine's
    local = LocalTarget() if is_loopback_url(base) else None
    return asyncio.run(measure(measurement(target=local), started_at))
