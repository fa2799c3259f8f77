"""``variantctl check NAME… | --all``: pre-flight rules, each naming the failure it predicts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment
from variantctl.exitcodes import ExitCode

if TYPE_CHECKING:
    from collections.abc import Mapping

    from variantctl.hostmodel import Host
    from variantctl.variants.model import ResolvedVariant
    from variantctl.variants.modelinfo import ModelInfo
    from variantctl.variants.rules import Finding


@click.command("check")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Check every variant of the catalog.")
@click.option("--connect", is_flag=True,
              help="Also read the SSH hosts (the model's config.json, the profile points "
                   "of their vLLM); without it only this machine's hosts are read.")
@json_option
@pass_env
def check(env: Environment, names: tuple[str, ...], all_: bool, connect: bool,
          as_json: bool) -> None:
    """Predict startup failures of variants before launching them (non-zero on errors)."""
    from variantctl.cli import finish
    from variantctl.config.patchsets import patchset_names
    from variantctl.config.variants import load_catalog
    from variantctl.errors import VariantctlError
    from variantctl.variants.check import check as run_check
    from variantctl.variants.check import has_errors
    from variantctl.variants.resolve import resolve

    if not names and not all_:
        raise VariantctlError("name one or more variants, or pass --all",
                              hint="variantctl list shows the catalog")
    catalog = load_catalog(env.variants_dir)
    selected = catalog.names() if all_ else list(dict.fromkeys(names))
    variants = [resolve(catalog, n) for n in selected]
    models, host_findings = _host_facts(env, variants, catalog.hosts, connect=connect)
    findings = run_check(variants, patchset_names(env.patchsets_dir), catalog.hosts,
                         models=models)
    findings += host_findings
    # the first error of a variant is the failure a launch would hit first
    predicted: dict[str, str | None] = {}
    for f in findings:
        if f.severity == "error":
            predicted.setdefault(f.variant, f.signature or f.rule)
    if as_json:
        from variantctl.cli.output import print_json

        print_json(env, {"variants": selected, "predicted": predicted,
                         "findings": [f.to_dict() for f in findings]})
    else:
        _print(env, findings, len(selected))
    if has_errors(findings):
        finish(ExitCode.FAILED)


def _host_facts(env: Environment, variants: list[ResolvedVariant],
                hosts: Mapping[str, Host], *, connect: bool
                ) -> tuple[dict[str, ModelInfo], list[Finding]]:
    """What the hosts say: each variant's model config.json and the profile points its
    host's vLLM lacks. Hosts on this machine always; SSH hosts only with ``--connect``
    (one connection each, in parallel): without it ``check`` never connects, and
    ``launch`` reads the model there before starting it."""
    from variantctl.targets.base import Target
    from variantctl.targets.connect import on_hosts
    from variantctl.targets.local import LocalTarget
    from variantctl.targets.modelfacts import read_model_info
    from variantctl.usecases.profiled import profile_point_findings
    from variantctl.variants.rules import Finding

    by_host: dict[str, list[ResolvedVariant]] = {}
    for v in variants:
        if v.host in hosts:
            by_host.setdefault(v.host, []).append(v)

    def work(host: Host, target: Target) -> tuple[dict[str, ModelInfo], list[Finding]]:
        models: dict[str, ModelInfo] = {}
        for v in by_host[host.name]:
            info = read_model_info(target, v.model)
            if info is not None:
                models[v.name] = info
        return models, profile_point_findings(env, target, host, by_host[host.name])

    models: dict[str, ModelInfo] = {}
    findings: list[Finding] = []
    results = [work(hosts[h], LocalTarget(h)) for h in by_host if hosts[h].is_local]
    remote = [hosts[h] for h in by_host if not hosts[h].is_local] if connect else []
    for outcome in on_hosts(remote, work):
        if outcome.value is not None:
            results.append(outcome.value)
        elif outcome.error is not None:
            for v in by_host[outcome.host.name]:
                findings.append(Finding(
                    "warning", "host-unreadable", v.name, None,
                    f"--connect: host {outcome.host.name} could not be read, so its "
                    f"model and vLLM were not checked: {outcome.error.message}"))
    for m, f in results:
        models.update(m)
        findings.extend(f)
    return models, findings


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _print(env: Environment, findings: list[Finding], count: int) -> None:
    # one finding per block, compiler style: easy to read at any width and to grep
    out = env.stdout
    for f in findings:
        style = "red" if f.severity == "error" else "yellow"
        predicts = f"predicts {f.signature}" if f.signature else "no log signature"
        rule = escape(f"[{f.rule}]")
        out.print(f"[bold]{escape(f.variant)}[/]: [{style}]{f.severity}[/] {rule} "
                  f"{escape(predicts)}", highlight=False)
        out.print("  " + f.message, markup=False, highlight=False)
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    out.print(f"{count} variant(s) checked: {errors} error(s), {warnings} warning(s)",
              markup=False, highlight=False)
