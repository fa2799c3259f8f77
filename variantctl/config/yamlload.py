"""Safe YAML loading that remembers where every value came from.

``load_yaml_file`` returns a :class:`Document`: the plain Python data (built by
PyYAML's *safe* constructor, so no tags can run code) plus a map from key path
to ``line:column``, so schema errors can name the exact spot. Duplicate keys,
which PyYAML silently collapses, are reported as errors.

Every YAML file variantctl reads (variants, hosts, patchsets, signatures) comes
through here, so the limits that keep a hostile or careless file from
exhausting memory or the stack live here too, checked while the node graph is
composed (before anything is expanded):

- a file larger than :data:`MAX_FILE_BYTES` is refused (no more than that is
  read), and a device, FIFO or socket is not read at all;
- nesting deeper than :data:`MAX_DEPTH` levels is refused (PyYAML composes
  recursively: a few hundred levels would overflow the Python stack);
- an alias that refers to a node still being composed (``tags: &a [*a]``) is
  refused: the value would be infinite;
- a document whose tree, with every alias expanded, holds more than
  :data:`MAX_NODES` nodes is refused ("billion laughs"): aliases are shared in
  the node graph, but the position map and the schema checks walk the expanded
  tree, so its size is what costs memory and time.

A NUL character in any key or string value is refused as well: no setting can
carry one to a shell, an argv or a file name as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypeAlias

import yaml

from variantctl.errors import ConfigError

#: a scalar as YAML's safe constructor builds it (a timestamp is a date or datetime)
YamlScalar: TypeAlias = bool | int | float | str | bytes | date | None
#: a value as YAML's safe constructor builds it, before a schema has checked it
YamlValue: TypeAlias = (YamlScalar | list["YamlValue"] | dict["YamlScalar", "YamlValue"]
                        | set["YamlScalar"])
#: where a value sits in a document: mapping keys (scalars) and list indexes
KeyPath = tuple[YamlScalar, ...]

#: nesting levels a document may have, counted on the alias-expanded tree
MAX_DEPTH = 100
#: nodes (scalars, lists, mappings, keys) a document may expand to through aliases
MAX_NODES = 100_000
#: bytes a YAML file may hold; catalogs are a few KiB, so this only stops accidents
MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Mark:
    """A position in a source file, 1-based."""

    source: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


@dataclass
class Document:
    """Parsed YAML plus positions of every mapping key and value."""

    data: Any
    source: str
    marks: dict[KeyPath, Mark] = field(default_factory=dict)
    #: positions of mapping *keys* (useful for "unknown key" errors)
    key_marks: dict[KeyPath, Mark] = field(default_factory=dict)

    def mark(self, path: KeyPath, *, key: bool = False) -> Mark:
        """Position of ``path`` (or its nearest ancestor that has one)."""
        table = self.key_marks if key else self.marks
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if p in self.marks:
                return self.marks[p]
            p = p[:-1]
        return self.marks.get((), Mark(self.source, 1, 1))

    def error(
        self, path: KeyPath, message: str, *, hint: str | None = None, key: bool = False
    ) -> ConfigError:
        """A ConfigError located at ``path``."""
        m = self.mark(path, key=key)
        return ConfigError(
            message,
            source=self.source,
            line=m.line,
            column=m.column,
            key_path=format_path(path) or None,
            hint=hint,
        )


def format_path(path: KeyPath) -> str:
    """``("args", "tp")`` -> ``args.tp``; list indexes as ``[2]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def load_yaml_text(text: str, source: str) -> Document:
    """Parse one YAML document; ConfigError (with line:column) on any syntax problem.

    Also ConfigError for a document beyond the limits above (depth, recursive
    alias, expanded size), located at the node that crosses the limit.
    """
    loader = _BoundedLoader(text, source)
    try:
        node = loader.get_single_node()
        if node is None:
            return Document(None, source, {(): Mark(source, 1, 1)})
        doc = Document(None, source)
        _walk(node, (), doc)
        doc.data = loader.construct_document(node)
        return doc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(
            f"invalid YAML: {problem}",
            source=source,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", source=source) from None
    finally:
        loader.dispose()


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer measures every node on the alias-expanded tree.

    For each composed node it keeps the expanded size and height (children are
    composed first, an alias contributes its anchored node's figures), so the
    cost is linear in the *text*, however far the aliases would expand.
    """

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self._source = source
        self._depth = 0
        self._open_anchors: set[str] = set()
        #: id(node) -> (expanded node count, expanded height); nodes stay alive in the graph
        self._measure: dict[int, tuple[int, int]] = {}

    def _refuse(self, message: str, mark: Any, hint: str) -> ConfigError:
        return ConfigError(message, source=self._source, line=mark.line + 1,
                           column=mark.column + 1, hint=hint)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open_anchors:
                raise self._refuse(
                    f"recursive alias *{event.anchor}: the value would contain itself",
                    event.start_mark, "an alias can only refer to a node that is complete")
            target = super().compose_node(parent, index)
            assert target is not None  # an alias event always yields its anchored node
            self._check(target, event.start_mark)  # located at the alias, not its anchor
            return target
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._refuse(f"nesting deeper than {MAX_DEPTH} levels",
                               event.start_mark, "variantctl files need only a few levels")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open_anchors.add(anchor)
        node = super().compose_node(parent, index)
        assert node is not None  # peek_event saw a scalar, sequence or mapping start
        if anchor is not None:
            self._open_anchors.discard(anchor)
        self._depth -= 1
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                children += (k, v)
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        figures = [self._measure[id(c)] for c in children]
        self._measure[id(node)] = (1 + sum(f[0] for f in figures),
                                   1 + max((f[1] for f in figures), default=0))
        self._check(node, node.start_mark)
        return node

    def _check(self, node: yaml.Node, mark: Any) -> None:
        size, height = self._measure[id(node)]
        if size > MAX_NODES:
            raise self._refuse(
                f"this value expands to more than {MAX_NODES} nodes once aliases are expanded",
                mark, "aliases (*name) repeat their anchor's whole value; use fewer of them")
        if height > MAX_DEPTH:
            raise self._refuse(
                f"this value nests deeper than {MAX_DEPTH} levels once aliases are expanded",
                mark, "variantctl files need only a few levels")


def load_yaml_file(path: Path, *, display: str | None = None) -> Document:
    """Read and parse ``path``; ConfigError for missing, unreadable or non-UTF-8 files."""
    source = display or str(path)
    try:
        # a FIFO would block the open, a device (a link to /dev/zero) never ends
        if path.exists() and not path.is_dir() and not path.is_file():
            raise ConfigError("not a regular file (a device, FIFO or socket)", source=source)
        # bounded read: a runaway generated file must not fill memory
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError("file not found", source=source) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, expected a YAML file", source=source) from None
    except PermissionError:
        raise ConfigError("permission denied", source=source) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=source) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, "
                          "too large for a variantctl YAML file", source=source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", source=source, line=line
        ) from None
    return load_yaml_text(text, source)


def _walk(node: yaml.Node, path: KeyPath, doc: Document) -> None:
    doc.marks[path] = Mark(doc.source, node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, Mark] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                m = key_node.start_mark
                raise ConfigError(
                    "mapping keys must be plain scalars",
                    source=doc.source,
                    line=m.line + 1,
                    column=m.column + 1,
                )
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ConfigError(
                    "YAML merge keys (<<) are not supported; use `extends`",
                    source=doc.source,
                    line=key_node.start_mark.line + 1,
                    column=key_node.start_mark.column + 1,
                )
            if "\0" in key_node.value:
                _refuse_nul(key_node, path, doc)
            key = _scalar_key(key_node)
            kmark = Mark(doc.source, key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if key in seen:
                raise ConfigError(
                    f"duplicate key {key!r} (first defined at line {seen[key].line})",
                    source=doc.source,
                    line=kmark.line,
                    column=kmark.column,
                    key_path=format_path((*path, key)) or None,
                )
            seen[key] = kmark
            child: KeyPath = (*path, key)
            doc.key_marks[child] = kmark
            _walk(value_node, child, doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), doc)
    elif isinstance(node, yaml.ScalarNode) and "\0" in node.value:
        _refuse_nul(node, path, doc)


def _refuse_nul(node: yaml.Node, path: KeyPath, doc: Document) -> None:
    # Only a double-quoted "\0" escape can produce one. No setting can hold a NUL:
    # a shell drops everything after it, argv and environ cannot carry it, so a
    # value would silently not reach the server (or a file name) as written.
    m = node.start_mark
    raise ConfigError("a NUL character (\\0) is not allowed in a variantctl file",
                      source=doc.source, line=m.line + 1, column=m.column + 1,
                      key_path=format_path(path) or None,
                      hint="remove the \\0 escape from this string")


def _scalar_key(node: yaml.ScalarNode) -> Any:
    # Keys are resolved the way the safe constructor will resolve them, so
    # `1:` and `"1":` are told apart exactly as in the constructed data.
    value: Any = node.value
    if node.tag == "tag:yaml.org,2002:int":
        try:
            return int(value)
        except ValueError:
            return value
    if node.tag == "tag:yaml.org,2002:bool":
        return value.lower() in {"true", "yes", "on"}
    if node.tag == "tag:yaml.org,2002:null":
        return None
    return value


def yaml_names(directory: Path) -> list[str]:
    """The names of the ``NAME.yaml``/``NAME.yml`` files in ``directory`` (sorted)."""
    if not directory.is_dir():
        return []
    return sorted(p.stem for p in directory.iterdir()
                  if p.suffix in (".yaml", ".yml") and p.is_file())


def load_named(directory: Path, name: str, kind: str, *,
               display_base: Path | None = None) -> Document:
    """``directory/NAME.yaml`` (or ``.yml``) read, shown relative to ``display_base``;
    NotFoundError naming the ``kind`` (``sweep``, ``tune``) with did-you-mean when
    there is none (a name with a ``/`` never leaves the directory)."""
    from variantctl.errors import NotFoundError
    from variantctl.spelling import did_you_mean

    path = None if "/" in name else next(
        (directory / f"{name}{s}" for s in (".yaml", ".yml")
         if (directory / f"{name}{s}").is_file()), None)
    if path is None:
        names = yaml_names(directory)
        hint = did_you_mean(name, names) or (
            f"{kind}s: {', '.join(names)}" if names else f"write {directory}/{name}.yaml")
        raise NotFoundError(f"no {kind} {name!r} in {directory}", hint=hint)
    display = str(path.relative_to(display_base)) if display_base and path.is_relative_to(
        display_base) else str(path)
    return load_yaml_file(path, display=display)
