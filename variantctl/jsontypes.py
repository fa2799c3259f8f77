"""JSON as a type: what a ``to_json`` builds and what ``json.loads`` of a stored file gives.

Why not ``dict[str, Any]``: ``Any`` switches the checker off for everything that flows
through it, so a set, a dataclass or a ``Path`` put into a document is found only when
``json.dumps`` fails at run time. ``JsonObject`` says "a JSON object" and mypy checks that
only JSON goes in. The containers are ``Sequence``/``Mapping`` (covariant), so a
``list[int]`` or a ``dict[str, float]`` is JSON as it is. Reading stays where it was:
stored files through :class:`variantctl.jsonfields.Fields`, YAML through the schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

Json: TypeAlias = bool | int | float | str | Sequence["Json"] | Mapping[str, "Json"] | None
#: what a ``to_json`` returns: a JSON object, built fresh (so a ``dict``)
JsonObject: TypeAlias = dict[str, Json]
#: a JSON object given to a reader (not changed by it)
JsonMapping: TypeAlias = Mapping[str, Json]
