"""``variantctl patch list|show|diff``: inspect patchsets and what they would change."""

from __future__ import annotations

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.patchcommon import render_per_host, root_options
from variantctl.env import Environment


@click.group()
def patch() -> None:
    """List, show and diff patchsets (patchsets/*.yaml)."""


@patch.command("list")
@json_option
@pass_env
def list_(env: Environment, as_json: bool) -> None:
    """Every patchset in the project; a broken file is reported with its file:line."""
    from variantctl.cli import finish
    from variantctl.config.patchsets import load_all_patchsets
    from variantctl.patching.model import Patchset

    items = load_all_patchsets(env.patchsets_dir)
    good = [p for p in items if isinstance(p, Patchset)]
    bad = [p for p in items if not isinstance(p, Patchset)]
    if as_json:
        from variantctl.cli.output import print_json

        print_json(env, {
            "patchsets": [{"name": p.name, "description": p.description,
                           "modules": list(p.modules), "operations": len(p.operations),
                           "file": p.source} for p in good],
            "errors": [{"file": e.source, "error": e.to_json()} for e in bad],
        })
    else:
        from variantctl.render.patchsets import patchsets_table

        env.stdout.print(patchsets_table(good, env.patchsets_dir))
        for e in bad:
            env.stderr.print(f"error: {e.message}", markup=False, highlight=False,
                             soft_wrap=True)
    if bad:
        finish(2)


@patch.command("show")
@click.argument("name")
@json_option
@pass_env
def show(env: Environment, name: str, as_json: bool) -> None:
    """A patchset's modules and operations (from -> to)."""
    from variantctl.usecases.patching import load

    ps = load(env, name)
    if as_json:
        from variantctl.cli.output import print_json
        from variantctl.render.patchsets import patchset_json

        print_json(env, patchset_json(ps))
        return
    from variantctl.cli.output import emit
    from variantctl.render.patching import patchset_blocks

    emit(env, patchset_blocks(ps))


@patch.command("diff")
@click.argument("name")
@root_options
@json_option
@pass_env
def diff(env: Environment, name: str, roots: tuple[str, ...], host_name: str,
         hosts_csv: str | None, as_json: bool) -> None:
    """The unified diff `apply NAME` would write, per root (nothing is written)."""
    from variantctl.cli import finish
    from variantctl.render.patchsets import diff_blocks, diff_json
    from variantctl.usecases.patching import PatchRequest, apply_patchset

    runs = apply_patchset(env, PatchRequest(name, host_name, hosts_csv, roots), dry_run=True)
    code = render_per_host(env, runs, multi=bool(hosts_csv), as_json=as_json,
                           to_json=lambda r: diff_json(env.cwd, r),
                           render=lambda r: diff_blocks(env.cwd, r),
                           exit_code=lambda r: r.exit_code)
    if code:
        finish(code)
