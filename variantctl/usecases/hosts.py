"""``hosts check`` and ``locate``: what each chosen host says, in parallel (a host
that cannot be reached is its own result or error, never the others' end)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.targets.connect import HostOutcome
    from variantctl.targets.hostcheck import HostCheck
    from variantctl.targets.locate import Located


def check_hosts(env: Environment, names: tuple[str, ...], host: str | None,
                hosts_csv: str | None, *, timeout: float) -> list[HostCheck]:
    """Reachability, Python and GPU monitor of the hosts named (default: every host)."""
    import time

    from variantctl.errors import TargetError
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
    return results


def locate_module(env: Environment, module: str, host: str | None, hosts_csv: str | None
                  ) -> list[HostOutcome[Located]]:
    """Every copy of ``module`` on each host's Python path, and the one imported."""
    import re

    from variantctl.errors import VariantctlError
    from variantctl.project.selection import select_hosts
    from variantctl.targets.connect import on_hosts
    from variantctl.targets.locate import locate

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", module):
        raise VariantctlError(f"{module!r} is not a dotted module name",
                              hint="e.g. vllm.engine.arg_utils")
    return on_hosts(select_hosts(env, host, hosts_csv), lambda h, t: locate(t, h, module))
