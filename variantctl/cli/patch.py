"""``variantctl patch list|show|diff``: inspect patchsets and what they would change."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.patchcommon import (
    load,
    render_per_host,
    root_options,
    roots_for,
    run_per_host,
)
from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.jsontypes import JsonObject
    from variantctl.patching.outcomes import RunReport
    from variantctl.render.output import Block


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
        from rich.markup import escape
        from rich.table import Table

        table = Table(title=f"patchsets in {env.patchsets_dir}", title_justify="left")
        for col in ("name", "modules", "ops", "description"):
            table.add_column(col, overflow="fold")
        for p in good:
            table.add_row(escape(p.name), escape(", ".join(p.modules)), str(len(p.operations)),
                          escape(p.description))
        env.stdout.print(table)
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
    ps = load(env, name)
    if as_json:
        from variantctl.cli.output import print_json

        print_json(env, {
            "name": ps.name, "description": ps.description, "file": ps.source,
            "modules": list(ps.modules), "backup": ps.backup_template,
            "fingerprint": ps.fingerprint,
            "operations": [{"id": o.id, "op": o.kind, "module": o.module, "where": o.describe,
                            "from": o.from_, "to": o.to, "defined_at": o.where}
                           for o in ps.operations],
        })
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
    from variantctl.targets.patchrun import execute_apply

    ps = load(env, name)
    runs = run_per_host(env, host_name, hosts_csv, roots, lambda host, target: execute_apply(
        target, roots_for(env, host, target, ps, roots), ps, now=env.now(), dry_run=True))
    code = render_per_host(env, runs, multi=bool(hosts_csv), as_json=as_json,
                           to_json=lambda r: _diff_json(env, r),
                           render=lambda r: _diff_blocks(env, r),
                           exit_code=lambda r: r.exit_code)
    if code:
        finish(code)


def _diffs(env: Environment, report: RunReport) -> dict[str, str]:
    from variantctl.patching.plan import unified_diff
    from variantctl.render.patching import display_path

    return {
        f.path: unified_diff(f.before, f.after, display_path(env.cwd, f.path))
        for f in report.files
        if f.before is not None and f.after is not None
    }


def _diff_json(env: Environment, report: RunReport) -> JsonObject:
    diffs = _diffs(env, report)
    data = report.to_json()
    data["files"] = [{**f.to_json(), "diff": diffs.get(f.path, "")} for f in report.files]
    return data


def _diff_blocks(env: Environment, report: RunReport) -> list[Block]:
    from rich.markup import escape

    from variantctl.render.output import Block
    from variantctl.render.patching import diff_block, recovered_blocks, report_blocks

    diffs = _diffs(env, report)
    out: list[Block] = []
    if not report.exit_code:
        out += recovered_blocks(report)  # report_blocks shows them otherwise
    for f in report.files:
        if f.path in diffs:
            out.append(Block(f"[bold]# {escape(f.root)}[/]", highlight=False))
            out.append(diff_block(diffs[f.path]))
        elif f.action == "unchanged":
            out.append(Block(f"# {f.root}: {f.module} already applied, no change",
                             highlight=False, markup=False))
    if report.exit_code:
        out += report_blocks(env.cwd, report)
    return out


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
    from variantctl.targets.patchrecord import record_patch

    if hosts_csv:
        raise VariantctlError("patch record reads one host's copies; give --host, not --hosts")
    if (backup is None) == (not from_pip):
        raise VariantctlError("give the pristine text: --from BACKUP or --from-pip (one)")
    releases = [v.strip() for v in (releases_csv or "").split(",") if v.strip()]
    import re

    from variantctl.config.patchsets import NAME_RE, load_patchset_file

    if not re.fullmatch(NAME_RE, name):
        raise VariantctlError(f"bad patchset name {name!r}",
                              hint="lowercase letters, digits, - _ . (it is the file name)")
    from variantctl.patching.model import Patchset

    probe = Patchset(name=name, description="", modules=(module,), operations=(),
                     backup_template="", source="", fingerprint="")
    runs = run_per_host(env, host_name, None, roots, lambda host, target: record_patch(
        target, roots=roots_for(env, host, target, probe, roots), module=module, name=name,
        patchsets_dir=env.patchsets_dir,
        backup=None if backup is None else str((env.cwd / backup).resolve())
        if host is None or host.is_local else backup,
        check_releases=releases, cache_dir=env.cache_dir,
        description=description, force=force,
        check_against=[env.cwd / f for f in check_against], now=env.now(),
        load_patchset_file=load_patchset_file))
    report = runs[0].value
    assert report is not None
    if as_json:
        from variantctl.cli.output import print_json

        print_json(env, report.to_json())
        return
    from variantctl.cli.output import emit
    from variantctl.render.patchrecord import record_blocks

    emit(env, record_blocks(env.cwd, report))
