"""Hosts: how to reach a machine, its Python, environment, patch roots and work dir.

``variants/hosts.yaml`` maps a name to a host. A built-in ``local`` host needs
no file (it may be overridden there, e.g. to set PYTHONPATH or site roots).

Values may reference the *local* environment as ``${NAME}`` or
``${NAME:-default}`` (e.g. ``python: ${VARIANTCTL_VLLM_PYTHON:-python3}``), so one
file serves several machines; expansion happens here, at load time.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TypedDict

from variantctl.config.schema import (
    Check,
    Enum,
    Field,
    Float,
    Int,
    ListOf,
    MapOf,
    Nullable,
    Str,
    Struct,
    did_you_mean,
)
from variantctl.config.yamlload import Document, KeyPath, load_yaml_file
from variantctl.errors import NotFoundError
from variantctl.hostmodel import GpuSpec, Host, SlurmSpec, SshSpec, Vendor
from variantctl.variants.flags import (
    VERSION_PATTERN,
    flag_problem,
    normalise_backend,
    normalise_flag,
)

ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_EXPAND = re.compile(r"\$\{(" + ENV_NAME + r")(?::-([^}]*))?\}")

HOSTS_FILE = "hosts.yaml"
#: the top-level key of hosts.yaml that is not a host: the project's own secret names
#: (shell patterns too), beside the ones every project has (variantctl.secretmask)
SECRETS_KEY = "secrets"
_SECRETS = ListOf(Str(pattern=r"[A-Za-z0-9_*?\[\]-]+",
                      what="an environment variable or argument name (shell patterns allowed)"))


def builtin_local() -> Host:
    """This machine, running the Python variantctl runs under unless configured otherwise."""
    return Host(
        name="local",
        python=sys.executable,
        workdir=str(Path.home() / ".variantctl"),
    )


def expand_vars(value: str, path: KeyPath, doc: Document, environ: Mapping[str, str]) -> str:
    """Expand ``${NAME}`` / ``${NAME:-default}`` from the local environment."""

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in environ and environ[name] != "":
            return environ[name]
        if default is not None:
            return default
        raise doc.error(path, f"environment variable {name} is not set",
                        hint=f"set it or write ${{{name}:-default}}")

    return _EXPAND.sub(sub, value)


class SshData(TypedDict, total=False):
    """A checked ``ssh:`` mapping."""

    alias: str
    host: str
    user: str
    port: int
    key: str
    config: str


class VendorData(TypedDict, total=False):
    """A checked ``vendor:`` mapping (hosts.yaml and variant files)."""

    name: str
    backports: tuple[str, ...]
    attention_backend_default: str
    unavailable_backends: tuple[str, ...]


class SlurmData(TypedDict, total=False):
    """A checked ``slurm:`` mapping."""

    partition: str
    gres: str
    time: str
    account: str
    qos: str
    sbatch: tuple[str, ...]
    patch_roots: str
    max_jobs: int
    ports: tuple[int, ...]
    conf: str


class GpuData(TypedDict, total=False):
    """A checked ``gpu:`` mapping."""

    name: str
    peak_bandwidth_gbs: float
    peak_tflops: float
    count: int


class HostData(TypedDict, total=False):
    """One checked host of hosts.yaml."""

    ssh: SshData
    python: str
    env: dict[str, str]
    site_roots: tuple[str, ...]
    workdir: str
    gpu_monitor: str | None
    description: str
    vllm_version: str
    vendor: VendorData
    gpu: GpuData
    slurm: SlurmData


_SSH = Struct(
    "ssh",
    {
        "alias": Field(Str()),
        "host": Field(Str()),
        "user": Field(Str()),
        "port": Field(Int(min=1, max=65535)),
        "key": Field(Str()),
        "config": Field(Str()),
    },
    shape=SshData,
)

def _flag_list_problem(flags: tuple[str, ...]) -> str | None:
    for f in flags:
        problem = flag_problem(normalise_flag(f))
        if problem:
            return problem
    return None


_BACKEND = Str(pattern=r"[A-Za-z][A-Za-z0-9_-]*", what="an attention backend name")

#: shared by hosts.yaml and variant files
_BACKPORTS = Check(ListOf(Str(), single=True), _flag_list_problem)
VENDOR = Struct(
    "vendor",
    {
        "name": Field(Str()),
        "backports": Field(_BACKPORTS),
        "attention_backend_default": Field(_BACKEND),
        "unavailable_backends": Field(ListOf(_BACKEND, single=True)),
    },
    shape=VendorData,
)

VLLM_VERSION = Str(pattern=VERSION_PATTERN, what="a vLLM version such as 0.6.3")


def vendor_from(raw: VendorData | None, base: Vendor | None = None) -> Vendor | None:
    """A Vendor from a checked ``vendor:`` mapping, keys not given taken from ``base``."""
    if raw is None:
        return base
    b = base or Vendor()
    default = raw.get("attention_backend_default")
    return Vendor(
        name=raw.get("name", b.name),
        backports=tuple(normalise_flag(f) for f in raw["backports"])
        if "backports" in raw else b.backports,
        attention_backend_default=normalise_backend(default)
        if default else b.attention_backend_default,
        unavailable_backends=tuple(normalise_backend(x) for x in raw["unavailable_backends"])
        if "unavailable_backends" in raw else b.unavailable_backends,
    )


def _port_range_problem(value: tuple[int, ...]) -> str | None:
    if len(value) != 2 or value[0] > value[1]:
        return "expected [FIRST, LAST] with FIRST <= LAST"
    return None


_PORTS = Check(ListOf(Int(min=1024, max=65535)), _port_range_problem)
_SLURM = Struct(
    "slurm",
    {
        "partition": Field(Str()),
        "gres": Field(Str(pattern=r"[A-Za-z0-9_.:,/-]+", what="a gres such as gpu:4")),
        "time": Field(Str(pattern=r"[0-9][0-9:-]*", what="a SLURM time such as 02:00:00")),
        "account": Field(Str()),
        "qos": Field(Str()),
        "sbatch": Field(ListOf(Str(pattern=r"-.+", what="an sbatch option such as --mem=64G"),
                               single=True)),
        "patch_roots": Field(Enum("shared", "image")),
        "max_jobs": Field(Int(min=1, max=10000)),
        "ports": Field(_PORTS),
        "conf": Field(Str()),
    },
    shape=SlurmData,
)

_HOST = Struct(
    "host",
    {
        "ssh": Field(_SSH),
        "python": Field(Str()),
        "env": Field(MapOf(Str(pattern=ENV_NAME, what="an environment variable name"),
                           Str(allow_empty=True))),
        "site_roots": Field(ListOf(Str())),
        "workdir": Field(Str()),
        "gpu_monitor": Field(Nullable(Str())),
        "description": Field(Str()),
        "vllm_version": Field(VLLM_VERSION),
        "vendor": Field(VENDOR),
        "gpu": Field(Struct("gpu", {
            "name": Field(Str()),
            "peak_bandwidth_gbs": Field(Float(min=0.001, finite=True)),
            "peak_tflops": Field(Float(min=0.001, finite=True)),
            "count": Field(Int(min=1)),
        }, shape=GpuData)),
        "slurm": Field(_SLURM),
    },
    shape=HostData,
)

_HOSTS = MapOf(Str(pattern=r"[A-Za-z0-9][A-Za-z0-9_.-]*", what="a host name"), _HOST)


def load_hosts(
    project_dir: Path | None, environ: Mapping[str, str] | None = None
) -> dict[str, Host]:
    """All hosts: the built-in ``local`` plus ``<project>/variants/hosts.yaml`` if present."""
    environ = os.environ if environ is None else environ
    hosts = {"local": builtin_local()}
    if project_dir is None:
        return hosts
    return load_hosts_file(project_dir / "variants" / HOSTS_FILE, environ)


def load_hosts_file(
    path: Path, environ: Mapping[str, str] | None = None, *, display: str | None = None
) -> dict[str, Host]:
    """The built-in ``local`` plus the hosts of ``path`` (only ``local`` if it does not exist)."""
    environ = os.environ if environ is None else environ
    hosts = {"local": builtin_local()}
    if not path.exists():
        return hosts
    doc = load_yaml_file(path, display=display)
    if doc.data is None:
        return hosts
    raw = doc.data
    if isinstance(raw, dict) and SECRETS_KEY in raw:
        _SECRETS.check(raw[SECRETS_KEY], (SECRETS_KEY,), doc)
        raw = {k: v for k, v in raw.items() if k != SECRETS_KEY}
    data = _HOSTS.check(raw, (), doc)
    for name, raw in data.items():
        hosts[name] = _host_from(name, raw, doc, environ, hosts.get(name))
    return hosts


def load_secret_names(project_dir: Path | None) -> tuple[str, ...]:
    """The project's ``secrets:`` list in ``variants/hosts.yaml`` (empty without one)."""
    path = None if project_dir is None else project_dir / "variants" / HOSTS_FILE
    if path is None or not path.exists():
        return ()
    doc = load_yaml_file(path)
    if not isinstance(doc.data, dict) or SECRETS_KEY not in doc.data:
        return ()
    return tuple(_SECRETS.check(doc.data[SECRETS_KEY], (SECRETS_KEY,), doc))


def _host_from(
    name: str, raw: HostData, doc: Document, environ: Mapping[str, str], base: Host | None
) -> Host:
    def ex(key: str, value: str, *sub: str | int) -> str:
        return expand_vars(value, (name, key, *sub), doc, environ)

    ssh = None
    if "ssh" in raw:
        s = raw["ssh"]
        if not s.get("alias") and not s.get("host"):
            raise doc.error((name, "ssh"), "ssh needs `alias` (an ssh_config Host) or `host`")
        ssh = SshSpec(
            alias=s.get("alias"),
            hostname=s.get("host"),
            user=s.get("user"),
            port=s.get("port"),
            key=ex("ssh", s["key"], "key") if s.get("key") else None,
            config_file=ex("ssh", s["config"], "config") if s.get("config") else None,
        )
    elif name != "local":
        # a host without ssh runs here: useful for a second local Python (the vLLM CPU venv)
        ssh = None
    default = base or (builtin_local() if ssh is None else Host(name=name))

    def home(value: str) -> str:
        # `~` means this machine's home only for a host without ssh; a remote `~` is
        # left for the remote shell (rendered scripts turn it into "$HOME")
        return os.path.expanduser(value) if ssh is None else value

    # jobs are submitted from this host: usually a login node over ssh, or this machine
    # when variantctl runs on the login node itself
    slurm = _slurm_from(raw["slurm"], origins=tuple(
        (k, f"{doc.source}:{doc.mark((name, 'slurm', k)).line}") for k in raw["slurm"]
    )) if "slurm" in raw else None
    m = doc.mark((name,), key=True)
    return Host(
        name=name,
        ssh=ssh,
        python=home(ex("python", raw["python"])) if "python" in raw else default.python,
        env=MappingProxyType({k: ex("env", v, k) for k, v in raw.get("env", {}).items()}),
        site_roots=tuple(ex("site_roots", r, i) for i, r in enumerate(raw.get("site_roots", ()))),
        workdir=home(ex("workdir", raw["workdir"])) if "workdir" in raw else default.workdir,
        gpu_monitor=raw.get("gpu_monitor", default.gpu_monitor),
        vllm_version=raw.get("vllm_version", default.vllm_version),
        vendor=vendor_from(raw.get("vendor"), default.vendor),
        gpu=GpuSpec(**raw["gpu"]) if "gpu" in raw else default.gpu,
        origin=f"{doc.source}:{m.line}",
        slurm=slurm,
    )


def _slurm_from(raw: SlurmData, *, origins: tuple[tuple[str, str], ...] = ()
                ) -> SlurmSpec:
    d = SlurmSpec()
    ports = raw.get("ports")
    return SlurmSpec(
        partition=raw.get("partition"), gres=raw.get("gres"), time=raw.get("time"),
        account=raw.get("account"), qos=raw.get("qos"), sbatch=tuple(raw.get("sbatch", ())),
        patch_roots=raw.get("patch_roots", d.patch_roots),
        max_jobs=raw.get("max_jobs", d.max_jobs),
        ports=(ports[0], ports[1]) if ports else d.ports,
        conf=raw.get("conf"), origins=origins,
    )


def get_host(hosts: Mapping[str, Host], name: str) -> Host:
    """The named host, or a NotFoundError with a did-you-mean."""
    if name in hosts:
        return hosts[name]
    hint = did_you_mean(name, hosts) or f"known hosts: {', '.join(sorted(hosts))}"
    raise NotFoundError(f"unknown host {name!r}", hint=hint)
