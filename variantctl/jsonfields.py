"""Typed field access to a stored JSON document, with errors that name the file and field.

Pure: no file access. Every reader of a stored file (run.json, a bench result, a
profile file, a sweep state; ``runs/store.py`` reads the bytes) builds its frozen
value through :class:`Fields`, so a damaged or hostile file is one
:class:`StoredFileError` (exit 2) such as ``…/bench-X.json: field
'levels[0].metrics' should be an object, got null`` — never a KeyError, a
TypeError or an AttributeError later, in a renderer.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeGuard

from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode


class StoredFileError(VariantctlError):
    """A stored file (run.json, bench, profile, sweep state) that cannot be read as what it
    should be: exit 2, the file and the field named."""

    exit_code = ExitCode.USAGE


class _Missing(enum.Enum):
    """The one "no default given" marker (an enum member, so it has a type)."""

    MISSING = 0


_MISSING: Final = _Missing.MISSING


def kind_of(value: object) -> str:
    """The JSON name of a value's type (``null``, ``a string``, ...), for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Fields:
    """One JSON object of a stored file: typed getters; nested objects keep their path.

    A getter without a default requires the field; :attr:`REQUIRED` as the default of
    a list getter (``objs``, ``numbers``) says the same.
    """

    REQUIRED: Final = _MISSING

    def __init__(self, data: object, source: str, path: str = ""):
        if not isinstance(data, Mapping):
            if not path:
                raise StoredFileError(f"{source}: expected a JSON object, got {kind_of(data)}")
            raise StoredFileError(f"{source}: field '{path}' should be an object, "
                                  f"got {kind_of(data)}")
        # what json.loads gave: the one boundary left untyped; the getters narrow it
        self.data: Mapping[str, Any] = data
        self.source = source
        self.path = path

    def name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, what: str) -> StoredFileError:
        """An error about field ``key`` (``what`` says what is wrong with it)."""
        return StoredFileError(f"{self.source}: field '{self.name(key)}' {what}")

    def _get(self, key: str, default: object) -> object:
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise StoredFileError(f"{self.source}: missing field '{self.name(key)}'")
            return default
        return value

    def _bad(self, key: str, what: str, value: object) -> StoredFileError:
        return self.error(key, f"should be {what}, got {kind_of(value)}")

    def has(self, key: str) -> bool:
        return key in self.data

    # -- scalars -------------------------------------------------------------

    def text(self, key: str, default: str | _Missing = _MISSING) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, "a string", value)
        return value

    def opt_text(self, key: str) -> str | None:
        value = self._get(key, None)
        if value is not None and not isinstance(value, str):
            raise self._bad(key, "a string or null", value)
        return value

    def integer(self, key: str, default: int | _Missing = _MISSING) -> int:
        value = self._get(key, default)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(key, "an integer", value)
        return value

    def opt_integer(self, key: str) -> int | None:
        value = self._get(key, None)
        return None if value is None else self.integer(key)

    def number(self, key: str, default: float | _Missing = _MISSING) -> float:
        """A number; ``"inf"``, ``"-inf"`` and ``"nan"`` too (JSON has none: the writers
        store them as strings)."""
        value = self._get(key, default)
        if type(value) is float:  # the usual case, without building the error's callback
            return value
        return _number(value, lambda what, v: self._bad(key, what, v))

    def opt_number(self, key: str) -> float | None:
        value = self._get(key, None)
        return None if value is None else self.number(key)

    def flag(self, key: str, default: bool | _Missing = _MISSING) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false", value)
        return value

    # -- containers ----------------------------------------------------------

    def obj(self, key: str) -> Fields:
        return Fields(self._get(key, _MISSING), self.source, self.name(key))

    def opt_obj(self, key: str) -> Fields | None:
        value = self._get(key, None)
        return None if value is None else Fields(value, self.source, self.name(key))

    def mapping(self, key: str,
                default: Mapping[str, object] | _Missing = _MISSING) -> Mapping[str, Any]:
        value = self._get(key, default)
        if not isinstance(value, Mapping):
            raise self._bad(key, "an object", value)
        return value

    def opt_mapping(self, key: str) -> Mapping[str, Any] | None:
        value = self._get(key, None)
        if value is not None and not isinstance(value, Mapping):
            raise self._bad(key, "an object or null", value)
        return value

    def items(self, key: str, default: Sequence[object] | _Missing = ()) -> Sequence[Any]:
        value = self._get(key, default)
        if not isinstance(value, (list, tuple)):
            raise self._bad(key, "a list", value)
        return value

    def objs(self, key: str, default: Sequence[object] | _Missing = ()) -> list[Fields]:
        """A list of objects, each with its index in its path (``levels[2]``)."""
        return [Fields(item, self.source, f"{self.name(key)}[{i}]")
                for i, item in enumerate(self.items(key, default))]

    def texts(self, key: str, default: Sequence[object] | _Missing = ()) -> tuple[str, ...]:
        out = []
        for i, item in enumerate(self.items(key, default)):
            if not isinstance(item, str):
                raise self.error(f"{key}[{i}]", f"should be a string, got {kind_of(item)}")
            out.append(item)
        return tuple(out)

    def numbers(self, key: str, default: Sequence[object] | _Missing = ()) -> tuple[float, ...]:
        items = self.items(key, default)
        # the usual list (a request's chunk offsets): JSON numbers only, checked at once;
        # anything else (a string "inf", a bad item) takes the item-by-item path
        if all(type(v) is float or type(v) is int for v in items):
            return tuple(map(float, items))
        return tuple(_number(v, self._bad_at(f"{key}[{i}]")) for i, v in enumerate(items))

    def counts(self, key: str) -> dict[str, int]:
        """An object of integers (``{"http 500": 3}``); absent is empty."""
        out = {}
        for k, v in self.mapping(key, {}).items():
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.error(f"{key}.{k}", f"should be an integer, got {kind_of(v)}")
            out[str(k)] = v
        return out

    def number_map(self, key: str) -> dict[str, float]:
        """An object of numbers; absent is empty."""
        return {str(k): _number(v, self._bad_at(f"{key}.{k}"))
                for k, v in self.mapping(key, {}).items()}

    def _bad_at(self, field: str) -> Callable[[str, object], StoredFileError]:
        """The error for a bad item ``field`` (``key[i]``, ``key.k``) of a container."""
        return lambda what, got: self.error(field, f"should be {what}, got {kind_of(got)}")


def _number(value: object, bad: Callable[[str, object], StoredFileError]) -> float:
    if _is_number(value):
        return float(value)
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return math.inf if value == "inf" else -math.inf if value == "-inf" else math.nan
    raise bad("a number", value)
