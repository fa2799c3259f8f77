"""How two variants differ, grouped by what it means for the launch (deepdiff underneath).

deepdiff finds every difference between the two launch views; each is folded to
its *setting* (``args.max-model-len``, ``env.VLLM_ATTENTION_BACKEND``, ``port``)
so a changed list item or nested vendor key reads as one before/after pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final, TypeAlias

from variantctl.jsontypes import Json, JsonMapping, JsonObject
from variantctl.variants.model import ResolvedVariant


class Unset(Enum):
    """The type of :data:`UNSET` (an enum member, so ``x is UNSET`` narrows a type)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


#: a setting one side does not have
UNSET: Final = Unset.UNSET
#: a setting's value in a launch view, or UNSET
Setting: TypeAlias = Json | Unset

#: sections whose keys are compared one by one; other fields compare as a whole
KEYED = ("args", "env", "expect", "startup", "vendor")
#: display order of groups
GROUPS = ("host", "port", "command", "model", "args", "env", "requires", "expect",
          "vllm_version", "vendor", "startup", "log")


@dataclass(frozen=True)
class Change:
    """One setting that differs: ``old`` is A's value, ``new`` is B's (UNSET if absent)."""

    group: str
    key: str | None
    old: Setting
    new: Setting

    @property
    def kind(self) -> str:
        if self.old is UNSET:
            return "added"
        if self.new is UNSET:
            return "removed"
        return "changed"

    @property
    def label(self) -> str:
        return self.key if self.key is not None else ""

    def to_dict(self) -> JsonObject:
        return {
            "group": self.group,
            "key": self.key,
            "kind": self.kind,
            "a": None if self.old is UNSET else self.old,
            "b": None if self.new is UNSET else self.new,
        }


def diff_variants(a: ResolvedVariant, b: ResolvedVariant) -> list[Change]:
    """Every launch-relevant difference from ``a`` to ``b``, grouped and in a stable order."""
    from deepdiff import DeepDiff

    va, vb = a.launch_view(), b.launch_view()
    # the default log template names the variant; that difference is not a change
    va.pop("log"), vb.pop("log")
    if a.log != b.log:
        va["log"], vb["log"] = a.log, b.log
    tree = DeepDiff(va, vb, view="tree")
    seen: set[tuple[str, str | None]] = set()
    changes: list[Change] = []
    for levels in tree.values():
        for level in levels:
            path = level.path(output_format="list")
            group = str(path[0])
            keys: list[str | None]
            if group in KEYED and len(path) == 1:
                # a whole section appeared or emptied: report it key by key
                names = _keys(va.get(group))
                keys = [*names, *(k for k in _keys(vb.get(group)) if k not in names)]
            else:
                keys = [str(path[1]) if group in KEYED and len(path) > 1 else None]
            for key in keys:
                if (group, key) in seen:
                    continue
                seen.add((group, key))
                old, new = _get(va, group, key), _get(vb, group, key)
                if old != new or type(old) is not type(new):
                    changes.append(Change(group, key, old, new))
    order = {g: i for i, g in enumerate(GROUPS)}
    changes.sort(key=lambda c: (order.get(c.group, len(order)), _key_pos(c, va, vb)))
    return changes


def _keys(section: Setting) -> list[str]:
    return [str(k) for k in section] if isinstance(section, Mapping) else []


def _get(view: JsonMapping, group: str, key: str | None) -> Setting:
    value = view.get(group, UNSET)
    if key is None:
        return value
    if not isinstance(value, Mapping):
        return UNSET
    return value.get(key, UNSET)


def _key_pos(change: Change, va: JsonMapping, vb: JsonMapping) -> tuple[int, str]:
    # keys keep the order they have in A (then B), which follows the files
    keys = _keys(va.get(change.group, UNSET))
    keys += [k for k in _keys(vb.get(change.group, UNSET)) if k not in keys]
    return (keys.index(change.key) if change.key in keys else 0, change.key or "")


def format_value(value: object) -> str:
    """How a value reads in the table: ``(unset)``, ``true``, lists joined by spaces."""
    if value is UNSET or value is None:
        return "(unset)"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, list):
        return " ".join(format_value(v) for v in value) if value else "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k}={format_value(v)}" for k, v in value.items()) or "{}"
    return str(value)


def _flag_words(flag: str, value: Setting) -> str:
    if value is True:
        return f"--{flag}"
    if value is False:
        return f"{flag}=false"
    return f"--{flag} {format_value(value)}"


def summarise(changes: list[Change]) -> list[str]:
    """Short phrases for ``list``: ``+--num-scheduler-steps 4``, ``-reasoning-parser``, …"""
    out: list[str] = []
    for c in changes:
        if c.group == "args":
            assert c.key is not None
            if c.kind == "added":
                out.append("+" + _flag_words(c.key, c.new))
            elif c.kind == "removed":
                out.append(f"-{c.key}")
            else:
                out.append(f"{c.key} {format_value(c.old)}→{format_value(c.new)}")
        elif c.key is not None:
            prefix = "" if c.group == "env" else f"{c.group}."
            if c.kind == "added":
                out.append(f"+{prefix}{c.key}={format_value(c.new)}")
            elif c.kind == "removed":
                out.append(f"-{prefix}{c.key}")
            else:
                out.append(f"{prefix}{c.key} {format_value(c.old)}→{format_value(c.new)}")
        elif c.group in ("requires",):
            old = set(c.old) if isinstance(c.old, list) else set()
            new = c.new if isinstance(c.new, list) else []
            out.extend(f"+requires {r}" for r in new if r not in old)
        else:
            out.append(f"{c.group} {format_value(c.old)}→{format_value(c.new)}")
    return out
