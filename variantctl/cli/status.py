"""``variantctl status [NAME]``: per root and operation, is a patchset applied?"""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.patchcommon import render_per_host, root_options
from variantctl.env import Environment


@click.command()
@click.argument("name", required=False)
@click.option("--scan", is_flag=True,
              help="Instead: list the files of distribution NAME (default vllm) that differ "
                   "from pip's RECORD, on every root: patched by a patchset, or hand edits "
                   "(with their .bak* copies).")
@root_options
@json_option
@pass_env
def status(env: Environment, name: str | None, roots: tuple[str, ...], host_name: str,
           hosts_csv: str | None, as_json: bool, scan: bool) -> int:
    """Show pristine/applied/partial/drifted per root and operation (all patchsets by default).

    Exit code 0 when every copy agrees, 3 when a copy is partial or drifted or the
    copies disagree, 2 when a copy is missing or unreadable. Without NAME, a patchset
    one of whose modules exists in no root of the host (another vLLM layout, e.g. the
    V0 profile points on a V1 install) is listed as it is without failing the command.
    """
    from variantctl.exitcodes import worst_exit_code
    from variantctl.render.patching import status_blocks
    from variantctl.usecases.patching import PatchRequest, absent, patch_status, scan_package

    if scan:
        from variantctl.render.scan import scan_blocks, scan_exit

        package = name or "vllm"
        scanned = scan_package(env, package, PatchRequest(package, host_name, hosts_csv, roots))
        return render_per_host(
            env, scanned, multi=bool(hosts_csv), as_json=as_json,
            to_json=lambda scans: {"roots": [s.to_json() for s in scans]},
            render=lambda scans: scan_blocks(env.cwd, scans),
            exit_code=scan_exit)
    runs = patch_status(env, PatchRequest(name or "", host_name, hosts_csv, roots))
    return render_per_host(
        env, runs, multi=bool(hosts_csv), as_json=as_json,
        to_json=lambda reports: {"reports": [r.to_json() for r in reports]},
        render=lambda reports: status_blocks(env.cwd, reports),
        exit_code=lambda reports: worst_exit_code(
            r.exit_code for r in reports if name or not absent(r)),
    )

