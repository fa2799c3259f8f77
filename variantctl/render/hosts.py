"""``hosts``, ``hosts check`` and ``locate`` output, and a failed host's error lines
(returns, never prints)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from variantctl.jsontypes import Json, JsonObject
from variantctl.render.output import Block, cell, error_lines

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from variantctl.errors import VariantctlError
    from variantctl.hostmodel import Host
    from variantctl.targets.connect import HostOutcome
    from variantctl.targets.hostcheck import HostCheck
    from variantctl.targets.locate import Located

R = TypeVar("R")


def host_rows(known: Mapping[str, Host]) -> list[JsonObject]:
    """One object per configured host (``hosts --json``)."""
    return [{"name": h.name, "ssh": h.ssh.display if h.ssh else None, "python": h.python,
             "workdir": h.workdir, "gpu_monitor": h.gpu_monitor, "origin": h.origin}
            for h in known.values()]


def hosts_table(rows: Sequence[JsonObject]) -> Table:
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for col in ("HOST", "REACHED BY", "PYTHON", "WORKDIR", "GPU MONITOR", "DEFINED AT"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(_cell(r["name"]), _cell(r["ssh"] or "local"), _cell(r["python"]),
                      _cell(r["workdir"]), _cell(r["gpu_monitor"] or "-"), _cell(r["origin"]))
    return table


def _cell(value: object) -> Text:
    # from hosts.yaml: literal (never markup), escaped, bounded
    return cell(value, 400)


def check_table(results: Sequence[HostCheck]) -> Table:
    """``hosts check``: one row per host."""
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for col in ("HOST", "STATUS", "PYTHON", "GPU MONITOR", "TIME", "PROBLEMS"):
        table.add_column(col, overflow="fold")
    for r in results:
        status = "ok" if r.ok else ("unreachable" if not r.reachable else "problems")
        monitor = "-" if r.gpu_monitor is None else (
            f"{r.gpu_monitor} ({'found' if r.gpu_monitor_found else 'missing'})")
        table.add_row(r.host, status, r.python_version or "-", monitor, f"{r.seconds:.2f}s",
                      "; ".join(r.problems))
    return table


def located_blocks(found: Located) -> list[Block]:
    """A host's Python, then each copy of the module (``*`` marks the imported one)."""
    from variantctl.render.output import text

    out = [text(f"{found.host}: {found.python} (Python {found.version})")]
    for c in found.copies:
        mark = "*" if c.imported else " "
        out.append(text(f" {mark} {c.path}  sha256:{c.sha256[:16]}  {c.size} bytes"))
    if found.imported:
        out.append(text(f"   (* = imported; {len(found.copies)} cop"
                        f"{'y' if len(found.copies) == 1 else 'ies'} on the path)"))
    return out


def locate_json(outcomes: Sequence[HostOutcome[Located]]) -> JsonObject:
    """``locate --json``: each host's copies, and the hosts that failed."""
    return {"results": [o.value.to_json() for o in outcomes if o.value],
            "errors": [{"host": o.host.name, "error": o.error.to_json()}
                       for o in outcomes if o.error]}


def locate_blocks(module: str, outcomes: Sequence[HostOutcome[Located]]) -> list[Block]:
    """``locate``: per host its copies, or that the module is not on its path (stderr)."""
    from variantctl.render.output import text

    out: list[Block] = []
    for o in outcomes:
        found = o.value
        if found is None:
            continue
        if not found.copies:
            out.append(text(f"{module} is not on the path of {found.python} on "
                            f"{found.host}", err=True))
        else:
            out += located_blocks(found)
    return out


def host_error_blocks(host: str, error: VariantctlError) -> list[Block]:
    """``error: HOST: …`` (and its ``hint:``) for a host that failed.

    As in TargetError, a remote host is named first and the local machine is not (its
    errors name the file). Most remote errors already start with the name; the others
    (a ledger refused on that host, say) get it, so no line leaves the host to guess.
    """
    message = error.message
    if host != "local" and not message.startswith(f"{host}: "):
        message = f"{host}: {message}"
    return error_lines(message, error.hint)


def host_errors_blocks(failed: Iterable[tuple[str, VariantctlError | None]]) -> list[Block]:
    """The error lines of every ``(host, error)`` pair that has one: each failed host is
    reported the same way by every ``--hosts`` command (``error:``/``hint:`` on stderr,
    the host named)."""
    return [b for host, error in failed if error is not None
            for b in host_error_blocks(host, error)]


def per_host_json(runs: Sequence[tuple[str, R | None, VariantctlError | None]],
                  to_json: Callable[[R], Json]) -> JsonObject:
    """``--hosts --json``: one result per host, each the object the single-host command
    prints, or its error."""
    return {"hosts": [
        {"host": host, "result": to_json(value) if value is not None else None,
         "error": error.to_json() if error else None}
        for host, value, error in runs
    ]}


def per_host_blocks(runs: Sequence[tuple[str, R | None, VariantctlError | None]],
                    render: Callable[[R], list[Block]], *, results: bool) -> list[Block]:
    """``--hosts``: per host a header and its result (``results``: not under --json),
    or its error (always, on stderr)."""
    from rich.rule import Rule

    out: list[Block] = []
    for host, value, error in runs:
        if results:
            out.append(Block(Rule(f"host {host}", align="left")))
        if error is not None:
            out += host_error_blocks(host, error)
        elif value is not None and results:
            out += render(value)
    return out
