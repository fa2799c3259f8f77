"""Sweep output: the plan table, progress lines, the result table, JSON (returns, never
prints)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.errors import VariantctlError
from variantctl.jsontypes import JsonObject
from variantctl.logs.bounded import visible
from variantctl.render.output import Block, cell, error_lines, text
from variantctl.secretmask import DEFAULT, SecretRule
from variantctl.sweeps.plan import Plan, PlannedPoint

if TYPE_CHECKING:
    from variantctl.runs.sweepstate import PointEntry, SweepDoc


def duration(seconds: float | None) -> str:
    """``42s``, ``3m10s``, ``1h05m``."""
    if seconds is None:
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _prediction(p: PlannedPoint) -> str:
    if p.done is not None:
        return f"done: {p.done} (kept by --resume)"
    if p.skip is not None:
        sig = f" {p.skip.signature}" if p.skip.signature else ""
        if p.skip.reason == "history":
            return f"skip: failed before (run {p.skip.run_id}){sig}"
        what = "run anyway: predicted" if p.run else "skip: predicted"
        # a rule named after the signature it predicts is said once
        return f"{what} by {p.skip.rule}" + ("" if p.skip.signature == p.skip.rule else sig)
    warnings = [f.rule for f in p.findings if f.severity == "warning"]
    return "run" + (f" (warning: {', '.join(warnings)})" if warnings else "")


def plan_blocks(plan: Plan, *, dry_run: bool, secrets: SecretRule = DEFAULT) -> list[Block]:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("#", "POINT", "HOST", "VALUES", "PLAN", "ETA"):
        table.add_column(col, no_wrap=col in ("#", "POINT", "ETA"))
    for p in plan.points:
        eta = duration(p.eta_startup_s) + ("" if p.eta_bench_s is not None else "+bench")
        if p.eta_bench_s is not None:
            eta = duration(p.eta_s)
        # names and values from the sweep file: literal, bounded; secrets by the project's rule
        table.add_row(str(p.point.index), cell(p.name), cell(p.host),
                      cell(p.point.label(secrets), 400), cell(_prediction(p), 400),
                      eta if p.run and p.done is None else "")
    n_done = sum(1 for p in plan.to_run if p.done is not None)
    n_run = len(plan.to_run) - n_done
    head = (f"sweep {plan.spec.name} ({plan.spec.source}): {len(plan.points)} points, "
            f"{n_run} to run, " + (f"{n_done} done before, " if n_done else "")
            + f"{len(plan.points) - n_run - n_done} skipped, on "
            f"{', '.join(plan.hosts) or 'no host'}")
    blocks = [text(head), Block(table)]
    tail = f"ETA {duration(plan.eta_s)} (startup from past runs; hosts in parallel)"
    if any(p.run and p.done is None and p.eta_bench_s is None for p in plan.points):
        tail += ", plus benchmark time not measured before"
    blocks.append(text(tail))
    if dry_run:
        blocks.append(text("dry run: nothing launched (the plan needs no connection)", err=True))
    return blocks


def plan_json(plan: Plan, secrets: SecretRule = DEFAULT) -> JsonObject:
    """The plan as JSON; a secret's value among a point's values is ``***``."""
    return {
        "sweep": plan.spec.name, "source": plan.spec.source, "hosts": list(plan.hosts),
        "eta_s": round(plan.eta_s, 1),
        "points": [{
            "index": p.point.index, "name": p.name, "base": p.point.base, "host": p.host,
            "values": secrets.mask_mapping(p.point.values), "point_key": p.point_key, "run": p.run,
            "skip": p.skip.to_json() if p.skip else None,
            "findings": [f.to_dict() for f in p.findings],
            "eta_s": round(p.eta_s, 1), "eta_source": p.eta_source,
            "bench_eta_known": p.eta_bench_s is not None, "done": p.done,
        } for p in plan.points],
    }


def progress_line(host: str, i: int, n: int, point: PlannedPoint, phase: str, detail: str,
                  eta_s: float | None) -> str:
    """``[cpu 2/4] cpu-eager@cpu-smoke-02 bench random c=2  ETA 1m20s``"""
    extra = f" {detail}" if detail else ""
    eta = f"  ETA {duration(eta_s)}" if eta_s is not None else ""
    return f"[{host} {i}/{n}] {point.name} {phase}{extra}{eta}"


def result_blocks(doc: SweepDoc, path: str) -> list[Block]:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    ranked = doc.rank == "capacity"
    cols = ("#", "POINT", "HOST", "STATUS", "RUN", "READY S", "BENCH S",
            *(("CAPACITY",) if ranked else ()), "NOTE")
    for col in cols:
        table.add_column(col, no_wrap=col != "NOTE")
    notes: list[str] = []
    points = list(doc.points)
    if ranked:  # rank: capacity — the most capacity first, points without one last
        points.sort(key=lambda e: -(_capacity(e) or -math.inf))
    for e in points:
        t = e.timings
        note = e.message
        sk = e.skip
        if e.status == "skipped" and sk is not None:
            why = sk.run_id or sk.rule or ""
            # a rule named after the signature it predicts is said once
            note = (f"{sk.reason}: {sk.signature or ''} "
                    f"{'' if why == sk.signature else why}").strip()
        elif e.signature and e.status != "measured":
            note = f"{e.signature}: {note}" if note else e.signature
        if e.stopped_early is not None:
            note = (note + "; " if note else "") + f"stopped: {e.stopped_early.reason}"
        if e.resumed:
            note = (note + "; " if note else "") + "from an earlier run"
        if len(note) > _NOTE_CELL:
            # a failure's message would wrap into a narrow column, a word per line: the
            # cell names it, the whole message follows the table at full width
            notes.append(visible(f"#{e.index} {e.name}: {note}"))
            short = e.signature or (sk.signature if sk is not None else None)
            note = (short or note[:_NOTE_CELL].rsplit(" ", 1)[0] + " …") + " (below)"
        cap = e.capacity
        best = _capacity(e)
        cap_cell = ((f"{cap.mode} {best:g}" if best is not None else "none")
                    if cap is not None else "-")
        cells = (e.index, e.name, e.host, e.status, e.run_id or "",
                 _num(t.get("time_to_ready_s")), _num(t.get("bench_s")),
                 *((cap_cell,) if ranked else ()), note)
        # read from the state file; notes quote servers' logs: text, filtered
        table.add_row(*(cell(c, 400) for c in cells))
    counts: dict[str, int] = {}
    for e in doc.points:
        counts[e.status] = counts.get(e.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    return [Block(table), *(Block(n, markup=False, highlight=False) for n in notes),
            text(f"sweep {doc.sweep} {doc.status}: {summary}"),
            text(f"state: {path}", err=True)]


#: a note longer than this goes below the result table
_NOTE_CELL = 40


def _capacity(entry: PointEntry) -> float | None:
    return entry.capacity.best_level if entry.capacity is not None else None


def _num(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) else ""


def host_error_blocks(errors: Sequence[tuple[str, VariantctlError]]) -> list[Block]:
    out = []
    for host, exc in errors:
        out += error_lines(f"{host}: {exc.message}", exc.hint)
    return out


def run_json(doc: SweepDoc, path: Path, host_errors: Mapping[str, VariantctlError]
             ) -> JsonObject:
    """``sweep --json``: the final state's points, where it is, the hosts' errors."""
    return {"sweep": doc.sweep, "state_file": str(path), "status": doc.status,
            "points": [p.to_json() for p in doc.points],
            "host_errors": {h: e.to_json() for h, e in host_errors.items()}}
