"""``check``'s findings, compiler style: one block per finding, easy to read at any
width and to grep (returns, never prints)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.render.output import Block

if TYPE_CHECKING:
    from variantctl.usecases.check import CheckReport
    from variantctl.variants.rules import Finding


def check_json(report: CheckReport) -> JsonObject:
    """``check --json``: the variants checked, the failure each is predicted to hit, and
    every finding."""
    return {"variants": list(report.selected), "predicted": report.predicted,
            "findings": [f.to_dict() for f in report.findings]}


def findings_blocks(findings: Sequence[Finding], count: int) -> list[Block]:
    """Each finding (variant, severity, rule, what it predicts; its message), then the
    count of variants checked, errors and warnings."""
    from rich.markup import escape

    out = []
    for f in findings:
        style = "red" if f.severity == "error" else "yellow"
        predicts = f"predicts {f.signature}" if f.signature else "no log signature"
        rule = escape(f"[{f.rule}]")
        out.append(Block(f"[bold]{escape(f.variant)}[/]: [{style}]{f.severity}[/] {rule} "
                         f"{escape(predicts)}", highlight=False))
        out.append(Block("  " + f.message, markup=False, highlight=False))
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    out.append(Block(f"{count} variant(s) checked: {errors} error(s), {warnings} warning(s)",
                     markup=False, highlight=False))
    return out
