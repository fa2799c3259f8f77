"""``variantctl bench``: measure a running variant (or any OpenAI-compatible URL).

Thin: the options → :func:`variantctl.usecases.bench.bench_request` (checked, made a
:class:`~variantctl.benchparams.BenchParams`); the server is found and reached by
:mod:`variantctl.bench.session`; tables come from :mod:`variantctl.render.benchrun`,
live progress from :mod:`variantctl.terminal.benchview`. Exit codes: 0 every level had
successes; 1 a level whose requests all failed, or the server died during a
level; 2 bad input; 4 host or URL unreachable; 130 interrupted (partial results
are still printed, stored and exported).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from variantctl.cli.common import FiniteFloat, json_option, pass_env
from variantctl.env import Environment


@click.command("bench")
@click.argument("variants", metavar="[VARIANT]...", nargs=-1)
@click.option("--host", "host", help="Host the variant runs on (default: the variant's host); "
              "with --url, the host whose GPUs to sample.")
@click.option("--url", help="Benchmark this server instead of a launched variant "
              "(e.g. http://127.0.0.1:8000).")
@click.option("--endpoint", type=click.Choice(["chat", "completions"]), default="chat",
              show_default=True, help="/v1/chat/completions or /v1/completions.")
@click.option("--model", help="Model name to request (default: the one the server serves).")
@click.option("--concurrency", "concurrency",
              help="A ladder of levels, one after another: 1,2,4 (default 1; under a "
              "rate ladder or ramp-up, the cap: default --requests, else 256).")
@click.option("--requests", "requests", type=int, help="Requests per level (default 100).")
@click.option("--duration", type=FiniteFloat(min=0, min_open=True),
              help="Seconds per level instead of --requests.")
@click.option("--prompt", default="short", show_default=True,
              help="short | tools (the seed's 29-tool request) | random | FILE | "
              "sharegpt:FILE | jsonl:FILE | trace:FILE (docs/bench.md, Datasets).")
@click.option("--prefix-len", "prefix_len", type=int,
              help="Lead every prompt with one of --prefixes shared prefixes of N tokens.")
@click.option("--prefixes", type=int, default=1, show_default=True,
              help="How many shared prefixes (--prefix-len): request i gets prefix i mod K.")
@click.option("--turns", type=int, default=1, show_default=True,
              help="Conversations of T turns, each carrying the history (chat).")
@click.option("--input-len", type=int, help="Prompt tokens (--prompt random: exact).")
@click.option("--output-len", type=int,
              help="max_tokens of every request (default 128; a dataset's own lengths "
              "unless given).")
@click.option("--trace-speed", "trace_speed", type=float, default=1.0, show_default=True,
              help="--prompt trace:FILE: replay N times faster.")
@click.option("--ignore-eos", is_flag=True, help="Generate exactly --output-len tokens.")
@click.option("--temperature", type=FiniteFloat(min=0), default=0.0, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True,
              help="Prompts, arrivals and sampling seed.")
@click.option("--request-rate", "request_rate", default="inf", show_default=True,
              help="Requests/s (Poisson-like arrivals) or inf (all at once, up to the "
              "concurrency); several (1,2,4): a ladder, one level per rate.")
@click.option("--ramp-up", "ramp_up", type=click.Choice(["linear", "exponential"]),
              help="Ramp the rate from --ramp-start to --ramp-end over the level's "
              "requests, as vllm bench serve --ramp-up-strategy.")
@click.option("--ramp-start", "ramp_start", type=float, help="--ramp-up: first requests/s.")
@click.option("--ramp-end", "ramp_end", type=float, help="--ramp-up: last requests/s.")
@click.option("--burstiness", type=float, default=1.0, show_default=True,
              help="Gamma shape of the arrivals (1 = Poisson), as vllm bench serve.")
@click.option("--search", "search", type=click.Choice(["concurrency", "rate"]),
              help="Find the highest concurrency (or rate) whose latencies meet --slo.")
@click.option("--slo", help="--search: SLOs in ms, ttft:MS,tpot:MS[,e2el:MS].")
@click.option("--slo-percentile", "slo_percentile", type=float, default=90.0,
              show_default=True, help="--search: the percentile held to the SLOs.")
@click.option("--max-level", "max_level", type=float, default=256.0, show_default=True,
              help="--search: the highest level probed.")
@click.option("--warmup", default="auto", show_default=True,
              help="auto (same lengths, half the concurrency, 50-100 requests) | N | off.")
@click.option("--goodput", help="SLOs in ms for goodput: ttft:MS,tpot:MS,e2el:MS.")
@click.option("--repeat", type=int, default=1, show_default=True,
              help="Run the whole ladder N times (≥ 3: each figure's 95 % CI comes from "
              "the repeats; fewer: from a bootstrap over requests, marked *).")
@click.option("--until-ci", "until_ci", type=FiniteFloat(), metavar="PCT",
              help="Repeat each level (at least 3 times) until its output-throughput 95 % "
              "CI half-width is under PCT % of the mean; says so when --max-repeat ends it "
              "first.")
@click.option("--max-repeat", "max_repeat", type=int, metavar="N",
              help="With --until-ci: the most repeats of one level (default 10).")
@click.option("--request-timeout", type=FiniteFloat(min=0, min_open=True), default=600.0,
              show_default=True,
              help="Seconds before one request counts as failed.")
@click.option("--export-vllm", "export_vllm", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write vllm bench serve's result JSON (one file per level of a ladder).")
@click.option("--no-store", is_flag=True,
              help="Do not write bench-<stamp>.json into the launch's archived run.")
@click.option("--profile", is_flag=True,
              help="Collect the profile points of a profile-decode patchset per level "
              "(relaunches the server with VARIANTCTL_PROFILE set if needed).")
@click.option("--profile-trace", "profile_trace",
              type=click.Path(dir_okay=False, path_type=Path),
              help="With --profile: also write the events as a Chrome trace (Perfetto JSON).")
@json_option
@pass_env
def bench(env: Environment, export_vllm: Path | None, as_json: bool, **options: Any) -> int:
    """Benchmark VARIANT (its running server, through the host's SSH connection) or --url.

    Several VARIANTs are measured one after another and shown in one table.
    """
    from variantctl.project.loaded import Project
    from variantctl.render.benchrun import report_blocks, report_json
    from variantctl.terminal.benchview import LiveView
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.bench import bench_request, run_bench

    # every other option is the request's, checked together by the use case
    req = bench_request(**options)
    with LiveView(env) as view:
        report = run_bench(Project(env), req, view)
        view.done()
    if as_json:
        print_json(env, report_json(report))
    emit(env, report_blocks(report, as_json=as_json))
    if export_vllm is not None:
        from variantctl.bench.export import write_exports

        write_exports([(o.label, o.result) for o in report.outcomes], export_vllm,
                      lambda path: view.say(f"exported {path}"))
    return report.exit_code
