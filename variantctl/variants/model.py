"""Frozen models of a launch variant: one file (:class:`Layer`) and the resolved result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, NoReturn

from variantctl.hostmodel import Vendor
from variantctl.jsontypes import JsonObject

Scalar = str | int | float | bool
#: a flag value after resolution: scalar, ``True`` (bare flag), ``False`` (off) or a list
ArgValue = str | int | float | bool | tuple[str | int | float, ...]

DEFAULT_COMMAND: tuple[str, ...] = ("python", "-m", "vllm.entrypoints.openai.api_server")
DEFAULT_PORT = 8000
DEFAULT_LOG = "{workdir}/logs/{name}.log"
DEFAULT_HOST = "local"
#: where a variant's server keeps vLLM's caches (torch.compile's among them): ``shared``
#: (vLLM's own ``VLLM_CACHE_ROOT``, default ~/.cache/vllm) or ``per-variant``
#: (``<host workdir>/compile-cache/<variant>``: a broken cache stays with its variant, at
#: the price of compiling once more per variant)
COMPILE_CACHES = ("shared", "per-variant")


def _empty() -> Mapping[str, NoReturn]:  # an empty mapping of any value type
    return MappingProxyType({})


@dataclass(frozen=True)
class Startup:
    """How long launch waits: for ``/health`` overall, and without any new log line."""

    ready_timeout: float = 600.0
    stall: float = 180.0


@dataclass(frozen=True)
class Layer:
    """One variant file, validated and normalised, before inheritance.

    ``values`` holds only the keys the file sets. Mapping sections (``args``,
    ``env``, ``expect``, ``startup``, ``vendor``) are dicts whose ``None`` values
    remove an inherited entry; ``origins`` maps a field path (``args.max-model-len``)
    to ``file:line``.
    """

    name: str
    source: str
    extends: tuple[str, ...]
    values: Mapping[str, Any]
    origins: Mapping[str, str]
    #: ``file:line:column`` of each ``extends`` entry, for missing-parent and cycle errors
    extends_marks: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True)
class ResolvedVariant:
    """A variant with every parent merged in: exactly what launch needs."""

    name: str
    description: str = ""
    parents: tuple[str, ...] = ()
    host: str = DEFAULT_HOST
    command: tuple[str, ...] = DEFAULT_COMMAND
    model: str | None = None
    port: int = DEFAULT_PORT
    args: Mapping[str, ArgValue] = field(default_factory=_empty)
    env: Mapping[str, str] = field(default_factory=_empty)
    requires: tuple[str, ...] = ()
    expect: Mapping[str, Scalar] = field(default_factory=_empty)
    vllm_version: str | None = None
    vendor: Vendor | None = None
    startup: Startup = Startup()
    log: str = DEFAULT_LOG
    tags: tuple[str, ...] = ()
    compile_cache: str = "shared"
    origins: Mapping[str, str] = field(default_factory=_empty)
    #: the file that defines this variant
    source: str = ""
    #: every ancestor, nearest first (parents of parents included)
    ancestors: tuple[str, ...] = ()

    def with_overrides(
        self, *, host: str | None = None, port: int | None = None
    ) -> ResolvedVariant:
        """The same variant on another host or port (tests and ``render --port``)."""
        out = self
        origins = dict(self.origins)
        if host is not None:
            out = replace(out, host=host)
            origins["host"] = "override"
        if port is not None:
            out = replace(out, port=port)
            origins["port"] = "override"
        return replace(out, origins=MappingProxyType(origins))

    def with_args(
        self,
        args: Mapping[str, ArgValue | None] | None = None,
        *,
        env: Mapping[str, str | None] | None = None,
        origin: str,
        name: str | None = None,
    ) -> ResolvedVariant:
        """A derived variant (a sweep's grid point): ``args``/``env`` set over this one's
        (``None`` removes an entry, as in a variant file), every changed value carrying
        ``origin`` (e.g. ``sweep seed-grid grid``) so ``show --origin``, ``diff`` and
        run.json say where it came from. ``args`` keys are flag names as in YAML."""
        from variantctl.variants.flags import normalise_flag

        new_args = dict(self.args)
        new_env = dict(self.env)
        origins = dict(self.origins)
        for raw, value in (args or {}).items():
            key = normalise_flag(raw)
            if value is None:
                new_args.pop(key, None)
            else:
                new_args[key] = tuple(value) if isinstance(value, list) else value
            origins[f"args.{key}"] = origin
        for key, val in (env or {}).items():
            if val is None:
                new_env.pop(key, None)
            else:
                new_env[key] = str(val)
            origins[f"env.{key}"] = origin
        out = replace(self, args=MappingProxyType(new_args), env=MappingProxyType(new_env))
        if name is not None:
            out = replace(out, name=name, parents=(self.name,),
                          ancestors=(self.name, *self.ancestors))
            origins["name"] = origin
        return replace(out, origins=MappingProxyType(origins))

    def launch_view(self) -> JsonObject:
        """What decides how the server runs (no name, description, tags or origins)."""
        return {
            "host": self.host,
            "port": self.port,
            "command": list(self.command),
            "model": self.model,
            "args": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.args.items()},
            "env": dict(self.env),
            "requires": list(self.requires),
            "expect": dict(self.expect),
            "vllm_version": self.vllm_version,
            "vendor": self.vendor.to_dict() if self.vendor else None,
            "startup": {"ready_timeout": self.startup.ready_timeout, "stall": self.startup.stall},
            "log": self.log,
            # only when set: the launch keys of every other variant stay as they were
            **({"compile_cache": self.compile_cache} if self.compile_cache != "shared"
               else {}),
        }

    def to_dict(self) -> JsonObject:
        """JSON-ready form of every field."""
        return {
            "name": self.name,
            "description": self.description,
            "parents": list(self.parents),
            "ancestors": list(self.ancestors),
            "source": self.source,
            **self.launch_view(),
            "tags": list(self.tags),
        }
