"""Rendering of ps / stop results: rich tables for people, JSON for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from variantctl.env import Environment
from variantctl.exitcodes import ExitCode
from variantctl.launch.servers import ServerStatus, StopOutcome
from variantctl.render.output import print_json
from variantctl.targets.connect import HostOutcome


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


def host_error_dict(outcome: HostOutcome[Any]) -> dict[str, Any]:
    err = outcome.error
    return {"host": outcome.host.name, "error": str(err) if err else None,
            "kind": getattr(err, "kind", None)}


def _print_host_errors(env: Environment, outcomes: Sequence[HostOutcome[Any]]) -> int:
    code = 0
    for o in outcomes:
        if o.error is not None:
            env.stderr.print(f"error: {o.error.message}", markup=False, highlight=False)
            if o.error.hint:
                env.stderr.print(f"hint: {o.error.hint}", markup=False, highlight=False)
            code = code or o.error.exit_code
    return code


def print_ps(
    env: Environment, outcomes: Sequence[HostOutcome[list[ServerStatus]]], *, as_json: bool
) -> int:
    now = env.now()
    rows: list[dict[str, Any]] = []
    for o in outcomes:
        for st in o.value or []:
            rec = st.record
            rows.append({
                "host": o.host.name,
                "variant": rec.variant,
                "pid": rec.pid,
                "port": rec.port,
                "uptime_s": uptime_seconds(rec.started_at, now) if st.alive else None,
                "state": st.state,
                "health": st.health,
                "processes": len(st.members),
                "log": rec.log,
                "started_at": rec.started_at,
            })
    if as_json:
        print_json(env, {"servers": rows,
                         "errors": [host_error_dict(o) for o in outcomes if o.error]})
    else:
        from rich.table import Table

        if rows:
            table = Table(box=None, header_style="bold")
            for col in ("HOST", "VARIANT", "PID", "PORT", "UPTIME", "STATE", "PROCS", "LOG"):
                table.add_column(col, overflow="fold")
            for r in rows:
                table.add_row(r["host"], r["variant"], str(r["pid"]), str(r["port"]),
                              human_duration(r["uptime_s"]) if r["uptime_s"] is not None else "-",
                              r["state"], str(r["processes"]), r["log"])
            env.stdout.print(table)
        elif not any(o.error for o in outcomes):
            names = ", ".join(o.host.name for o in outcomes)
            env.stdout.print(f"no servers started by variantctl on {names}", highlight=False)
    return _print_host_errors(env, outcomes)


def stop_dict(host: str, s: StopOutcome) -> dict[str, Any]:
    return {
        "host": host,
        "variant": s.record.variant,
        "pid": s.record.pid,
        "port": s.record.port,
        "stale": s.was_stale,
        "processes": s.result.found,
        "killed": s.result.killed,
        "remaining": list(s.result.remaining),
        "port_free": s.port_free,
        "seconds": round(s.result.seconds, 3),
        "ok": s.ok,
    }


def print_stops(
    env: Environment, outcomes: Sequence[HostOutcome[list[StopOutcome]]], variant: str | None,
    *, as_json: bool,
) -> int:
    code = 0
    items = [(o.host.name, s) for o in outcomes for s in (o.value or [])]
    if any(not s.ok for _, s in items):
        code = ExitCode.FAILED
    if as_json:
        print_json(env, {"stopped": [stop_dict(h, s) for h, s in items],
                         "errors": [host_error_dict(o) for o in outcomes if o.error]})
    else:
        for h, s in items:
            r = s.record
            where = f"{r.variant} on {h} (pid {r.pid}, port {r.port})"
            if s.was_stale:
                line = f"{where}: was not running (stale record removed)"
            elif s.ok:
                how = "TERM, then KILL" if s.result.killed else "TERM"
                line = (f"stopped {where}: {s.result.found} process(es), {how}, "
                        f"{s.result.seconds:.1f}s; port {r.port} is free")
            elif s.result.remaining:
                line = (f"FAILED to stop {where}: still running: "
                        f"{' '.join(map(str, s.result.remaining))}")
            else:
                line = f"stopped {where}, but port {r.port} is still in use by another process"
            env.stdout.print(line, markup=False, highlight=False, soft_wrap=True)
        for o in outcomes:
            if o.error is None and not o.value:
                what = f"{variant} is" if variant else "no servers are"
                msg = (f"{what} not running on {o.host.name}" if variant
                       else f"{what} running on {o.host.name}")
                env.stdout.print(msg, markup=False, highlight=False, soft_wrap=True)
    return _print_host_errors(env, outcomes) or code
