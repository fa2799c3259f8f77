"""What a person sees while a launch runs, and the verdict at the end (rich).

The content is built by functions that return text (:func:`verdict_lines`,
:func:`aftermath_lines`, :func:`progress_markup`); nothing here prints: the live
progress display the CLI hands to launch is ``terminal/launchview.ConsoleUI``, which
prints the result once launch returns (``ConsoleUI.finished``).
"""

from __future__ import annotations

import re

from variantctl.jsontypes import JsonObject
from variantctl.launch.core import LaunchResult
from variantctl.launch.servers import stop_dict
from variantctl.launch.watch import EXITED, FAILED, HANG, READY, TIMEOUT, Progress
from variantctl.logs.bounded import visible
from variantctl.runs.run import as_object, thaw

#: colour escapes (real, or vLLM's literal ``^[[0;36m`` form) are not shown in the status line
_ANSI = re.compile(r"(\x1b|\^\[)\[[0-9;]*[A-Za-z]")


def progress_markup(progress: Progress, width: int) -> str:
    """The live status line (rich markup): phase, elapsed, the log's last line cut to fit."""
    from rich.markup import escape

    phase = progress.phase or "starting"
    room = max(10, width - len(phase) - 14)
    last = visible(_ANSI.sub("", progress.last_line).strip())[:room]
    return f"[bold]{escape(phase)}[/] {progress.elapsed:5.1f}s  [dim]{escape(last)}[/]"


def phase_line(progress: Progress) -> str:
    """A phase change, as one line where no live display is possible (logs, CI, tests)."""
    return f"[{progress.elapsed:6.1f}s] phase: {progress.phase or 'starting'}"


def result_json(result: LaunchResult, exit_code: int) -> JsonObject:
    v = result.run_verdict
    watched = result.seconds is not None
    return {
        "variant": result.variant,
        "host": result.host,
        "verdict": v.kind.value,
        "exit_code": int(exit_code),
        "signature": v.signature,
        "message": v.message if watched else None,
        "remediation": v.remediation if watched else None,
        "phase": v.phase,
        "evidence": [e.to_json() for e in v.evidence],
        "seconds": round(result.seconds, 3) if result.seconds is not None else None,
        "facts": thaw(result.facts),
        "expect": [m.to_json() for m in result.expect],
        "expect_ok": result.expect_ok,
        "last_lines": list(v.last_lines[-10:]),
        "pid": result.record.pid if result.record else None,
        **({"job": result.record.job} if result.record and result.record.job else {}),
        "port": result.record.port if result.record else None,
        "log": result.record.log if result.record else None,
        "run_id": result.run_id,
        "run_dir": str(result.run_dir) if result.run_dir else None,
        "stopped": stop_dict(result.host, result.stopped) if result.stopped else None,
        "patches": {p.name: p.to_json() for p in result.patches},
        "preflight": [f.to_dict() for f in result.findings],
        "reconnects": result.reconnects,
        "notes": list(result.notes),
    }


def verdict_lines(result: LaunchResult) -> list[str]:
    """The verdict block: what happened, why, the evidence and the fix (or the facts)."""
    lines: list[str] = []
    say = lines.append
    v, seconds = result.run_verdict, result.seconds
    where = f"{result.variant} on {result.host}"
    if seconds is None:
        rec = result.record
        say(f"started {where} ({rec.ident if rec else 'pid ?'}, port {rec.port if rec else '?'}); "
            f"`variantctl watch {result.variant}` follows it")
        return lines
    if v.kind == READY:
        port = result.record.port if result.record else "?"
        say(f"READY  {where} in {seconds:.1f}s (port {port})")
        facts = thaw(result.facts)
        config = as_object(facts.get("config"))
        shown = {k: facts.get(k) for k in ("vllm_version", "engine", "attention_backend",
                                           "kv_cache_tokens", "max_concurrency")
                 if facts.get(k) is not None}
        for key in ("enforce_eager", "disable_custom_all_reduce"):
            if key in config:
                shown[key] = config[key]
        if shown:
            say("facts: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
        for m in result.expect:
            say(f"expect FAIL {m.describe()}")
        if not result.expect_ok:
            say("the server is up but does not run as the variant expects")
    elif v.kind in (FAILED, HANG):
        label = "FAILED" if v.kind == FAILED else "HANG"
        say(f"{label} {where} after {seconds:.1f}s: {v.signature or 'unknown'}"
            + (f" (phase: {v.phase})" if v.phase else ""))
        if v.message:
            say(f"  {v.message}")
        for e in v.evidence[:6]:
            say(f"  log:{e.line}: {e.text[:300]}")
        if v.remediation:
            say(f"  fix: {v.remediation}")
    elif v.kind == EXITED:
        say(f"EXITED {where} after {seconds:.1f}s with no known failure signature; "
            "last lines:")
        for line in v.last_lines[-10:]:
            say(f"  | {line[:300]}")
    elif v.kind == TIMEOUT:
        say(f"TIMEOUT {where}: no verdict after {seconds:.0f}s"
            + (f" (phase: {v.phase})" if v.phase else ""))
        for line in v.last_lines[-5:]:
            say(f"  | {line[:300]}")
    return lines


def aftermath_lines(result: LaunchResult) -> list[str]:
    """How the server was left, and where the run was archived."""
    lines: list[str] = []
    say = lines.append
    if not result.watched:
        return lines
    if result.stopped is not None:
        s = result.stopped
        how = "TERM+KILL" if s.result.killed else "TERM"
        if s.ok:
            say(f"stopped the server ({s.result.found} process(es), {how}); "
                f"port {s.record.port} is free")
        else:
            say(f"WARNING: could not fully stop the server: {list(s.result.remaining)}")
    elif result.verdict in (FAILED, HANG, TIMEOUT) and result.record:
        say(f"kept running (--keep): {result.record.ident}; `variantctl stop "
            f"{result.variant}` ends it")
    for note in result.notes:
        say(note)
    if result.run_dir:
        say(f"archived: {result.run_dir} (run {result.run_id})")
    return lines
