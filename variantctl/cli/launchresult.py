"""How ``launch`` and ``watch`` print a finished launch (the live part is cli/launchui.py)."""

from __future__ import annotations

from variantctl.cli.output import emit, print_json
from variantctl.env import Environment
from variantctl.launch.core import LaunchResult
from variantctl.launch.ui import aftermath_lines, result_json, verdict_lines
from variantctl.render.output import text


def print_result(env: Environment, result: LaunchResult, exit_code: int, *, as_json: bool,
                 verdict_shown: bool = False) -> None:
    """Everything about a finished launch (the verdict part unless the live UI showed it);
    ``exit_code`` (decided by the command) is part of the JSON."""
    if as_json:
        print_json(env, result_json(result, exit_code))
        return
    lines = [] if verdict_shown else verdict_lines(result)
    emit(env, [text(line) for line in lines + aftermath_lines(result)])


def launch_exit_code(result: LaunchResult) -> int:
    """What a launch's (or watch's) result means as an exit code: ready with every
    expectation met is 0, a hang 5, a timeout 6, anything else that ended badly 1
    (the verdict's own mapping, :meth:`variantctl.logs.verdict.VerdictKind.exit_code`)."""
    return result.exit_code
