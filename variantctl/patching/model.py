"""The validated patchset and its operations: frozen models, no I/O.

Built by :mod:`variantctl.config.patchsets` from YAML; used by the pure patch
engine (``patching/``), the transactions (``targets/``) and the CLI. They live here,
below both config and patching, so neither imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Operation:
    """One reversible libcst operation. Unused fields are None/empty for a kind."""

    id: str
    kind: str
    module: str
    #: ``file:line`` of the operation in the YAML, for messages
    where: str
    from_: str | None = None
    to: str | None = None
    #: set-keyword: the called name, e.g. ``ModelConfig`` or ``config.ModelConfig``
    callee: str | None = None
    keyword: str | None = None
    #: set-keyword / replace-expression: qualified names of enclosing scopes (any of them)
    within: tuple[str, ...] = ()
    #: set-assignment: assigned name (``x`` or ``self.x``) and its scope ('' = module)
    target: str | None = None
    scope: str = ""
    #: set-default: qualified function name and parameter; replace-function: the function
    #: (its ``from`` is the pristine function's fingerprint, ``to`` the new source)
    function: str | None = None
    param: str | None = None
    #: number of matches expected
    count: int = 1
    #: custom: a Python file next to the YAML and the transformer class in it
    custom_file: str | None = None
    custom_class: str | None = None
    #: custom: the class itself, imported by the patchset loader (config/customcode.py)
    custom_impl: Any = field(default=None, compare=False, repr=False)
    #: instrument: qualified functions/methods wrapped as profile points, and whether
    #: each clock reading synchronises the device first
    functions: tuple[str, ...] = ()
    sync: bool = False

    @property
    def describe(self) -> str:
        """A one-line human description of what this operation changes."""
        if self.kind == "set-keyword":
            scope = f" in {', '.join(self.within)}" if self.within else ""
            return f"{self.callee}({self.keyword}=…){scope}"
        if self.kind == "set-assignment":
            where = f" in {self.scope}" if self.scope else " at module level"
            return f"{self.target} = …{where}"
        if self.kind == "set-default":
            return f"default of {self.param} in {self.function}"
        if self.kind == "replace-expression":
            return "expression" + (f" in {', '.join(self.within)}" if self.within else "")
        if self.kind == "replace-function":
            return f"function {self.function} (whole)"
        if self.kind == "instrument":
            return f"profile points {', '.join(self.functions)}" + (" (sync)" if self.sync
                                                                    else "")
        return f"custom {self.custom_class} from {self.custom_file}"


@dataclass(frozen=True)
class Patchset:
    """A validated patchset file."""

    name: str
    description: str
    modules: tuple[str, ...]
    operations: tuple[Operation, ...]
    backup_template: str
    #: the YAML path (display form)
    source: str
    #: sha256 of the YAML bytes and every custom transformer file: keys caches and ledgers
    fingerprint: str

    def ops_for(self, module: str) -> tuple[Operation, ...]:
        return tuple(op for op in self.operations if op.module == module)
