"""``variantctl report [SWEEP|RUN…] [--tune NAME] [--format md|html] [--out DIR]``."""

from __future__ import annotations

from pathlib import Path

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import sweeps_and_runs, tune_names
from variantctl.env import Environment


@click.command("report")
@click.argument("sources", nargs=-1, metavar="[SWEEP|RUN]...",
                shell_complete=sweeps_and_runs)
@click.option("--tune", "tune", metavar="NAME", shell_complete=tune_names,
              help="A finished tune (runs/tunes/NAME.json): its verdict, trials in order, "
                   "objective and best-so-far plot, each setting's effect and the pruned "
                   "and failed candidates, first.")
@click.option("--format", "fmt", type=click.Choice(["md", "html"]), default="md",
              show_default=True,
              help="md: report.md with the plots as PNG files beside it; html: one "
                   "self-contained report.html.")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write into (default: reports/<name>-<stamp>/ in the project).")
@click.option("--title", help="The report's title (default: the sweep's name, 'Runs' or "
                               "'Tune NAME').")
@json_option
@pass_env
def report(env: Environment, sources: tuple[str, ...], tune: str | None, fmt: str,
           out: Path | None, title: str | None, as_json: bool) -> None:
    """Tables and plots of a sweep (its name or state file), of runs (ids or prefixes)
    or of a finished tune (--tune NAME).

    The seeds' tables — per point success, TTFT P90, Output TPS P10/P50, aggregate TPS,
    the concurrency curve, hardware, steady state, failures and skipped points — and
    plots of aggregate TPS, TPOT, TTFT P90 and GPU utilisation vs concurrency and
    throughput per GPU vs per-user TPS; a roofline section for hosts that declare their
    GPU's peaks (hosts.yaml ``gpu:``). See docs/report.md.
    """
    from variantctl.project.loaded import Project
    from variantctl.render.output import text
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.runs import make_report

    _, written, summary = make_report(Project(env), sources, fmt, out, title, tune)
    if as_json:
        print_json(env, {"report": str(written[0]), "files": [str(p) for p in written],
                         "summary": list(summary)})
        return
    emit(env, [text(f"report: {written[0]}")]
         + [text(f"  plot: {p}") for p in written[1:]] + [text(line) for line in summary])
