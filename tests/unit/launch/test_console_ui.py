"""The launch's live status line redraws only on a real terminal (issue 20.6).

``FORCE_COLOR`` (CI, ``make demo`` before) made rich treat a pipe as a terminal, so each
launch wrote its spinner frames into the log as one line of up to 50,000 characters.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tests.conftest import make_env
from tests.unit.bench.test_render_bench import Tty
from variantctl.launch.watch import Progress
from variantctl.terminal.launchview import ConsoleUI


def _feed(ui: ConsoleUI) -> None:
    for t, phase in ((0.5, None), (1.0, "engine-config"), (1.5, "engine-config"),
                     (2.0, "engine-config"), (9.0, "loading-weights")):
        ui.progress(Progress(t, phase, f"INFO line at {t}", int(t * 10)))
    ui.close()


def test_a_forced_terminal_that_is_a_pipe_gets_one_line_per_phase() -> None:
    for stream in (io.StringIO(), Tty(tty=False)):
        env = make_env(None, Path("/nonexistent"))
        env.stderr = Console(file=stream, force_terminal=True, width=100)
        _feed(ConsoleUI(env))
        assert stream.getvalue().splitlines() == [
            "[   0.5s] phase: starting", "[   1.0s] phase: engine-config",
            "[   9.0s] phase: loading-weights"]


def test_a_real_terminal_gets_the_redrawn_status_line() -> None:
    stream = Tty()
    env = make_env(None, Path("/nonexistent"))
    env.stderr = Console(file=stream, force_terminal=True, width=100, color_system=None)
    ui = ConsoleUI(env)
    ui.progress(Progress(1.0, "engine-config", "INFO line", 10))
    assert ui._status is not None  # a live status, redrawn in place
    ui.close()
    assert "phase:" not in stream.getvalue()
