"""The live progress line of ``variantctl bench`` (the display the command hands to
:func:`variantctl.usecases.bench.run_bench`, like launch's ConsoleUI): requests done,
tokens/s now, elapsed; and the use case's notes and per-variant errors on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING

from variantctl.env import Environment, redraws

if TYPE_CHECKING:
    from rich.live import Live

    from variantctl.bench.runner import LiveProgress
    from variantctl.errors import VariantctlError


class LiveView:
    """Live progress on stderr while a level runs: requests done, tokens/s now, elapsed.

    On a terminal a rich ``Live`` line redrawn four times a second; otherwise (a pipe,
    a CI log, the tests) one line per level when it ends, so logs stay readable.
    """

    def __init__(self, env: Environment):
        self.env = env
        self.live: Live | None = None
        self.last: tuple[str, LiveProgress] | None = None

    def __enter__(self) -> LiveView:
        if redraws(self.env.stderr):
            from rich.live import Live

            self.live = Live("", console=self.env.stderr, refresh_per_second=4, transient=True)
            self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    @staticmethod
    def text(label: str, p: LiveProgress, final: bool = False) -> str:
        total = "?" if p.total is None else str(p.total)
        errors = f", {p.errors} failed" if p.errors else ""
        now = "" if final else f", {p.tokens_per_s_now:.1f} tok/s now"
        return f"{label} c={p.concurrency}: {p.done}/{total} done{errors}{now}, {p.elapsed_s:.1f} s"

    def progress(self, label: str, p: LiveProgress) -> None:
        self.last = (label, p)
        if self.live is not None:
            from rich.text import Text

            self.live.update(Text(self.text(label, p)))  # plain: no number highlighting

    def note(self, text: str) -> None:
        self.done()
        self.env.stderr.print(text, markup=False, highlight=False)

    def say(self, text: str) -> None:
        """A line on its own (what was stored, exported), outside the live line."""
        self.env.stderr.print(text, markup=False, highlight=False, soft_wrap=True)

    def error(self, variant: str, exc: VariantctlError) -> None:
        """One of several variants could not be measured; the others still run."""
        self.say(f"error: {exc.message}")
        if exc.hint:
            self.say(f"hint: {exc.hint}")

    def done(self) -> None:
        """The level ended: its last progress as one line (off a terminal)."""
        if self.last is not None and self.live is None:
            self.env.stderr.print(self.text(*self.last, final=True), markup=False,
                                  highlight=False)
        self.last = None
