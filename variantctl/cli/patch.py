"""``variantctl patch list|show|diff``: inspect patchsets and what they would change."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.cli.patchcommon import render_per_host, root_options
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
    from variantctl.usecases.patching import load

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
    from variantctl.usecases.patching import PatchRequest, apply_patchset

    runs = apply_patchset(env, PatchRequest(name, host_name, hosts_csv, roots), dry_run=True)
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
