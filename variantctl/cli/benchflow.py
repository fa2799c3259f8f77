"""The ``bench`` command after its options: call the use case
(:func:`variantctl.usecases.bench.run_bench`) under the live view, print tables or
JSON, export, and pick the exit code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.env import Environment
from variantctl.errors import VariantctlError
from variantctl.usecases.bench import BenchReport, BenchRequest

if TYPE_CHECKING:
    from variantctl.cli.benchview import LiveView


def run_bench(env: Environment, req: BenchRequest, *, as_json: bool,
              export: Path | None) -> int:
    """Measure every target, print, export; the exit code."""
    from variantctl.cli.benchview import LiveView
    from variantctl.project.loaded import Project
    from variantctl.usecases.bench import run_bench as bench

    with LiveView(env) as view:
        report = bench(Project(env), req, _UI(env, view))
        view.done()
    _print(env, report, as_json)
    if export is not None:
        from variantctl.bench.export import write_exports

        write_exports([(o.label, o.result) for o in report.outcomes], export,
                      lambda path: _say(env, f"exported {path}"))
    return report.exit_code


def _say(env: Environment, text: str) -> None:
    env.stderr.print(text, markup=False, highlight=False, soft_wrap=True)


class _UI:
    """The use case's notes: the live view's, and plain lines on stderr."""

    def __init__(self, env: Environment, view: LiveView) -> None:
        self.env = env
        self.progress, self.note = view.progress, view.note

    def say(self, text: str) -> None:
        _say(self.env, text)

    def error(self, variant: str, exc: VariantctlError) -> None:
        _say(self.env, f"error: {exc.message}")
        if exc.hint:
            _say(self.env, f"hint: {exc.hint}")


def _print(env: Environment, report: BenchReport, as_json: bool) -> None:
    """One target: its ``variantctl.bench/1`` object; several: ``{"results": [...],
    "errors": [{"variant", "error"}]}`` (the README's --json convention)."""
    from variantctl.cli.output import emit, print_json
    from variantctl.render.bench import result_blocks
    from variantctl.render.benchrun import outcome_json, profile_blocks, trouble_blocks

    outcomes, errors = report.outcomes, report.errors
    if as_json:
        docs = [outcome_json(o) for o in outcomes]
        if len(docs) == 1 and not errors:
            print_json(env, docs[0])
        else:
            print_json(env, {"results": docs, "errors": [
                {"variant": name, "error": exc.to_json()} for name, exc in errors]})
    elif outcomes:
        emit(env, result_blocks([(o.label, o.result) for o in outcomes]))
        emit(env, profile_blocks(outcomes))
        for o in outcomes:
            if o.stored is not None:
                _say(env, f"{o.label}: stored {o.stored}")
    emit(env, trouble_blocks(outcomes))
