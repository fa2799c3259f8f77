"""``apply``, ``rollback``, ``status`` and ``patch diff``: a patchset on each host's
roots (``--host``, or ``--hosts`` in parallel, one result or error per host).

The work per root is :mod:`variantctl.targets.patchrun` (plan with the pure
``patching/`` engine, commit as one transaction); this module loads the patchset,
opens the hosts and resolves their roots.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from variantctl.env import Environment
from variantctl.errors import VariantctlError

if TYPE_CHECKING:
    from variantctl.errors import ConfigError
    from variantctl.hostmodel import Host
    from variantctl.patching.model import Patchset
    from variantctl.patching.outcomes import RunReport
    from variantctl.targets.base import Target
    from variantctl.targets.patchrecord import RecordReport
    from variantctl.targets.scan import RootScan

R = TypeVar("R")


@dataclass(frozen=True)
class PatchRequest:
    """Which patchset, on which hosts and roots (``--host``/``--hosts``/``--root``)."""

    name: str
    host_name: str = "local"
    hosts_csv: str | None = None
    roots: tuple[str, ...] = ()


def load(env: Environment, name: str) -> Patchset:
    from variantctl.config.patchsets import load_patchset

    return load_patchset(env.patchsets_dir, name)


def list_patchsets(env: Environment) -> tuple[list[Patchset], list[ConfigError]]:
    """``patch list``: every patchset that loads, and the error of every file that does
    not (reported with its file:line, not raised)."""
    from variantctl.config.patchsets import load_all_patchsets
    from variantctl.patching.model import Patchset

    items = load_all_patchsets(env.patchsets_dir)
    return ([p for p in items if isinstance(p, Patchset)],
            [p for p in items if not isinstance(p, Patchset)])


@contextmanager
def host_target(env: Environment, host_name: str, roots: Sequence[str] = ()
                ) -> Iterator[tuple[Host | None, Target]]:
    """The host (None for ``--root`` on the local machine) and an open Target for it.

    ``--root`` on the local host needs nothing from variants/hosts.yaml (no
    discovery), so neither that file nor the host models are loaded then.
    """
    if roots and host_name == "local":
        from variantctl.targets.local import LocalTarget

        yield None, LocalTarget("local")
        return
    from variantctl.config.hosts import get_host, load_hosts
    from variantctl.targets.connect import open_target

    host = get_host(load_hosts(env.project_dir), host_name)
    with open_target(host) as target:
        yield host, target


def roots_for(env: Environment, host: Host | None, target: Target, patchset: Patchset,
              roots: Sequence[str]) -> list[str]:
    """Explicit roots (local ones made absolute), else configured, else discovered."""
    if roots:
        local = host is None or host.is_local
        # local roots are resolved, so a root given twice through a symlink is one root
        return [str((env.cwd / r).resolve()) if local else r for r in roots]
    from variantctl.targets.roots import resolve_roots

    assert host is not None
    return resolve_roots(target, host, patchset.modules)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while libcst is imported and a file parsed.

    A 3,300-line file becomes ~45,000 node objects; the collector would walk them
    again and again for nothing (they hold no cycles worth collecting). Restored after.
    """
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass(frozen=True)
class HostRun(Generic[R]):
    """One host's result of a patch command, or the error that stopped that host."""

    host: str
    value: R | None = None
    error: VariantctlError | None = None


def run_per_host(
    env: Environment,
    host_name: str,
    hosts_csv: str | None,
    roots: Sequence[str],
    work: Callable[[Host | None, Target], R],
) -> list[HostRun[R]]:
    """Run ``work`` on ``--host`` (errors propagate) or on every ``--hosts`` host in parallel.

    With ``--hosts`` each host gets one connection and its own result; an
    unreachable host is reported beside the others' results.
    """
    if not hosts_csv:
        with paused_gc(), host_target(env, host_name, roots) as (host, target):
            return [HostRun(host_name, work(host, target))]
    if roots:
        raise VariantctlError("--root names directories on one host; it cannot be combined "
                              "with --hosts", hint="configure site_roots per host in hosts.yaml")
    if host_name != "local":
        raise VariantctlError("give --host or --hosts, not both")
    from variantctl.project.selection import select_hosts
    from variantctl.targets.connect import on_hosts

    hosts = select_hosts(env, None, hosts_csv)
    with paused_gc():
        outcomes = on_hosts(hosts, work)
    return [HostRun(o.host.name, o.value, o.error) for o in outcomes]


def apply_patchset(env: Environment, req: PatchRequest, *, dry_run: bool = False,
                   backup_template: str | None = None) -> list[HostRun[RunReport]]:
    """``apply`` (``patch diff``: a dry run) on every host of ``req``."""
    from variantctl.targets.patchrun import execute_apply

    ps = load(env, req.name)
    if backup_template is not None:
        from variantctl.config.patchsets import _template_problem

        problem = _template_problem(backup_template, ps.modules)
        if problem:
            raise VariantctlError(f"--backup-template: {problem}")
    return run_per_host(env, req.host_name, req.hosts_csv, req.roots,
                        lambda host, target: execute_apply(
                            target, roots_for(env, host, target, ps, req.roots), ps,
                            now=env.now(), dry_run=dry_run, backup_template=backup_template))


def rollback_patchset(env: Environment, req: PatchRequest, *, force: bool,
                      dry_run: bool) -> list[HostRun[RunReport]]:
    """``rollback`` on every host of ``req``."""
    from variantctl.targets.patchrun import execute_rollback

    ps = load(env, req.name)
    return run_per_host(env, req.host_name, req.hosts_csv, req.roots,
                        lambda host, target: execute_rollback(
                            target, roots_for(env, host, target, ps, req.roots), ps,
                            now=env.now(), force=force, dry_run=dry_run))


def patch_status(env: Environment, req: PatchRequest) -> list[HostRun[list[RunReport]]]:
    """``status``: the patchset ``req.name`` (empty: every patchset of the project) on
    every host of ``req`` (the states cached between runs in the project's cache
    directory)."""
    from variantctl.config.patchsets import patchset_names
    from variantctl.targets.patchrun import execute_status
    from variantctl.targets.statecache import JsonStateCache

    names = [req.name] if req.name else patchset_names(env.patchsets_dir)
    if not names:
        from variantctl.errors import NotFoundError

        raise NotFoundError(f"no patchsets in {env.patchsets_dir}",
                            hint="add one as patchsets/NAME.yaml (see docs/patching.md)")
    patchsets = [load(env, n) for n in names]
    cache = JsonStateCache(env.cache_dir / "patch-status.json")
    runs = run_per_host(env, req.host_name, req.hosts_csv, req.roots, lambda host, target: [
        execute_status(target, roots_for(env, host, target, ps, req.roots), ps, cache=cache)
        for ps in patchsets
    ])
    cache.save()
    return runs


def absent(report: RunReport) -> bool:
    """One of the patchset's modules exists in no root: it is for another vLLM layout
    (a module missing from only some roots is still a problem, and still counts)."""
    from variantctl.patching.states import MISSING

    modules = {f.module for f in report.files}
    return any(all(f.state == MISSING for f in report.files if f.module == m)
               for m in modules)


@dataclass(frozen=True)
class RecordRequest:
    """``patch record NAME --module M``'s options: where the pristine text is (``backup``
    on the host, or the installed release's file with ``from_pip``), what to try it on."""

    name: str
    module: str
    host_name: str = "local"
    roots: tuple[str, ...] = ()
    backup: str | None = None
    from_pip: bool = False
    check_releases: tuple[str, ...] = ()
    check_against: tuple[str, ...] = ()
    description: str = ""
    force: bool = False


def record_patchset(env: Environment, req: RecordRequest) -> RecordReport:
    """``patch record``: the hand edit of ``req.module`` on one host, recorded as
    patchsets/NAME.yaml (verified, tried on the other copies, adopted)."""
    import re

    from variantctl.config.patchsets import NAME_RE, load_patchset_file
    from variantctl.patching.model import Patchset
    from variantctl.targets.patchrecord import record_patch

    if (req.backup is None) == (not req.from_pip):
        raise VariantctlError("give the pristine text: --from BACKUP or --from-pip (one)")
    if not re.fullmatch(NAME_RE, req.name):
        raise VariantctlError(f"bad patchset name {req.name!r}",
                              hint="lowercase letters, digits, - _ . (it is the file name)")
    # the roots holding the module, found as for a patchset of it
    probe = Patchset(name=req.name, description="", modules=(req.module,), operations=(),
                     backup_template="", source="", fingerprint="")

    def work(host: Host | None, target: Target) -> RecordReport:
        backup = req.backup
        if backup is not None and (host is None or host.is_local):
            backup = str((env.cwd / backup).resolve())  # relative to where it was typed
        return record_patch(
            target, roots=roots_for(env, host, target, probe, req.roots), module=req.module,
            name=req.name, patchsets_dir=env.patchsets_dir, backup=backup,
            check_releases=req.check_releases, cache_dir=env.cache_dir,
            description=req.description, force=req.force,
            check_against=[env.cwd / f for f in req.check_against], now=env.now(),
            load_patchset_file=load_patchset_file)

    (run,) = run_per_host(env, req.host_name, None, req.roots, work)
    assert run.value is not None  # one --host: its error propagated
    return run.value


def scan_package(env: Environment, package: str, req: PatchRequest
                 ) -> list[HostRun[list[RootScan]]]:
    """``status --scan``: the files of distribution ``package`` that differ from pip's
    RECORD on every root of every host (patched by a patchset, or hand edits)."""
    from variantctl.patching.model import Patchset
    from variantctl.targets.scan import scan

    # the roots holding the package, found as for a patchset of that module
    probe = Patchset(name=package, description="", modules=(package,), operations=(),
                     backup_template="", source="", fingerprint="")
    return run_per_host(env, req.host_name, req.hosts_csv, req.roots, lambda host, target: scan(
        target, roots_for(env, host, target, probe, req.roots), package))
