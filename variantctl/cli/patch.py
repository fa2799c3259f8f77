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
def list_(env: Environment, as_json: bool) -> int:
    """Every patchset in the project; a broken file is reported with its file:line."""
    from variantctl.exitcodes import ExitCode
    from variantctl.render.patchsets import list_blocks, list_json
    from variantctl.terminal.output import emit, print_json
    from variantctl.usecases.patching import list_patchsets

    good, bad = list_patchsets(env)
    if as_json:
        print_json(env, list_json(good, bad))
    else:
        emit(env, list_blocks(good, bad, env.patchsets_dir))
    return ExitCode.USAGE if bad else ExitCode.OK


@patch.command("show")
@click.argument("name")
@json_option
@pass_env
def show(env: Environment, name: str, as_json: bool) -> None:
    """A patchset's modules and operations (from -> to)."""
    from variantctl.usecases.patching import load

    ps = load(env, name)
    if as_json:
        from variantctl.render.patchsets import patchset_json
        from variantctl.terminal.output import print_json

        print_json(env, patchset_json(ps))
        return
    from variantctl.render.patching import patchset_blocks
    from variantctl.terminal.output import emit

    emit(env, patchset_blocks(ps))


@patch.command("diff")
@click.argument("name")
@root_options
@json_option
@pass_env
def diff(env: Environment, name: str, roots: tuple[str, ...], host_name: str,
         hosts_csv: str | None, as_json: bool) -> int:
    """The unified diff `apply NAME` would write, per root (nothing is written)."""
    from variantctl.render.patchsets import diff_blocks, diff_json
    from variantctl.usecases.patching import PatchRequest, apply_patchset

    runs = apply_patchset(env, PatchRequest(name, host_name, hosts_csv, roots), dry_run=True)
    return render_per_host(env, runs, multi=bool(hosts_csv), as_json=as_json,
                           to_json=lambda r: diff_json(env.cwd, r),
                           render=lambda r: diff_blocks(env.cwd, r),
                           exit_code=lambda r: r.exit_code)


@patch.command("record")
@click.argument("name")
@click.option("--module", "module", required=True, metavar="DOTTED",
              help="The edited module, e.g. vllm.engine.arg_utils.")
@click.option("--from", "backup", metavar="BACKUP",
              help="The pristine copy kept beside the edited file (arg_utils.py.bak_…).")
@click.option("--from-pip", "from_pip", is_flag=True,
              help="Compare with the released file of the installed version (its wheel, "
                   "through pip download and pip's cache).")
@click.option("--check-releases", "releases_csv", metavar="V,…",
              help="Try the patchset on these released versions' copies of the module.")
@click.option("--check-against", "check_against", multiple=True, metavar="FILE",
              type=click.Path(dir_okay=False, path_type=str),
              help="A copy of the module from another release to try the patchset on "
                   "(repeatable; local files).")
@click.option("--description", default="", help="The patchset's description.")
@click.option("--force", is_flag=True, help="Overwrite an existing patchsets/NAME.yaml.")
@root_options
@json_option
@pass_env
def record(env: Environment, name: str, module: str, backup: str | None, from_pip: bool,
           releases_csv: str | None, check_against: tuple[str, ...], description: str,
           force: bool,
           roots: tuple[str, ...], host_name: str, hosts_csv: str | None,
           as_json: bool) -> None:
    """Record a hand edit of installed source as patchsets/NAME.yaml (structural operations).

    The edited copy is the module file beside BACKUP. The recorded patchset is
    verified (applied to BACKUP it gives the edited file byte for byte), tried on the
    other copies and --check-against files (applies / already applied / drifted), and
    the edited copy is adopted: `rollback NAME` restores BACKUP's text.
    """
    from variantctl.errors import VariantctlError
    from variantctl.usecases.patching import RecordRequest, record_patchset

    if hosts_csv:
        raise VariantctlError("patch record reads one host's copies; give --host, not --hosts")
    releases = tuple(v.strip() for v in (releases_csv or "").split(",") if v.strip())
    report = record_patchset(env, RecordRequest(
        name=name, module=module, host_name=host_name, roots=roots, backup=backup,
        from_pip=from_pip, check_releases=releases, check_against=check_against,
        description=description, force=force))
    if as_json:
        from variantctl.terminal.output import print_json

        print_json(env, report.to_json())
        return
    from variantctl.render.patchrecord import record_blocks
    from variantctl.terminal.output import emit

    emit(env, record_blocks(env.cwd, report))
