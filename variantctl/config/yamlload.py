"""Safe YAML loading that remembers where every value came from.

``load_yaml_file`` returns a :class:`Document`: the plain Python data (built by
PyYAML's *safe* constructor, so no tags can run code) plus a map from key path
to ``line:column``, so schema errors can name the exact spot. Duplicate keys,
which PyYAML silently collapses, are reported as errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from variantctl.errors import ConfigError

KeyPath = tuple[Any, ...]


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
    """Parse one YAML document; ConfigError (with line:column) on any syntax problem."""
    loader = yaml.SafeLoader(text)
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


def load_yaml_file(path: Path, *, display: str | None = None) -> Document:
    """Read and parse ``path``; ConfigError for missing, unreadable or non-UTF-8 files."""
    source = display or str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", source=source) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, expected a YAML file", source=source) from None
    except PermissionError:
        raise ConfigError("permission denied", source=source) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=source) from None
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
