"""``check``: the pre-flight rules over the selected variants, with what their hosts
say (each model's config.json, the profile points its vLLM lacks)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from variantctl.env import Environment

if TYPE_CHECKING:
    from variantctl.hostmodel import Host
    from variantctl.variants.model import ResolvedVariant
    from variantctl.variants.modelinfo import ModelInfo
    from variantctl.variants.rules import Finding


@dataclass(frozen=True)
class CheckReport:
    """The variants checked and the findings, in order."""

    selected: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def predicted(self) -> dict[str, str | None]:
        """Per variant, the failure its first error predicts (what a launch would hit
        first)."""
        out: dict[str, str | None] = {}
        for f in self.findings:
            if f.severity == "error":
                out.setdefault(f.variant, f.signature or f.rule)
        return out


def check_variants(env: Environment, names: tuple[str, ...], *, all_: bool,
                   connect: bool) -> CheckReport:
    """The findings of ``names`` (``all_``: the whole catalog)."""
    from variantctl.config.patchsets import patchset_names
    from variantctl.config.variants import load_catalog
    from variantctl.errors import VariantctlError
    from variantctl.variants.check import check as run_check
    from variantctl.variants.resolve import resolve

    if not names and not all_:
        raise VariantctlError("name one or more variants, or pass --all",
                              hint="variantctl list shows the catalog")
    catalog = load_catalog(env.variants_dir)
    selected = catalog.names() if all_ else list(dict.fromkeys(names))
    variants = [resolve(catalog, n) for n in selected]
    models, host_findings = host_facts(env, variants, catalog.hosts, connect=connect)
    findings = run_check(variants, patchset_names(env.patchsets_dir), catalog.hosts,
                         models=models)
    return CheckReport(tuple(selected), (*findings, *host_findings))


def host_facts(env: Environment, variants: list[ResolvedVariant],
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
