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
@click.option("--exited/--running", "exited", default=None,
              help="Whether the server process has exited (default: unknown; a log that "
              "stops inside a phase is then a hang).")
@pass_env
def classify(env: Environment, logs: tuple[Path, ...], as_json: bool, explain: bool,
             expect: str | None, sig_dirs: tuple[Path, ...], exited: bool | None) -> None:
    """Name how each vLLM startup LOG ended, show the evidence and the effective config.

    Exit code: 0 ok, 1 failed (or --expect mismatches), 5 hang, 7 unknown; the worst wins.
    """
    from variantctl.cli import finish
    from variantctl.cli.classify_support import (
        exit_code,
        load_expectations,
        read_log,
        signature_dirs,
    )
    from variantctl.logs.catalog import default_catalog
    from variantctl.logs.classify import classify_text
    from variantctl.logs.expect import compare, compare_verdict
    from variantctl.render.classify import print_json_results, print_results

    catalog = default_catalog(signature_dirs(env, sig_dirs))
    wanted = load_expectations(env, expect) if expect else None
    results = []
    for path in logs:
        result = classify_text(read_log(env.cwd / path, str(path)), catalog, exited=exited)
        mismatches = []
        if wanted:
            mismatches = [*compare_verdict(result.kind, result.signature, wanted[0]),
                          *compare(result.facts, *wanted)]
        results.append((str(path), result, mismatches))
    if as_json:
        print_json_results(env, results, expect)
    else:
        print_results(env, results, expect, explain=explain)
    code = exit_code(results)
    if code:
        finish(code)
