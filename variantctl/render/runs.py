"""``variantctl runs``: the archived runs as a table, one run in full, and JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from variantctl.logs.bounded import clipped
from variantctl.render.output import cell
from variantctl.runs.run import RunRecord, as_object
from variantctl.runs.store import RunDir
from variantctl.secretmask import DEFAULT, SecretRule

if TYPE_CHECKING:
    from pathlib import Path

    from rich.table import Table

    from variantctl.interop.export import Exported
    from variantctl.interop.importrun import ImportedRun
    from variantctl.jsontypes import JsonObject
    from variantctl.render.output import Block

def runs_table(rows: Sequence[dict[str, Any]]) -> Table:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("RUN", "DATE", "VARIANT", "HOST", "VERDICT", "READY S", "FACTS"):
        # a verdict and its signature are read whole; the facts wrap to what is left
        table.add_column(col, no_wrap=col in ("RUN", "DATE", "VERDICT", "READY S"))
    for r in rows:
        if "error" in r:
            table.add_row(*(cell(c, 400) for c in (
                r["run_id"], "", r["variant"], "", "unreadable", "", r["error"]["message"])))
            continue
        verdict = r["verdict"] + (f" {r['signature']}" if r["signature"] else "")
        if not r["expect_ok"]:
            verdict += " (expect failed)"
        ready = r["time_to_ready_s"]
        facts = ", ".join(f"{k}={v}" for k, v in r["facts"].items())
        # every cell is from a stored record, and facts were read from a server's log
        cells = (r["run_id"], str(r["created_at"])[:19].replace("T", " "), r["variant"],
                 str(r["host"] or ""), verdict, "" if ready is None else f"{ready:.1f}", facts)
        table.add_row(*(cell(c, 400) for c in cells))  # text, never markup; bounded
    return table


def run_lines(d: RunDir, rec: RunRecord, secrets: SecretRule = DEFAULT) -> list[str]:
    """One run, in full, as plain lines (a secret among the logged config ``***``)."""
    v = rec.verdict
    lines = [
        f"run {rec.run_id}  ({d.path})",
        f"variant {rec.variant_name} on {rec.host.get('name')}, created {rec.created_at}",
        f"verdict {v.kind}" + (f" {v.signature}" if v.signature else "")
        + (f" (phase: {v.phase})" if v.phase else ""),
    ]
    if v.message:
        lines.append(f"  {v.message}")
    lines += [f"  log:{e.line}: {e.text[:300]}" for e in v.evidence[:6]]
    if v.remediation:
        lines.append(f"  fix: {v.remediation}")
    for m in rec.expect:
        lines.append(f"expect FAIL {m.key}: expected {m.expected!r} "
                     f"({m.source}), log says {m.actual!r}")
    config = secrets.mask_mapping(as_object(rec.facts.get("config")))
    facts = {k: v for k, v in rec.facts.items() if k != "config" and v not in (None, {}, [])}
    if facts:
        lines.append("facts: " + ", ".join(f"{k}={val}" for k, val in facts.items()))
    if config:
        lines.append("config: " + ", ".join(f"{k}={val}" for k, val in config.items()))
    for name, p in rec.patches.items():
        roots = ", ".join(f"{r}: {s}" for r, s in as_object(p.get("roots")).items())
        lines.append(f"patch {name}: {roots}")
    origins = as_object(rec.variant.get("origins"))
    derived = {k: o for k, o in origins.items() if not str(o).endswith(tuple("0123456789"))}
    if derived:
        lines.append("derived values: " + ", ".join(f"{k} ({o})" for k, o in derived.items()))
    ready = rec.timings.get("time_to_ready_s")
    if ready is not None:
        lines.append(f"ready after {ready:.1f} s")
    lines += [f"benchmark {b}" for b in rec.benchmarks]
    if rec.log_file:
        lines.append(f"log {d.path / rec.log_file}")
    # every line quotes a stored record (a log's message, facts, names): bounded, escaped
    return [clipped(line) for line in lines]


def run_json(d: RunDir, rec: RunRecord, secrets: SecretRule) -> JsonObject:
    """``runs show --json``: the run's directory and its record, secrets masked."""
    from variantctl.secretmask import masked_record

    return {"run": {"dir": str(d.path), **masked_record(rec.to_json(), secrets)}}


def export_json(done: Exported) -> JsonObject:
    """``runs export --json``: the file written and its shape."""
    return {"file": str(done.path), "format": done.format, "per": done.per,
            "rows": done.rows, "columns": list(done.columns)}


def export_blocks(done: Exported) -> list[Block]:
    from variantctl.render.output import text

    return [text(f"wrote {done.path}: {done.rows} rows ({done.per}), "
                 f"{len(done.columns)} columns")]


def import_json(done: ImportedRun) -> JsonObject:
    """``runs import --json``: the run made, its benchmark file and what it came from."""
    imp = done.result.imported
    return {"run_id": done.run.run_id, "dir": str(done.run.path),
            "bench_file": done.bench_file, "imported": imp.to_json() if imp else None,
            "levels": len(done.result.levels)}


def import_blocks(done: ImportedRun, file: Path, tool: str) -> list[Block]:
    from variantctl.render.output import text

    imp = done.result.imported
    return [text(f"imported {file} as run {done.run.run_id} "
                 f"({done.record.variant_name}, {len(done.result.levels)} levels, "
                 f"{imp.tool if imp else tool} {imp.version if imp else ''})")]
