"""Variant files: ``variants/*.yaml``, one launch variant per file, validated into layers.

A file holds one variant named after the file (or its ``name:`` key). The
loader checks the schema (file:line:column, key path, did-you-mean), normalises
flag names (``tp`` -> ``tensor-parallel-size``), expands ``${NAME}`` and
``${NAME:-default}`` from the local environment in ``command``, ``model``,
``env``, ``args`` and ``log`` string values, records where every value was set
and rejects missing parents and ``extends`` cycles. Inheritance itself is pure
(:mod:`variantctl.variants.resolve`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict

from variantctl.config.hosts import (
    ENV_NAME,
    HOSTS_FILE,
    VENDOR,
    VLLM_VERSION,
    VendorData,
    expand_vars,
    load_hosts_file,
)
from variantctl.config.schema import (
    Any_,
    Bool,
    Enum,
    Field,
    Float,
    Int,
    ListOf,
    MapOf,
    Nullable,
    OneOf,
    Str,
    Struct,
    type_name,
)
from variantctl.config.yamlload import Document, KeyPath, YamlValue, load_yaml_file
from variantctl.errors import ConfigError
from variantctl.hostmodel import Host
from variantctl.variants.flags import flag_problem, normalise_backend, normalise_flag
from variantctl.variants.model import COMPILE_CACHES, ArgValue, Layer
from variantctl.variants.resolve import ResolveMemo

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
#: a variant name becomes file names (pid file, run record, log, script, run directory)
MAX_NAME_LEN = 100
NAME_RULE = (f"letters, digits, '_', '.' and '-', starting with a letter or digit, "
             f"at most {MAX_NAME_LEN} characters")
#: placeholders of the ``log`` template (filled by render_log_path)
LOG_FIELDS = ("workdir", "name", "host", "port")

def _log_problem(template: str) -> str | None:
    # format specs, NUL, nameless fields, variantctl's own files: config/templates.py
    from variantctl.config.templates import log_template_problem

    return log_template_problem(template)


_SCALAR = OneOf(Str(allow_empty=True), Int(), Float(), Bool())
_ENV_VALUE = Nullable(OneOf(Str(allow_empty=True), Int(), Float()))

class StartupData(TypedDict, total=False):
    """A checked ``startup:`` mapping."""

    ready_timeout: float | None
    stall: float | None


class VariantData(TypedDict, total=False):
    """A checked variant file (``args`` values are checked one by one by the loader)."""

    name: str
    description: str
    extends: tuple[str, ...]
    host: str | None
    command: str | tuple[str, ...] | None
    model: str | None
    port: int | None
    args: dict[str, YamlValue] | None
    env: dict[str, str | int | float | None] | None
    requires: tuple[str, ...]
    expect: dict[str, str | int | float | bool | None] | None
    vllm_version: str | None
    compile_cache: str | None
    vendor: VendorData | None
    startup: StartupData
    log: str | None
    tags: tuple[str, ...]


_VARIANT = Struct(
    "variant",
    {
        "name": Field(Str(pattern=NAME_PATTERN, what="a variant name")),
        "description": Field(Str(allow_empty=True)),
        "extends": Field(ListOf(Str(pattern=NAME_PATTERN, what="a variant name"), single=True)),
        "host": Field(Nullable(Str(pattern=NAME_PATTERN, what="a host name"))),
        "command": Field(Nullable(OneOf(Str(), ListOf(Str(), min_len=1)))),
        "model": Field(Nullable(Str())),
        "port": Field(Nullable(Int(min=1, max=65535))),
        # checked key by key below: names are normalised and values have their own rules
        "args": Field(Nullable(MapOf(Str(), Any_()))),
        "env": Field(Nullable(MapOf(Str(pattern=ENV_NAME, what="an environment variable name"),
                                    _ENV_VALUE))),
        "requires": Field(ListOf(Str(pattern=NAME_PATTERN, what="a patchset name"), single=True)),
        "expect": Field(Nullable(MapOf(Str(pattern=r"[a-z_][a-z0-9_]*", what="a fact name"),
                                       Nullable(_SCALAR)))),
        "vllm_version": Field(Nullable(VLLM_VERSION)),
        "compile_cache": Field(Nullable(Enum(*COMPILE_CACHES))),
        "vendor": Field(Nullable(VENDOR)),
        "startup": Field(Struct("startup", {
            "ready_timeout": Field(Nullable(Float(min=1, finite=True))),
            "stall": Field(Nullable(Float(min=1, finite=True))),
        }, shape=StartupData)),
        "log": Field(Nullable(Str())),
        "tags": Field(ListOf(Str(pattern=NAME_PATTERN, what="a tag"), single=True)),
    },
    shape=VariantData,
)


@dataclass(frozen=True)
class Catalog:
    """Every variant file of a project (as layers) and the hosts they may run on."""

    variants_dir: Path
    layers: Mapping[str, Layer] = field(default_factory=lambda: MappingProxyType({}))
    hosts: Mapping[str, Host] = field(default_factory=lambda: MappingProxyType({}))
    #: inheritance results per variant, filled by variants.resolve (the layers never change)
    resolved_memo: ResolveMemo = field(default_factory=dict, compare=False, repr=False)

    def names(self) -> list[str]:
        return sorted(self.layers)


def load_catalog(variants_dir: Path, environ: Mapping[str, str] | None = None) -> Catalog:
    """Load ``variants_dir/*.yaml`` (and ``hosts.yaml``); ConfigError on the first bad file.

    An absent directory is an empty catalog (only the built-in ``local`` host).
    """
    from variantctl.variants.resolve import check_graph

    environ = os.environ if environ is None else environ
    base = variants_dir.parent
    hosts = load_hosts_file(variants_dir / HOSTS_FILE, environ,
                            display=_display(variants_dir / HOSTS_FILE, base))
    layers: dict[str, Layer] = {}
    by_fold: dict[str, str] = {}  # casefolded name -> name, to refuse `Co` beside `co`
    if variants_dir.is_dir():
        files = sorted(p for p in variants_dir.iterdir()
                       if p.suffix in {".yaml", ".yml"} and p.stem != "hosts" and p.is_file())
        for path in files:
            layer = load_variant_file(path, environ, display=_display(path, base))
            if layer.name in layers:
                first = layers[layer.name].source
                raise ConfigError(
                    f"variant {layer.name!r} is defined twice (also in {first})",
                    source=layer.source,
                    hint="variant names must be unique; rename one file or its `name:`",
                )
            folded = by_fold.setdefault(layer.name.casefold(), layer.name)
            if folded != layer.name:
                raise ConfigError(
                    f"variant {layer.name!r} differs from {folded!r} "
                    f"({layers[folded].source}) only in case",
                    source=layer.source,
                    hint="on a case-insensitive file system they would share one pid file "
                         "and run record; rename one",
                )
            layers[layer.name] = layer
    check_graph(layers)
    return Catalog(variants_dir, MappingProxyType(layers), MappingProxyType(hosts))


def _display(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def load_variant_file(
    path: Path, environ: Mapping[str, str] | None = None, *, display: str | None = None
) -> Layer:
    """One variant file as a :class:`Layer` (validated, normalised, expanded, with origins)."""
    environ = os.environ if environ is None else environ
    doc = load_yaml_file(path, display=display)
    if doc.data is None:
        raise doc.error((), "empty variant file", hint="write at least `extends:` or `args:`")
    data = _VARIANT.check(doc.data, (), doc)
    _check_name(data.get("name", path.stem), "name" in data, doc)
    return layer_from(data, doc, path.stem, environ)


def _check_name(name: str, from_key: bool, doc: Document) -> None:
    """Names are identities: each one must map to its own pid file, record and log."""
    if re.fullmatch(NAME_PATTERN, name) and len(name) <= MAX_NAME_LEN:
        return
    where = "`name:`" if from_key else "the file name"
    raise doc.error(("name",) if from_key else (),
                    f"variant name {name!r} (from {where}) is not valid: use {NAME_RULE}",
                    hint="rename the file" if not from_key else "change `name:`")


def layer_from(
    data: VariantData, doc: Document, default_name: str, environ: Mapping[str, str]
) -> Layer:
    """Build a Layer from checked data; ``doc`` supplies positions for errors and origins."""
    name = data.get("name", default_name)
    origins: dict[str, str] = {}

    def origin(path: KeyPath, key: str) -> None:
        origins[key] = f"{doc.source}:{doc.mark(path).line}"

    def ex(value: str, path: KeyPath) -> str:
        return expand_vars(value, path, doc, environ)

    values: dict[str, Any] = {}
    for key in ("description", "host", "port", "vllm_version", "compile_cache"):
        if key in data:
            values[key] = data[key]
            origin((key,), key)
    if "vendor" in data:
        values["vendor"] = _vendor(data["vendor"])
        for k in data["vendor"] or ():
            origin(("vendor", k), f"vendor.{k}")
    if "model" in data:
        values["model"] = None if data["model"] is None else ex(data["model"], ("model",))
        if values["model"] is not None and values["model"].startswith("-"):
            # the server's argparse would take it for an option, not the model
            raise doc.error(("model",), f"model {values['model']!r} starts with '-'",
                            hint="a model is a path or a hub id; write ./NAME for a local "
                                 "directory whose name starts with '-'")
        origin(("model",), "model")
    if "log" in data:
        values["log"] = None if data["log"] is None else ex(data["log"], ("log",))
        problem = _log_problem(values["log"]) if values["log"] else None
        if problem:
            raise doc.error(("log",), problem)
        origin(("log",), "log")
    if "command" in data:
        values["command"] = _command(data["command"], doc, ex)
        origin(("command",), "command")
    for key, names in (("requires", data.get("requires")), ("tags", data.get("tags"))):
        if names is not None:  # the key is there (a list is never null)
            values[key] = names
            for i, item in enumerate(names):
                origin((key, i) if isinstance(doc.data.get(key), list) else (key,),
                       f"{key}.{item}")
    # a section set to null drops everything inherited into it
    if "args" in data:
        values["args"] = None if data["args"] is None else _args(data["args"], doc, ex, origin)
    raw_env = data.get("env")
    if "env" in data and raw_env is None:
        values["env"] = None
    elif raw_env is not None:
        env: dict[str, str | None] = {}
        for k, v in raw_env.items():
            env[k] = None if v is None else ex(str(v), ("env", k))
            origin(("env", k), f"env.{k}")
        values["env"] = env
    if "expect" in data:
        values["expect"] = None if data["expect"] is None else dict(data["expect"])
        for k in values["expect"] or ():
            origin(("expect", k), f"expect.{k}")
    if "startup" in data:
        values["startup"] = dict(data["startup"])
        for k in values["startup"]:
            origin(("startup", k), f"startup.{k}")
    extends = tuple(data.get("extends", ()))
    if name in extends:
        raise doc.error(("extends",), f"variant {name!r} extends itself")
    raw_ext = doc.data.get("extends") if isinstance(doc.data, dict) else None
    marks = []
    for i in range(len(extends)):
        m = doc.mark(("extends", i) if isinstance(raw_ext, list) else ("extends",))
        marks.append((m.source, m.line, m.column))
    return Layer(
        name=name,
        source=doc.source,
        extends=extends,
        values=MappingProxyType(values),
        origins=MappingProxyType(origins),
        extends_marks=tuple(marks),
    )


#: expands ``${NAME}`` in a value at a key path
_Expand = Callable[[str, KeyPath], str]


def _vendor(raw: VendorData | None) -> VendorData | None:
    if raw is None:
        return None
    out = raw.copy()
    if "backports" in out:
        out["backports"] = tuple(normalise_flag(f) for f in out["backports"])
    if "attention_backend_default" in out:
        out["attention_backend_default"] = normalise_backend(out["attention_backend_default"])
    if "unavailable_backends" in out:
        out["unavailable_backends"] = tuple(normalise_backend(b)
                                            for b in out["unavailable_backends"])
    return out


def _command(raw: str | tuple[str, ...] | None, doc: Document, ex: _Expand
             ) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        try:
            tokens = shlex.split(raw)
        except ValueError as exc:
            raise doc.error(("command",), f"cannot split command: {exc}",
                            hint="write the command as a list of arguments") from None
        if not tokens:
            raise doc.error(("command",), "expected a command, got only spaces")
        return tuple(ex(t, ("command",)) for t in tokens)
    return tuple(ex(t, ("command", i)) for i, t in enumerate(raw))


def _args(
    raw: dict[str, YamlValue], doc: Document, ex: _Expand, origin: Callable[[KeyPath, str], None]
) -> dict[str, ArgValue | None]:
    out: dict[str, ArgValue | None] = {}
    spelled: dict[str, str] = {}
    for key, value in raw.items():
        path = ("args", key)
        flag = normalise_flag(str(key))
        problem = flag_problem(flag)
        if problem:
            raise doc.error(path, problem, key=True)
        if flag in spelled:
            raise doc.error(path, f"{key!r} and {spelled[flag]!r} are the same flag --{flag}",
                            hint="keep one of them", key=True)
        spelled[flag] = str(key)
        out[flag] = _arg_value(value, path, doc, ex)
        origin(path, f"args.{flag}")
    return out


def _arg_value(value: YamlValue, path: KeyPath, doc: Document, ex: _Expand) -> ArgValue | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return ex(value, path)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, list):
        if not value:
            raise doc.error(path, "an empty list renders no flag; write null to remove it")
        items = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise doc.error((*path, i), f"expected a string or number in a repeated flag, "
                                            f"got {type_name(item)}")
            items.append(ex(item, (*path, i)) if isinstance(item, str) else item)
        return tuple(items)
    raise doc.error(path, f"expected a string, number, true/false, null or a list, "
                          f"got {type_name(value)}",
                    hint="flags that take JSON (e.g. --compilation-config) need a quoted string")
