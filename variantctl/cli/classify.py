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
             exited: bool | None) -> int:
    """Name how each vLLM startup LOG ended, show the evidence and the effective config.

    Exit code: 0 ok, 1 failed (or --expect mismatches), 5 hang, 7 unknown; the worst wins.
    With --suggest: 0 (the suggestion is printed instead of the verdict).
    """
    from variantctl.logs.bounded import visible
    from variantctl.logs.result import classify_exit_code
    from variantctl.project.loaded import Project
    from variantctl.render.classify import result_blocks, results_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.classify import ClassifyRequest, classify_logs

    def warn(text: str) -> None:
        env.stderr.print(f"warning: {visible(text)}", markup=False, highlight=False)

    # the project's signatures/ and the --signatures directories (VARIANTCTL_SIGNATURES
    # when none is given): the catalog launch, watch, bench and sweep diagnose with too
    project = Project(env, sig_dirs or None)
    req = ClassifyRequest(logs, expect=expect, suggest=suggest, exited=exited)
    done = classify_logs(project, req, env.cwd, warn)
    if suggest:
        for c in done:
            # YAML escapes control characters in the values it quotes
            env.stdout.print(c.suggestion, markup=False, highlight=False, end="",
                             soft_wrap=True)
        return 0
    results = [(c.display, c.result, list(c.mismatches)) for c in done]
    if as_json:
        print_json(env, results_json(results, expect))
    else:
        emit(env, result_blocks(results, expect, explain=explain))
    return classify_exit_code([(c.result, bool(c.mismatches)) for c in done])

