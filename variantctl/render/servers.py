"""Rendering of ps / stop results: rich tables for people, JSON for scripts.

The functions return what to show; ``cli/ps.py`` and ``cli/stop.py`` print it, and
the hosts that failed through the one per-host error path
(render/hosts.host_errors_blocks).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, TypeVar

from variantctl.jsontypes import JsonObject
from variantctl.launch.servers import ServerStatus, StopOutcome, stop_dict
from variantctl.render.output import Block, cell, text
from variantctl.targets.connect import HostOutcome

T = TypeVar("T")


def uptime_seconds(started_at: str, now: datetime) -> float | None:
    try:
        return (now - datetime.fromisoformat(started_at)).total_seconds()
    except (ValueError, TypeError):
        return None


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def host_error_dict(outcome: HostOutcome[T]) -> JsonObject:
    err = outcome.error
    return {"host": outcome.host.name, "error": err.to_json() if err else None}


def ps_rows(outcomes: Sequence[HostOutcome[list[ServerStatus]]], now: datetime
            ) -> list[dict[str, Any]]:
    """One row per recorded server (``ps --json`` lists them under ``servers``)."""
    rows: list[dict[str, Any]] = []
    for o in outcomes:
        for st in o.value or []:
            rec = st.record
            rows.append({
                # the host it was launched on (``cpu``), which may share its work
                # directory with the one asked (``local``, the default)
                "host": rec.host or o.host.name,
                **({"listed_by": o.host.name} if rec.host and rec.host != o.host.name
                   else {}),
                "variant": rec.variant,
                "pid": rec.pid,
                "port": rec.port,
                "uptime_s": uptime_seconds(rec.started_at, now) if st.alive else None,
                "state": st.state,
                "health": st.health,
                **({"foreign_listener": st.foreign} if st.foreign is not None else {}),
                "processes": len(st.members),
                "log": rec.log,
                "started_at": rec.started_at,
                # a SLURM job: its id is the pid column; state, reason and node from SLURM
                **({"job": {"id": st.job.job_id, "state": st.job.state, "reason": st.job.reason,
                            "node": st.job.node}} if st.job is not None else {}),
            })
    return rows


def ps_json(outcomes: Sequence[HostOutcome[list[ServerStatus]]], now: datetime
            ) -> JsonObject:
    return {"servers": ps_rows(outcomes, now),
            "errors": [host_error_dict(o) for o in outcomes if o.error]}


def ps_blocks(outcomes: Sequence[HostOutcome[list[ServerStatus]]], now: datetime
              ) -> list[Block]:
    """The servers table, or a line saying there are none (hosts that failed aside)."""
    rows = ps_rows(outcomes, now)
    if rows:
        from rich.table import Table

        table = Table(box=None, header_style="bold")
        for col in ("HOST", "VARIANT", "PID", "PORT", "UPTIME", "STATE", "PROCS", "LOG"):
            table.add_column(col, overflow="fold")
        for r in rows:
            # a SLURM job's id in the PID column (its record has no pid)
            ident = r["pid"] if r["pid"] is not None else (r.get("job") or {}).get("id")
            # read from server records and hosts: literal, escaped, bounded
            table.add_row(cell(r["host"]), cell(r["variant"]), cell(ident), cell(r["port"]),
                          human_duration(r["uptime_s"]) if r["uptime_s"] is not None else "-",
                          cell(_state_cell(r), 400), cell(r["processes"]), cell(r["log"], 400))
        return [Block(table)]
    if any(o.error for o in outcomes):
        return []
    names = ", ".join(o.host.name for o in outcomes)
    return [Block(f"no servers started by variantctl on {names}", highlight=False)]


def _state_cell(row: dict[str, Any]) -> str:
    """The state, with a SLURM job's queue reason or node (``pending (Resources)``)."""
    job = row.get("job")
    if row.get("foreign_listener"):
        return f"{row['state']} (served by {row['foreign_listener']})"
    if job is None:
        return str(row["state"])
    if row["state"] == "pending":
        return f"pending ({job['reason']})" if job["reason"] else "pending"
    if row["state"] == "stale":
        return f"stale (job {job['state']})"
    return f"{row['state']} on {job['node']}" if job["node"] else str(row["state"])


def stops_json(outcomes: Sequence[HostOutcome[list[StopOutcome]]]) -> JsonObject:
    items = [(o.host.name, s) for o in outcomes for s in (o.value or [])]
    return {"stopped": [stop_dict(h, s) for h, s in items],
            "errors": [host_error_dict(o) for o in outcomes if o.error]}


def stop_blocks(outcomes: Sequence[HostOutcome[list[StopOutcome]]], variant: str | None
                ) -> list[Block]:
    """One line per server stopped (or not), then the hosts that had none to stop."""
    out: list[Block] = []
    for o in outcomes:
        for s in o.value or []:
            out.append(text(_stop_line(o.host.name, s)))
    for o in outcomes:
        if o.error is None and not o.value:
            what = f"{variant} is" if variant else "no servers are"
            out.append(text(f"{what} not running on {o.host.name}" if variant
                            else f"{what} running on {o.host.name}"))
    return out


def _stop_line(host: str, s: StopOutcome) -> str:
    r = s.record
    where = f"{r.variant} on {host} ({r.ident}, port {r.port})"
    occupant = s.result.occupant
    if occupant is not None and occupant.foreign:
        return (f"{where}: the recorded server is gone ({occupant.describe()}); "
                "nothing signalled, record removed")
    if occupant is not None:
        return (f"NOT stopped {where}: the record has no process identity (written by an "
                f"older variantctl), so {occupant.describe()} cannot be verified as the "
                f"server; nothing signalled, record kept (if it is the server: "
                f"kill -TERM -- -{r.pid}, then stop again)")
    if s.was_stale:
        return f"{where}: was not running (stale record removed)"
    if s.ok:
        how = "TERM, then KILL" if s.result.killed else "TERM"
        return (f"stopped {where}: {s.result.found} process(es), {how}, "
                f"{s.result.seconds:.1f}s; port {r.port} is free")
    if s.result.remaining:
        return (f"FAILED to stop {where}: still running: "
                f"{' '.join(map(str, s.result.remaining))}")
    return f"stopped {where}, but port {r.port} is still in use by another process"
