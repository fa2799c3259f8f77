"""The loaded project: one value per command, built from the ``Environment``.

A command builds one :class:`Project` and passes it down (as httpie passes its
``Environment``): the variant catalog, the hosts, the patchsets, the signature
catalog (shipped + the project's ``signatures/`` + extra directories), the sweeps
and the run store are each read once, when first asked for, and the same values
serve every step of the command. So ``launch``, ``watch``, ``bench``, ``sweep``,
``report`` and ``classify`` diagnose a log with the same signature catalog, and a
sweep resolves its variants from the same catalog it takes its hosts from.

Loading is lazy on purpose: a command that never needs the variant catalog (``bench
--url``, ``report``) does not fail on a broken variant file it does not use.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from variantctl.env import Environment
from variantctl.hostmodel import Host

if TYPE_CHECKING:
    from variantctl.config.variants import Catalog as VariantCatalog
    from variantctl.launch.core import LaunchContext
    from variantctl.logs.model import Catalog as SignatureCatalog
    from variantctl.patching.model import Patchset
    from variantctl.runs.store import RunStore
    from variantctl.secretmask import SecretRule
    from variantctl.sweeps.model import SweepSpec
    from variantctl.tune.model import TuneSpec
    from variantctl.variants.model import ResolvedVariant

#: the project's own signature directory (read by every command that diagnoses a log)
SIGNATURES_DIR = "signatures"


class Project:
    """Everything a command reads from the project, each part loaded at most once."""

    def __init__(self, env: Environment, signature_dirs: Sequence[Path] | None = None):
        """``signature_dirs``: extra signature directories (``classify --signatures``);
        None takes the Environment's (``VARIANTCTL_SIGNATURES``)."""
        self.env = env
        given = env.signature_dirs if signature_dirs is None else tuple(signature_dirs)
        self._extra_signature_dirs = tuple(env.cwd / d for d in given)
        self._patchsets: dict[str, Patchset] = {}

    # -- paths ---------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        """The project directory (a clear error when there is none)."""
        return self.env.project()

    # -- variants and hosts --------------------------------------------------------------

    @cached_property
    def variants(self) -> VariantCatalog:
        """The variant catalog (``variants/*.yaml`` and ``hosts.yaml``); ConfigError on a
        broken file, empty when there is no ``variants/``."""
        from variantctl.config.variants import load_catalog

        return load_catalog(self.env.variants_dir)

    @property
    def hosts(self) -> dict[str, Host]:
        """``local`` plus ``variants/hosts.yaml``: the variant catalog's when it is loaded
        (one read of hosts.yaml per command), else the hosts file alone."""
        if "variants" in self.__dict__:
            return dict(self.variants.hosts)
        return dict(self._hosts_only)

    @cached_property
    def _hosts_only(self) -> dict[str, Host]:
        from variantctl.config.hosts import load_hosts

        return load_hosts(self.env.project_dir)

    def resolve(self, name: str, *, host: str | None = None, port: int | None = None
                ) -> ResolvedVariant:
        """Variant ``name`` resolved from the catalog (on ``host`` / ``port`` if given)."""
        from variantctl.variants.resolve import resolve

        return resolve(self.variants, name, host=host, port=port)

    @cached_property
    def secrets(self) -> SecretRule:
        """What is a secret here: every project's names plus ``secrets:`` of hosts.yaml."""
        from variantctl.config.hosts import load_secret_names
        from variantctl.secretmask import SecretRule

        return SecretRule(load_secret_names(self.env.project_dir))

    # -- patchsets -----------------------------------------------------------------------

    @cached_property
    def patchset_names(self) -> tuple[str, ...] | None:
        """Every patchset name of the project (None without a ``patchsets/``)."""
        from variantctl.config.patchsets import patchset_names

        d = self.env.patchsets_dir
        return tuple(patchset_names(d)) if d.is_dir() else None

    def patchset(self, name: str) -> Patchset:
        """Patchset ``name``, loaded once (NotFoundError / ConfigError as the loader says)."""
        if name not in self._patchsets:
            from variantctl.config.patchsets import load_patchset

            self._patchsets[name] = load_patchset(self.env.patchsets_dir, name)
        return self._patchsets[name]

    # -- signatures ----------------------------------------------------------------------

    @property
    def signature_dirs(self) -> tuple[Path, ...]:
        """The project's ``signatures/`` (when there is one), then the extra directories."""
        dirs: list[Path] = []
        own = self.env.project_dir / SIGNATURES_DIR if self.env.project_dir else None
        if own is not None and own.is_dir():
            dirs.append(own)
        dirs.extend(d for d in self._extra_signature_dirs if d not in dirs)
        return tuple(dirs)

    @cached_property
    def signatures(self) -> SignatureCatalog:
        """The one signature catalog every diagnosis of this command uses: the shipped
        signatures plus :attr:`signature_dirs` (ConfigError, file:line, for a broken one)."""
        from variantctl.config.catalog import default_catalog

        return default_catalog(self.signature_dirs)

    # -- sweeps and runs -----------------------------------------------------------------

    def sweep(self, name: str) -> SweepSpec:
        """Sweep ``name`` from the project's ``sweeps/``."""
        from variantctl.config.sweeps import load_sweep, sweeps_dir

        return load_sweep(sweeps_dir(self.root), name, display_base=self.root)

    def tune(self, name: str) -> TuneSpec:
        """Tuning spec ``name`` from the project's ``tunes/``."""
        from variantctl.config.tunes import load_tune, tunes_dir

        return load_tune(tunes_dir(self.root), name, display_base=self.root)

    @cached_property
    def runs(self) -> RunStore:
        """The project's run store (``runs/``)."""
        from variantctl.runs.store import RunStore

        return RunStore(self.env.runs_dir)

    # -- what a launch needs -------------------------------------------------------------

    def launch_context(self, requires: Iterable[str] = (),
                       hosts: dict[str, Host] | None = None) -> LaunchContext:
        """The launch context of this project for variants that require ``requires``.

        Every patchset is loaded (a required one must load; the state of the others is
        recorded with the run, and a broken file among them is an error too: it is the
        project's patch state)."""
        from variantctl.launch.core import LaunchContext

        names = self.patchset_names or ()
        patchsets = {n: self.patchset(n) for n in names}
        for n in requires:
            patchsets.setdefault(n, self.patchset(n))
        return LaunchContext(
            runs=self.runs,
            clock=self.env.clock,
            now=self.env.now,
            hosts=self.hosts if hosts is None else hosts,
            patchsets=patchsets,
            known_patchsets=tuple(names),
            signatures=self.signatures,
        )
