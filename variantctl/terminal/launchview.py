"""The display of a launch: the ``LaunchUI`` the ``launch`` and ``watch`` commands
hand to :func:`variantctl.launch.core.launch_variant` (the library reports to it and
never prints itself), and the finished launch it prints once launch returns; the text
comes from ``launch/ui.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from variantctl.env import Environment, redraws
from variantctl.launch.core import LaunchResult
from variantctl.launch.ui import (
    aftermath_lines,
    phase_line,
    progress_markup,
    result_json,
    verdict_lines,
)
from variantctl.launch.watch import Progress
from variantctl.logs.bounded import visible_lines
from variantctl.render.output import text
from variantctl.terminal.output import emit, print_json

if TYPE_CHECKING:
    from rich.status import Status


class ConsoleUI:
    """Notes on stderr; live progress (phase, elapsed, last line) on a terminal,
    one line per phase change otherwise (logs, CI, tests)."""

    def __init__(self, env: Environment, *, quiet: bool = False, as_json: bool = False):
        self.env = env
        self.quiet = quiet
        self.as_json = as_json
        self._status: Status | None = None
        self._phase: str | None = None
        self.shown_verdict = False

    def __enter__(self) -> ConsoleUI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finished(self, result: LaunchResult) -> None:
        """Everything about a finished launch (the verdict part unless :meth:`decided`
        showed it). Its exit code, part of the JSON, is the verdict's own mapping
        (:meth:`variantctl.logs.verdict.VerdictKind.exit_code`): ready with every
        expectation met 0, a hang 5, a timeout 6, anything else that ended badly 1."""
        if self.as_json:
            print_json(self.env, result_json(result, result.exit_code))
            return
        lines = [] if self.shown_verdict else verdict_lines(result)
        emit(self.env, [text(line) for line in lines + aftermath_lines(result)])

    def decided(self, result: LaunchResult) -> None:
        """Print the verdict the moment it is known (stopping the server comes after)."""
        self.close()
        if not self.as_json:
            for line in verdict_lines(result):
                self.env.stdout.print(visible_lines(line), markup=False, highlight=False,
                                      soft_wrap=True)
            self.shown_verdict = True

    def note(self, text: str) -> None:
        if not self.quiet:
            self.env.stderr.print(visible_lines(text), markup=False, highlight=False,
                                  soft_wrap=True)

    def progress(self, progress: Progress) -> None:
        if self.quiet:
            return
        if progress.note:
            self.note(progress.note)
            return
        phase = progress.phase or "starting"
        if redraws(self.env.stderr):
            text = progress_markup(progress, self.env.stderr.width)
            if self._status is None:
                self._status = self.env.stderr.status(text)
                self._status.start()
            else:
                self._status.update(text)
        elif phase != self._phase:
            self.note(phase_line(progress))
        self._phase = phase

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
