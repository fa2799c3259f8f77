"""``variantctl runs [--variant V] [--verdict K] [--json]``, ``runs show ID``, ``runs export``
and ``runs import``."""

from __future__ import annotations

from pathlib import Path

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.completion import run_ids
from variantctl.env import Environment


@click.group("runs", invoke_without_command=True)
@click.option("--variant", "variant", help="Only the runs of this variant.")
@click.option("--verdict", "verdict",
              help="Only runs that ended so (ready, failed, hang, exited, timeout, started).")
@json_option
@click.pass_context
def runs(ctx: click.Context, variant: str | None, verdict: str | None, as_json: bool) -> None:
    """The archived runs (runs/ of the project): id, verdict, facts, benchmarks."""
    if ctx.invoked_subcommand is not None:
        return
    from variantctl.cli.common import current_env
    from variantctl.render.output import Block, text
    from variantctl.render.runs import runs_table
    from variantctl.terminal.output import emit, print_json_list
    from variantctl.usecases.runs import list_runs

    env = current_env(ctx)
    root, listed = list_runs(env, variant=variant, verdict=verdict)
    if as_json:
        print_json_list(env, "runs", listed)  # row by row: no one string of every run
        return
    rows = list(listed)  # a table is laid out whole
    if not rows:
        emit(env, [text(f"no runs in {root}", err=True)])
        return
    emit(env, [Block(runs_table(rows))])


@runs.command("show")
@click.argument("run_id", shell_complete=run_ids)
@json_option
@pass_env
def show(env: Environment, run_id: str, as_json: bool) -> None:
    """One run in full: verdict, evidence, facts, patches, benchmarks."""
    from variantctl.project.loaded import Project
    from variantctl.render.output import text
    from variantctl.render.runs import run_json, run_lines
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.runs import show_run

    rule = Project(env).secrets  # secrets in the record are shown masked
    d, rec = show_run(env, run_id)
    if as_json:
        print_json(env, run_json(d, rec, rule))
        return
    emit(env, [text(line) for line in run_lines(d, rec, rule)])


@runs.command("export")
@click.argument("run_ids", nargs=-1, metavar="RUN...", shell_complete=run_ids)
@click.option("--sweep", "sweep", metavar="NAME",
              help="Also every run of this sweep (its name or state file).")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl", "parquet"]),
              required=True, help="csv and jsonl: standard library; parquet: the "
                                  "variantctl[parquet] extra (pyarrow).")
@click.option("--per", "per", type=click.Choice(["level", "request"]), default="level",
              show_default=True,
              help="level: one row per concurrency of each benchmark, every headline figure "
                   "with its 95 % CI and n; request: one row per request.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The file to write (replaced atomically).")
@json_option
@pass_env
def export(env: Environment, run_ids: tuple[str, ...], sweep: str | None, fmt: str, per: str,
           out: Path, as_json: bool) -> None:
    """Stored runs as a table for a notebook or a spreadsheet (docs/report.md, "Export")."""
    from variantctl.project.loaded import Project
    from variantctl.render.runs import export_blocks, export_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.runs import export_runs

    done = export_runs(Project(env), run_ids, sweep, fmt=fmt, per=per, out=out)
    if as_json:
        print_json(env, export_json(done))
        return
    emit(env, export_blocks(done))


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--from", "tool", type=click.Choice(["vllm", "guidellm", "aiperf"]),
              required=True,
              help="vllm: vllm bench serve --save-result JSON (0.6 on); guidellm: its "
                   "benchmarks JSON; aiperf: profile_export_aiperf.json.")
@click.option("--variant", "variant", metavar="NAME",
              help="The variant it measured: the project's definition is recorded when it "
                   "has one (compare then diffs settings); else only the name "
                   "(default <tool>-import).")
@click.option("--tool-version", "version", metavar="VERSION",
              help="The tool's version, for files that do not say (vllm, aiperf).")
@json_option
@pass_env
def import_run(env: Environment, file: Path, tool: str, variant: str | None,
            version: str | None, as_json: bool) -> None:
    """Another tool's result file as a run with its benchmark (docs/report.md, "Import")."""
    from variantctl.project.loaded import Project
    from variantctl.render.runs import import_blocks, import_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.runs import import_result

    done = import_result(Project(env), file, tool, variant, version)
    if as_json:
        print_json(env, import_json(done))
        return
    emit(env, import_blocks(done, file, tool))


def _add_trend() -> None:
    from variantctl.cli.trend import trend

    runs.add_command(trend)
    runs.add_command(import_run)  # `import` is a keyword: the function has another name


_add_trend()
