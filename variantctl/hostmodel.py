"""The host model: where variants run and patches apply. Frozen, no I/O.

Built from ``hosts.yaml`` by :mod:`variantctl.config.hosts`; used by the executors
(``targets/``), launch, bench, sweeps and reports. It lives below all of them so that
none needs the YAML loader to name a host.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from variantctl.jsontypes import JsonObject


@dataclass(frozen=True)
class Vendor:
    """A vendor build of vLLM whose flags and backends differ from the upstream release.

    The seed's Iluvatar CoreX build reports 0.6.x but accepts ``--reasoning-parser``
    (upstream 0.7.3+): list such flags in ``backports`` so version rules do not
    raise false alarms. ``attention_backend_default`` is what the platform picks
    when ``VLLM_ATTENTION_BACKEND`` is not set; ``unavailable_backends`` are
    backends whose packages are missing on that build.
    """

    name: str | None = None
    backports: tuple[str, ...] = ()
    attention_backend_default: str | None = None
    unavailable_backends: tuple[str, ...] = ()

    def to_dict(self) -> JsonObject:
        return {
            "name": self.name,
            "backports": list(self.backports),
            "attention_backend_default": self.attention_backend_default,
            "unavailable_backends": list(self.unavailable_backends),
        }


@dataclass(frozen=True)
class SshSpec:
    """How to reach a host over SSH. ``alias`` is an ssh_config Host entry."""

    alias: str | None = None
    hostname: str | None = None
    user: str | None = None
    port: int | None = None
    key: str | None = None
    #: extra ssh_config file to read (tests point this at a generated config)
    config_file: str | None = None

    @property
    def display(self) -> str:
        if self.alias:
            return self.alias
        who = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{who}{self.hostname}{port}"


@dataclass(frozen=True)
class GpuSpec:
    """What a host declares about its GPUs for the report's roofline section
    (``gpu: {name, peak_bandwidth_gbs, peak_tflops, count}``); None where not given."""

    name: str | None = None
    peak_bandwidth_gbs: float | None = None
    peak_tflops: float | None = None
    count: int | None = None


@dataclass(frozen=True)
class SlurmSpec:
    """A SLURM cluster behind the host's login node (``slurm:`` in hosts.yaml): servers
    are submitted as batch jobs instead of started on the login node (docs/slurm.md)."""

    partition: str | None = None
    #: generic resources per job, e.g. ``gpu:4`` (sbatch --gres)
    gres: str | None = None
    #: time limit per job, SLURM syntax (``02:00:00``, ``1-00:00:00``)
    time: str | None = None
    account: str | None = None
    qos: str | None = None
    #: more sbatch options, passed as they are (``--exclusive``, ``--mem=64G``)
    sbatch: tuple[str, ...] = ()
    #: ``shared``: the patch roots (site_roots / the host's Python) are on the shared
    #: filesystem the login node sees, so patches are applied and checked there;
    #: ``image``: vLLM lives on the node image, which variantctl cannot patch or read
    patch_roots: str = "shared"
    #: most jobs of one sweep queued or running at once
    max_jobs: int = 4
    #: ports tried for a job's server (a port per job, so jobs sharing a node never clash)
    ports: tuple[int, int] = (8100, 8999)
    #: the cluster's slurm.conf on the login node when not the default (SLURM_CONF)
    conf: str | None = None
    #: (key, ``file:line``) of each setting hosts.yaml gave, for messages (a partition
    #: the cluster refuses names its line)
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Host:
    """A machine variants run on and patches apply to."""

    name: str
    #: None for the local machine
    ssh: SshSpec | None = None
    #: the Python that runs vLLM there
    python: str = "python3"
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: explicit patch roots (site-packages-like dirs); empty means discover from the Python
    site_roots: tuple[str, ...] = ()
    #: logs/, run/ (pid files) and scripts live under this directory
    workdir: str = "~/.variantctl"
    #: GPU monitor command (nvidia-smi, ixsmi), None when there is none
    gpu_monitor: str | None = None
    #: the vLLM version installed there (variants may override), for pre-flight rules
    vllm_version: str | None = None
    #: a vendor build's backports and backend facts (variants may override)
    vendor: Vendor | None = None
    #: declared GPU peaks (``variantctl report``'s roofline), None when not declared
    gpu: GpuSpec | None = None
    #: where this host was defined (file:line), for messages
    origin: str = "built-in"
    #: servers run as SLURM jobs submitted through this (login) host, None: started here
    slurm: SlurmSpec | None = None

    @property
    def is_local(self) -> bool:
        return self.ssh is None
