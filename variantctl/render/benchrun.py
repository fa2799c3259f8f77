"""``bench``'s output: the whole report (tables or ``--json``), each outcome as ``--json``
gives it, the profile breakdowns, and what went wrong per target (returns, never
prints)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.render.output import Block

if TYPE_CHECKING:
    from variantctl.bench.session import RunOutcome
    from variantctl.usecases.bench import BenchReport


def report_json(report: BenchReport) -> JsonObject:
    """One target: its ``variantctl.bench/1`` object; several: ``{"results": [...],
    "errors": [{"variant", "error"}]}`` (the README's --json convention)."""
    docs = [outcome_json(o) for o in report.outcomes]
    if len(docs) == 1 and not report.errors:
        return docs[0]
    return {"results": list(docs), "errors": [
        {"variant": name, "error": exc.to_json()} for name, exc in report.errors]}


def report_blocks(report: BenchReport, *, as_json: bool) -> list[Block]:
    """The result tables, profile breakdowns and where each result was stored (not under
    ``--json``, whose document holds them), then what went wrong (stderr, always)."""
    from variantctl.render.bench import result_blocks

    outcomes = report.outcomes
    out: list[Block] = []
    if outcomes and not as_json:
        out += result_blocks([(o.label, o.result) for o in outcomes])
        out += profile_blocks(outcomes)
        out += [Block(f"{o.label}: stored {o.stored}", err=True, markup=False,
                      highlight=False, soft_wrap=True)
                for o in outcomes if o.stored is not None]
    return out + trouble_blocks(outcomes)


def outcome_json(o: RunOutcome) -> JsonObject:
    """One target's ``variantctl.bench/1`` object, with its intervals, where it was
    stored, the server's death and the profile breakdowns."""
    from variantctl.bench.uncertainty import levels_json

    doc = o.result.to_json()
    doc["intervals"] = levels_json(o.result.levels, o.result.params.until_ci)
    doc["stored"] = None if o.stored is None else str(o.stored)
    if o.store_error is not None:
        doc["store_error"] = o.store_error.to_json()
    doc["server_death"] = None if o.death is None else o.death.to_json()
    if o.profile is not None:
        doc["profile"] = o.profile
    return doc


def profile_blocks(outcomes: Sequence[RunOutcome]) -> list[Block]:
    """The breakdown tables of every profiled outcome."""
    from variantctl.render.profile import breakdown_tables

    return [Block(table) for o in outcomes if o.profile
            for table in breakdown_tables(o.label, o.profile)]


def trouble_blocks(outcomes: Sequence[RunOutcome]) -> list[Block]:
    """Per target: the server's death, the levels whose every request failed, an
    interruption, a result the store refused (stderr but the death's own blocks)."""
    from variantctl.render.bench import death_blocks

    out: list[Block] = []
    for o in outcomes:
        if o.death is not None:
            out += death_blocks(o.death)
        for lv in o.failed_levels:
            out.append(_line(f"error: {o.label}: every request of the level at concurrency "
                             f"{lv.concurrency} failed ({', '.join(lv.errors) or 'no reason'})"))
        if o.interrupted:
            out.append(_line(f"{o.label}: interrupted; partial results kept"))
        if o.store_error is not None:  # after the figures, which are the user's to keep
            out.append(Block(f"error: {o.label}: result not stored: {o.store_error.message}",
                             err=True, markup=False, highlight=False, soft_wrap=True))
    return out


def _line(line: str) -> Block:
    # as printed before these moved here: plain, folded at the terminal's width
    return Block(line, err=True, markup=False, highlight=False)
