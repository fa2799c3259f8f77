"""Schema as data: small validators that report the key path, position and a did-you-mean.

A schema checks a :class:`~variantctl.config.yamlload.Document` value at a key
path and returns the (possibly normalised) value, or raises a located
ConfigError. Loaders build frozen models from the checked values.

Example::

    VARIANT = Struct("variant", {
        "description": Field(Str()),
        "port": Field(Int(min=1, max=65535)),
        "args": Field(MapOf(Str(), Any_())),
    })
    data = VARIANT.check(doc.data, (), doc)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar, cast, overload

from variantctl.config.yamlload import Document, KeyPath, YamlValue
from variantctl.spelling import did_you_mean

__all__ = ["Any_", "Bool", "Check", "Enum", "Field", "Float", "Int", "ListOf", "MapOf",
           "Nullable", "OneOf", "Schema", "Str", "Struct", "StructData", "did_you_mean",
           "type_name"]

_MISSING = object()

T = TypeVar("T", covariant=True)
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def type_name(value: object) -> str:
    """A YAML-flavoured name for a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class Schema(Generic[T]):
    """Base validator: ``check`` takes a value as YAML gave it and returns a ``T``."""

    expected = "a value"

    def check(self, value: object, path: KeyPath, doc: Document) -> T:
        raise NotImplementedError  # pragma: no cover - abstract

    def fail(self, value: object, path: KeyPath, doc: Document, extra: str = "") -> NoReturn:
        raise doc.error(path, f"expected {self.expected}, got {type_name(value)}{extra}")


class Any_(Schema[YamlValue]):
    def check(self, value: object, path: KeyPath, doc: Document) -> YamlValue:
        return value  # type: ignore[return-value]  # what YAML's safe constructor built


class Str(Schema[str]):
    def __init__(self, *, pattern: str | None = None, what: str | None = None,
                 allow_empty: bool = False):
        self.pattern = re.compile(pattern) if pattern else None
        self.what = what
        self.allow_empty = allow_empty
        self.expected = what or "a string"

    def check(self, value: object, path: KeyPath, doc: Document) -> str:
        if not isinstance(value, str):
            return self.fail(value, path, doc)
        if not value and not self.allow_empty:
            raise doc.error(path, f"expected {self.expected}, got an empty string")
        if self.pattern and not self.pattern.fullmatch(value):
            raise doc.error(path, f"{value!r} is not {self.expected}")
        return value


class Int(Schema[int]):
    def __init__(self, *, min: int | None = None, max: int | None = None):
        self.min, self.max = min, max
        self.expected = "an integer"

    def check(self, value: object, path: KeyPath, doc: Document) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            return self.fail(value, path, doc)
        if self.min is not None and value < self.min:
            raise doc.error(path, f"must be at least {self.min}, got {value}")
        if self.max is not None and value > self.max:
            raise doc.error(path, f"must be at most {self.max}, got {value}")
        return value


class Float(Schema[float]):
    """A number; ``finite`` (quantities: seconds, rates, peaks) refuses YAML's ``.nan``
    and ``.inf``, which every ``min`` check lets through (``nan < 1`` is false) and which
    would make a deadline that never comes. Plain values (a flag's) may be anything."""

    def __init__(self, *, min: float | None = None, finite: bool = False):
        self.min = min
        self.finite = finite
        self.expected = "a number"

    def check(self, value: object, path: KeyPath, doc: Document) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self.fail(value, path, doc)
        if self.finite and not math.isfinite(value):
            raise doc.error(path, f"must be a finite number, got {value}")
        if self.min is not None and value < self.min:
            raise doc.error(path, f"must be at least {self.min}, got {value}")
        return float(value)


class Bool(Schema[bool]):
    expected = "true or false"

    def check(self, value: object, path: KeyPath, doc: Document) -> bool:
        if not isinstance(value, bool):
            return self.fail(value, path, doc)
        return value


class Enum(Schema[str]):
    def __init__(self, *choices: str):
        self.choices = choices
        self.expected = "one of " + ", ".join(repr(c) for c in choices)

    def check(self, value: object, path: KeyPath, doc: Document) -> str:
        if value not in self.choices:
            hint = did_you_mean(str(value), self.choices) if isinstance(value, str) else None
            raise doc.error(path, f"expected {self.expected}, got {value!r}", hint=hint)
        return value


class ListOf(Schema[tuple[V, ...]]):
    """A list of items; with ``single=True`` a lone item is accepted as a one-item list."""

    def __init__(self, item: Schema[V], *, single: bool = False, min_len: int = 0):
        self.item, self.single, self.min_len = item, single, min_len
        self.expected = f"a list of {item.expected}"

    def check(self, value: object, path: KeyPath, doc: Document) -> tuple[V, ...]:
        if self.single and not isinstance(value, list):
            return (self.item.check(value, path, doc),)
        if not isinstance(value, list):
            return self.fail(value, path, doc)
        if len(value) < self.min_len:
            raise doc.error(path, f"needs at least {self.min_len} item(s)")
        return tuple(self.item.check(v, (*path, i), doc) for i, v in enumerate(value))


class MapOf(Schema[dict[K, V]]):
    def __init__(self, key: Schema[K], value: Schema[V]):
        self.key, self.value = key, value
        self.expected = "a mapping"

    def check(self, value: object, path: KeyPath, doc: Document) -> dict[K, V]:
        if not isinstance(value, dict):
            return self.fail(value, path, doc)
        out: dict[K, V] = {}
        for k, v in value.items():
            kk = self.key.check(k, (*path, k), doc)
            out[kk] = self.value.check(v, (*path, k), doc)
        return out


class OneOf(Schema[V]):
    """The first alternative whose check passes; the error names all of them."""

    def __init__(self, *alternatives: Schema[V]):
        self.alternatives = alternatives
        self.expected = " or ".join(a.expected for a in alternatives)

    def check(self, value: object, path: KeyPath, doc: Document) -> V:
        from variantctl.errors import ConfigError

        for alt in self.alternatives:
            try:
                return alt.check(value, path, doc)
            except ConfigError:
                continue
        return self.fail(value, path, doc)


class Nullable(Schema[V | None]):
    def __init__(self, inner: Schema[V]):
        self.inner = inner
        self.expected = f"{inner.expected} or null"

    def check(self, value: object, path: KeyPath, doc: Document) -> V | None:
        return None if value is None else self.inner.check(value, path, doc)


class Check(Schema[V]):
    """Wrap a schema with an extra predicate: ``fn(value)`` returns an error text or None."""

    def __init__(self, inner: Schema[V], fn: Callable[[V], str | None]):
        self.inner, self.fn = inner, fn
        self.expected = inner.expected

    def check(self, value: object, path: KeyPath, doc: Document) -> V:
        v = self.inner.check(value, path, doc)
        problem = self.fn(v)
        if problem:
            raise doc.error(path, problem)
        return v


@dataclass(frozen=True)
class Field:
    schema: Schema[object]
    required: bool = False
    default: object = _MISSING


#: what a :class:`Struct` without a ``shape`` checks to: its keys' values, each of its own
#: field's type. The schema's one ``Any``: the loader reads each key as the type its field's
#: schema gave it. A Struct with a ``shape`` (a TypedDict) checks to that instead.
StructData = dict[str, Any]

D = TypeVar("D", bound=Mapping[str, object])


class Struct(Schema[D]):
    """A mapping with known keys; unknown keys are errors with a did-you-mean.

    ``shape``: the TypedDict the checked mapping is (its keys are the fields', each typed
    as its field's schema checks it; ``tests/unit/core/test_yamlload.py`` holds them to
    that); without it the result is :data:`StructData`."""

    @overload
    def __init__(self: Struct[StructData], what: str, fields: dict[str, Field], *,
                 extra_ok: Sequence[str] = ()) -> None: ...

    @overload
    def __init__(self, what: str, fields: dict[str, Field], *,
                 extra_ok: Sequence[str] = (), shape: type[D]) -> None: ...

    def __init__(self, what: str, fields: dict[str, Field], *,
                 extra_ok: Sequence[str] = (), shape: type[D] | None = None) -> None:
        self.shape = shape
        self.what = what
        self.fields = fields
        self.extra_ok = set(extra_ok)
        self.expected = f"a mapping ({what})"

    def check(self, value: object, path: KeyPath, doc: Document) -> D:
        if not isinstance(value, dict):
            return self.fail(value, path, doc)
        for k in value:
            if k not in self.fields and k not in self.extra_ok:
                hint = did_you_mean(str(k), self.fields)
                known = ", ".join(sorted(self.fields))
                raise doc.error(
                    (*path, k),
                    f"unknown key {k!r} in {self.what}",
                    hint=hint or f"known keys: {known}",
                    key=True,
                )
        out: dict[str, object] = {}
        for name, f in self.fields.items():
            if name in value:
                out[name] = f.schema.check(value[name], (*path, name), doc)
            elif f.required:
                raise doc.error(path, f"missing required key {name!r} in {self.what}")
            elif f.default is not _MISSING:
                out[name] = f.default
        # each value is what its field's schema checked it to: the shape says so by type
        return cast(D, out)
