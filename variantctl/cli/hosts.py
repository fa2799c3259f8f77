"""``variantctl hosts [check]``: the configured hosts, and whether they are usable."""

from __future__ import annotations

import click

from variantctl.cli.common import FiniteFloat, current_env, json_option, pass_env
from variantctl.env import Environment


@click.group("hosts", invoke_without_command=True)
@json_option
@click.pass_context
def hosts(ctx: click.Context, as_json: bool) -> None:
    """List hosts (`variantctl hosts check` connects to them)."""
    if ctx.invoked_subcommand is not None:
        return
    from variantctl.cli.output import print_json
    from variantctl.project.selection import all_hosts

    env = current_env(ctx)
    known = all_hosts(env)
    rows = [{"name": h.name, "ssh": h.ssh.display if h.ssh else None, "python": h.python,
             "workdir": h.workdir, "gpu_monitor": h.gpu_monitor, "origin": h.origin}
            for h in known.values()]
    if as_json:
        print_json(env, {"hosts": rows})
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for col in ("HOST", "REACHED BY", "PYTHON", "WORKDIR", "GPU MONITOR", "DEFINED AT"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["ssh"] or "local", r["python"], r["workdir"],
                      r["gpu_monitor"] or "-", r["origin"])
    env.stdout.print(table)


@hosts.command("check")
@click.argument("names", nargs=-1)
@click.option("--host", "host", help="One host.")
@click.option("--hosts", "hosts_csv", help="Comma-separated hosts.")
@click.option("--timeout", type=FiniteFloat(min=0.5), default=10.0, show_default=True,
              help="Connect timeout in seconds.")
@json_option
@pass_env
def check(env: Environment, names: tuple[str, ...], host: str | None, hosts_csv: str | None,
          timeout: float, as_json: bool) -> None:
    """Reachability, Python version and GPU monitor of NAMES (default: every host), in parallel."""
    import time

    from variantctl.cli import finish
    from variantctl.cli.output import print_json
    from variantctl.errors import TargetError
    from variantctl.exitcodes import ExitCode
    from variantctl.project.selection import all_hosts, select_hosts
    from variantctl.targets.connect import on_hosts
    from variantctl.targets.hostcheck import check_host, unreachable

    if names:
        chosen = select_hosts(env, None, ",".join(names))
    elif host or hosts_csv:
        chosen = select_hosts(env, host, hosts_csv)
    else:
        chosen = list(all_hosts(env).values())
    t0 = time.monotonic()
    outcomes = on_hosts(chosen, lambda h, t: check_host(t, h, connected_in=0.0),
                        connect_timeout=timeout)
    results = []
    for o in outcomes:
        if o.value is not None:
            results.append(o.value)
        else:
            err = o.error if isinstance(o.error, TargetError) else TargetError(str(o.error))
            results.append(unreachable(o.host, err, time.monotonic() - t0))
    if as_json:
        print_json(env, {"hosts": [r.to_json() for r in results]})
    else:
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
        env.stdout.print(table)
    if any(not r.reachable for r in results):
        finish(ExitCode.UNREACHABLE)
    if any(not r.ok for r in results):
        finish(ExitCode.FAILED)
