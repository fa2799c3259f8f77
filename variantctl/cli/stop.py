"""``variantctl stop``: TERM the server's process group, KILL after a grace period, verify."""

from __future__ import annotations

import click

from variantctl.cli.common import FiniteFloat, json_option, pass_env
from variantctl.env import Environment


@click.command("stop")
@click.argument("variant", required=False)
@click.option("--all", "stop_all", is_flag=True, help="Stop every server variantctl started.")
@click.option("--host", "host", help="Host the server runs on (default: the variant's host).")
@click.option("--hosts", "hosts", help="Comma-separated hosts, in parallel.")
@click.option("--grace", type=FiniteFloat(min=0), default=10.0, show_default=True,
              help="Seconds between TERM and KILL.")
@json_option
@pass_env
def stop(env: Environment, variant: str | None, stop_all: bool, host: str | None,
         hosts: str | None, grace: float, as_json: bool) -> None:
    """Stop VARIANT (or --all) and check no process remains and the port is free."""
    from variantctl.cli import finish
    from variantctl.cli.hostresults import print_host_errors, worst_exit_code
    from variantctl.cli.output import emit, print_json
    from variantctl.errors import VariantctlError
    from variantctl.exitcodes import ExitCode
    from variantctl.launch.launcher import stop_servers
    from variantctl.project.loaded import Project
    from variantctl.project.selection import select_hosts, variant_host
    from variantctl.render.servers import stop_blocks, stops_json
    from variantctl.targets.connect import on_hosts

    if bool(variant) == stop_all:
        raise VariantctlError("give a VARIANT or --all", hint="variantctl ps lists them")
    default = (variant_host(Project(env), variant) if variant else None) or "local"
    chosen = select_hosts(env, host, hosts, default=default)
    outcomes = on_hosts(chosen, lambda h, t: stop_servers(t, h, variant, grace=grace))
    if variant and not any(o.value or o.error for o in outcomes):
        # nothing recorded under that name: fine for a known variant (already
        # stopped), bad input for a name that is no variant at all (a typo)
        refuse_unknown_variant(env, variant, [h.name for h in chosen])
    if as_json:
        print_json(env, stops_json(outcomes))
    else:
        emit(env, stop_blocks(outcomes, variant))
    failed: list[int] = [ExitCode.FAILED for o in outcomes if any(not s.ok for s in o.value or [])]
    code = worst_exit_code(
        print_host_errors(env, [(o.host.name, o.error) for o in outcomes]) + failed)
    if code:
        finish(code)


def refuse_unknown_variant(env: Environment, variant: str, hosts: list[str]) -> None:
    """NotFoundError (exit 2) unless ``variant`` is in the catalog.

    A catalog that cannot be read proves nothing either way, so it refuses nothing:
    stopping must keep working while a variant file is being edited.
    """
    from variantctl.config.schema import did_you_mean
    from variantctl.config.variants import load_catalog
    from variantctl.errors import NotFoundError, VariantctlError

    try:
        names = load_catalog(env.variants_dir).names()
    except VariantctlError:
        return
    if variant in names:
        return
    raise NotFoundError(
        f"unknown variant {variant!r}: not in {env.variants_dir} and no server of that name "
        f"is recorded on {', '.join(hosts)}",
        hint=did_you_mean(variant, names) or "variantctl ps lists the running servers",
    )
