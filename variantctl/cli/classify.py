"""``variantctl classify LOG… [--json] [--explain] [--expect VARIANT]``: diagnose startup logs."""

from __future__ import annotations

from pathlib import Path

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment


@click.command("classify")
@click.argument("logs", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option
@click.option("--explain", is_flag=True,
              help="Also show warnings, other failures, captures and every fact.")
@click.option("--expect", "expect", metavar="VARIANT",
              help="Compare the facts with VARIANT's expect block and the flags it sets.")
@click.option("--signatures", "sig_dirs", multiple=True, envvar="VARIANTCTL_SIGNATURES",
              type=click.Path(path_type=Path), metavar="DIR",
              help="Extra signature directory (*.yaml); repeatable. Env: VARIANTCTL_SIGNATURES. "
              "The project's signatures/ directory is always read when it exists.")
@click.option("--suggest", is_flag=True,
              help="For an unknown or generic-failure log, print a signature (YAML) built "
              "from its decisive line, checked against the log and the shipped fixtures.")
@click.option("--exited/--running", "exited", default=None,
              help="Whether the server process has exited or still runs (default: "
              "unknown, the log is an excerpt judged after the fact; see docs/classify.md).")
@pass_env
def classify(env: Environment, logs: tuple[Path, ...], as_json: bool, explain: bool,
             expect: str | None, sig_dirs: tuple[Path, ...], suggest: bool,
             exited: bool | None) -> None:
    """Name how each vLLM startup LOG ended, show the evidence and the effective config.

    Exit code: 0 ok, 1 failed (or --expect mismatches), 5 hang, 7 unknown; the worst wins.
    With --suggest: 0 (the suggestion is printed instead of the verdict).
    """
    from variantctl.cli import finish
    from variantctl.cli.classify_support import (
        exit_code,
        load_expectations,
        read_log,
        read_warnings,
        suggestion_yaml,
    )
    from variantctl.cli.output import emit, print_json
    from variantctl.logs.bounded import visible
    from variantctl.logs.classify import classify_text
    from variantctl.logs.expect import check_log
    from variantctl.project.loaded import Project
    from variantctl.render.classify import result_blocks, results_json

    # the project's signatures/ and the --signatures directories (VARIANTCTL_SIGNATURES
    # when none is given): the catalog launch, watch, bench and sweep diagnose with too
    project = Project(env, sig_dirs or None)
    catalog = project.signatures
    wanted = load_expectations(project, expect) if expect else None
    results = []
    for path in logs:
        text, stats = read_log(env.cwd / path, str(path))
        for warning in read_warnings(str(path), stats):
            env.stderr.print(f"warning: {visible(warning)}", markup=False, highlight=False)
        result = classify_text(text, catalog, exited=exited)
        mismatches = []
        if wanted:
            mismatches = check_log(result, *wanted)
        results.append((str(path), result, mismatches))
        if suggest:
            # YAML escapes control characters in the values it quotes
            env.stdout.print(suggestion_yaml(str(path), text, result, catalog),
                             markup=False, highlight=False, end="", soft_wrap=True)
    if suggest:
        return
    if as_json:
        print_json(env, results_json(results, expect))
    else:
        emit(env, result_blocks(results, expect, explain=explain))
    code = exit_code(results)
    if code:
        finish(code)
