"""Inheritance: merge a variant's parents (any depth, several parents) and keep origins.

Rules (documented in docs/variants.md):

- parents are merged left to right, later parents win, then the file itself;
- scalars (``host``, ``command``, ``model``, ``port``, ``vllm_version``, ``log``)
  are replaced; ``null`` resets to the default;
- ``args``, ``env``, ``expect``, ``startup`` and ``vendor`` merge key by key; a
  ``null`` value removes the inherited key; an overridden key keeps its position;
  a section set to ``null`` as a whole (``args: null``) drops everything inherited;
- ``requires`` and ``tags`` accumulate (parents first, no duplicates);
- ``description`` is not inherited: it describes the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, TypeAlias

from variantctl.errors import ConfigError, NotFoundError
from variantctl.hostmodel import Vendor
from variantctl.spelling import did_you_mean
from variantctl.variants.model import (
    DEFAULT_COMMAND,
    DEFAULT_HOST,
    DEFAULT_LOG,
    DEFAULT_PORT,
    Layer,
    ResolvedVariant,
    Startup,
)


class LayerCatalog(Protocol):
    """What :func:`resolve` reads of a loaded catalog (``config.variants.Catalog``),
    declared here so this pure package does not import the YAML reader back."""

    @property
    def layers(self) -> Mapping[str, Layer]: ...

    @property
    def resolved_memo(self) -> ResolveMemo: ...

SCALARS = ("host", "command", "model", "port", "vllm_version", "log", "compile_cache")
SECTIONS = ("args", "env", "expect", "startup", "vendor")
LISTS = ("requires", "tags")


@dataclass
class _Acc:
    values: dict[str, Any] = field(default_factory=dict)
    sections: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {s: {} for s in SECTIONS})
    # dicts used as ordered sets: membership is O(1), so deep chains stay linear
    lists: dict[str, dict[str, None]] = field(default_factory=lambda: {s: {} for s in LISTS})
    origins: dict[str, str] = field(default_factory=dict)
    #: nearest first; a tuple, not a set: one is kept per variant in the memo
    ancestors: tuple[str, ...] = ()

    def merge(self, other: _Acc) -> None:
        """Lay an already-resolved parent over what we have (``other`` is not changed)."""
        self.values.update(other.values)
        for s in SECTIONS:
            self.sections[s].update(other.sections[s])
        for s in LISTS:
            for x in other.lists[s]:
                self.lists[s].setdefault(x)
        self.origins.update(other.origins)

    def apply(self, layer: Layer) -> None:
        """Lay a file's own values over the merged parents; ``None`` removes."""
        lo = layer.origins
        for key in SCALARS:
            if key not in layer.values:
                continue
            if layer.values[key] is None:
                self.values.pop(key, None)
                self.origins[key] = lo.get(key, layer.source)
            else:
                self.values[key] = layer.values[key]
                self.origins[key] = lo.get(key, layer.source)
        for s in SECTIONS:
            if s not in layer.values:
                continue
            own = layer.values[s]
            if own is None:  # `args: null`, `vendor: null`, ... drop the whole section
                for k in list(self.sections[s]):
                    self.origins.pop(f"{s}.{k}", None)
                self.sections[s].clear()
                continue
            for k, v in own.items():
                path = f"{s}.{k}"
                if v is None:
                    self.sections[s].pop(k, None)
                    self.origins.pop(path, None)
                else:
                    self.sections[s][k] = v
                    self.origins[path] = lo.get(path, layer.source)
        for s in LISTS:
            for item in layer.values.get(s, ()):
                if item not in self.lists[s]:
                    self.lists[s][item] = None
                    self.origins[f"{s}.{item}"] = lo.get(f"{s}.{item}", layer.source)


def check_graph(layers: Mapping[str, Layer]) -> None:
    """ConfigError for a missing parent or an ``extends`` cycle, located at the ``extends``.

    Iterative (an explicit stack, not recursion): the docs promise inheritance of
    any depth, and a chain of thousands of files must not hit Python's recursion limit.
    """
    for layer in layers.values():
        for i, parent in enumerate(layer.extends):
            mark = _extends_mark(layer, i)
            if parent not in layers:
                known = ", ".join(sorted(layers))
                hint = did_you_mean(parent, layers) or f"known variants: {known}"
                raise ConfigError(f"unknown parent variant {parent!r}", source=mark[0],
                                  line=mark[1], column=mark[2], key_path="extends", hint=hint)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for root in sorted(layers):
        if root in state:
            continue
        # each frame: (variant, index of the next parent to visit); the stack is the path
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            name, i = stack[-1]
            parents = layers[name].extends
            if i == len(parents):
                state[name] = 2
                stack.pop()
                continue
            stack[-1] = (name, i + 1)
            parent = parents[i]
            if state.get(parent) == 2:
                continue
            if state.get(parent) == 1:
                path = [n for n, _ in stack]
                cycle = [*path[path.index(parent):], parent]
                mark = _extends_mark(layers[name], i)
                raise ConfigError(f"extends cycle: {_chain_text(cycle)}", source=mark[0],
                                  line=mark[1], column=mark[2], key_path="extends",
                                  hint="a variant cannot inherit from itself, even indirectly")
            state[parent] = 1
            stack.append((parent, 0))


def _chain_text(cycle: list[str]) -> str:
    # a cycle through a thousand files would make a thousand-name line: keep both ends
    if len(cycle) <= 12:
        return " -> ".join(cycle)
    return (" -> ".join(cycle[:5]) + f" -> ... ({len(cycle) - 10} more) -> "
            + " -> ".join(cycle[-5:]))


def _extends_mark(layer: Layer, i: int) -> tuple[str, int | None, int | None]:
    if i < len(layer.extends_marks):
        return layer.extends_marks[i]
    return (layer.source, None, None)


#: each variant's merged values, kept by a catalog between resolves (opaque to others)
ResolveMemo: TypeAlias = dict[str, _Acc]


def _accumulate(name: str, layers: Mapping[str, Layer], memo: ResolveMemo) -> _Acc:
    """The merged values of ``name``; every ancestor's result is kept in ``memo``.

    Parents are resolved before children in an explicit post-order walk (no
    recursion), and each variant is merged once per ``memo``, so resolving a
    whole catalog costs time linear in its size (times the keys per variant).
    """
    stack: list[tuple[str, bool]] = [(name, False)]
    while stack:
        current, parents_done = stack.pop()
        if current in memo:
            continue
        layer = layers[current]
        if not parents_done:
            stack.append((current, True))
            stack.extend((p, False) for p in reversed(layer.extends) if p not in memo)
            continue
        acc = _Acc()
        # nearest first: the direct parents, then theirs (left to right, no repeats)
        ancestors = dict.fromkeys(layer.extends)
        for parent in layer.extends:
            acc.merge(memo[parent])
            for a in memo[parent].ancestors:
                ancestors.setdefault(a)
        acc.ancestors = tuple(ancestors)
        acc.apply(layer)
        memo[current] = acc
    return memo[name]


def resolve(
    catalog: LayerCatalog, name: str, *, host: str | None = None, port: int | None = None
) -> ResolvedVariant:
    """The named variant with every parent merged; NotFoundError (did-you-mean) if unknown.

    ``host`` and ``port`` override the resolved values (tests pick a free port).
    """
    # load_catalog checked the graph; the catalog's memo makes resolving every
    # variant of a catalog (list, check) linear instead of quadratic in its depth
    v = _resolve(catalog.layers, name, catalog.resolved_memo)
    return v.with_overrides(host=host, port=port)


def _known(layers: Mapping[str, Layer], name: str) -> None:
    if name not in layers:
        hint = did_you_mean(name, layers) or (
            f"known variants: {', '.join(sorted(layers))}" if layers else
            "no variants defined: add variants/<name>.yaml")
        raise NotFoundError(f"unknown variant {name!r}", hint=hint)


def _resolve(layers: Mapping[str, Layer], name: str, memo: ResolveMemo) -> ResolvedVariant:
    _known(layers, name)
    acc = _accumulate(name, layers, memo)
    layer = layers[name]
    v, sec = acc.values, acc.sections
    origins = {"description": layer.origins.get("description", "default"), **acc.origins}
    if "description" not in layer.values:
        origins.pop("description", None)
    for key in ("host", "command", "port", "log"):
        if key not in v:
            origins[key] = "default"
    for key in ("ready_timeout", "stall"):
        if key not in sec["startup"]:
            origins[f"startup.{key}"] = "default"
    startup_defaults = Startup()
    vendor = Vendor(**sec["vendor"]) if sec["vendor"] else None
    return ResolvedVariant(
        name=name,
        description=layer.values.get("description") or "",
        parents=layer.extends,
        host=v.get("host", DEFAULT_HOST),
        command=tuple(v.get("command", DEFAULT_COMMAND)),
        model=v.get("model"),
        port=v.get("port", DEFAULT_PORT),
        args=MappingProxyType(dict(sec["args"])),
        env=MappingProxyType(dict(sec["env"])),
        requires=tuple(acc.lists["requires"]),
        expect=MappingProxyType(dict(sec["expect"])),
        vllm_version=v.get("vllm_version"),
        vendor=vendor,
        startup=Startup(
            ready_timeout=sec["startup"].get("ready_timeout", startup_defaults.ready_timeout),
            stall=sec["startup"].get("stall", startup_defaults.stall),
        ),
        log=v.get("log", DEFAULT_LOG),
        tags=tuple(acc.lists["tags"]),
        compile_cache=v.get("compile_cache") or "shared",
        origins=MappingProxyType(dict(sorted(origins.items()))),
        source=layer.source,
        ancestors=tuple(acc.ancestors),
    )
